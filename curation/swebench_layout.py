"""A predictions run's grades in the SWE-bench harness's layout, one harness working folder per arm.

``OUT/<arm>/`` is what ``python -m swebench.harness.run_evaluation --run_id RUN_ID`` leaves in its
folder, with the arm's version of each task as the dataset:

- ``<model>.<run_id>.json`` per ``model_name_or_path`` (``/`` written ``__``): ``total_instances``,
  ``submitted_instances``, ``completed_instances``, ``resolved_instances``, ``unresolved_instances``,
  ``empty_patch_instances``, ``error_instances`` and the id lists behind them, as SWE-bench counts:
  an empty or null patch is not run and is empty, not unresolved; a patch that does not apply or an
  environment that cannot run is an error; ``not_in_dataset_ids`` (swedeck's) names predictions of
  instances the arm does not hold.
- ``logs/run_evaluation/<run_id>/<model>/<instance_id>/``: ``report.json`` (``resolved``,
  ``patch_is_None``, ``patch_exists``, ``patch_successfully_applied`` and ``tests_status`` with
  FAIL_TO_PASS and PASS_TO_PASS success/failure lists), ``patch.diff`` and ``test_output.txt``.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from harness.names import file_name
from harness.records import DeckRow, Prediction, PredictionGrade

ERRORS = ("env_error", "patch_apply_failed")  # SWE-bench: the evaluation did not complete


def model_name(model: str) -> str:
    return model.replace("/", "__") or "unnamed"


def is_empty(prediction: Prediction) -> bool:
    return not (prediction.model_patch or "").strip()


def model_report(arm_rows: Mapping[str, DeckRow], predictions: Sequence[Prediction], grades: Mapping[str, PredictionGrade]) -> dict:
    """SWE-bench's run report for one model's ``predictions`` on one arm (``grades`` by prediction id)."""
    submitted = [p for p in predictions if p.instance_id in arm_rows]
    empty = [p.instance_id for p in submitted if is_empty(p)]
    ran = [grades[p.prediction_id()] for p in submitted if not is_empty(p) and p.prediction_id() in grades]
    errors = [g.instance_id for g in ran if g.reason in ERRORS]
    completed = [g for g in ran if g.reason not in ERRORS]
    resolved = [g.instance_id for g in completed if g.resolved]
    unresolved = [g.instance_id for g in completed if not g.resolved]
    done = {g.instance_id for g in ran} | set(empty)

    def ids(values: Iterable[str]) -> list[str]:
        return sorted(set(values))

    return {
        "total_instances": len(arm_rows), "submitted_instances": len(ids(p.instance_id for p in submitted)),
        "completed_instances": len(ids(g.instance_id for g in completed)), "resolved_instances": len(ids(resolved)),
        "unresolved_instances": len(ids(unresolved)), "empty_patch_instances": len(ids(empty)), "error_instances": len(ids(errors)),
        "completed_ids": ids(g.instance_id for g in completed), "incomplete_ids": ids(set(arm_rows) - done),
        "empty_patch_ids": ids(empty), "submitted_ids": ids(p.instance_id for p in submitted), "resolved_ids": ids(resolved),
        "unresolved_ids": ids(unresolved), "error_ids": ids(errors),
        "not_in_dataset_ids": ids(p.instance_id for p in predictions if p.instance_id not in arm_rows), "schema_version": 2,
    }  # fmt: skip


def instance_report(row: DeckRow, prediction: Prediction, grade: PredictionGrade | None) -> dict:
    """SWE-bench's per-instance ``report.json``: which FAIL_TO_PASS and PASS_TO_PASS tests ended as gold's
    pattern wants (a test that differs from gold's status is a failure)."""
    differing = set(grade.differing) if grade else set()
    ran = grade is not None and grade.reason not in ERRORS

    def split(tests: list[str]) -> dict[str, list[str]]:
        if not ran:
            return {"success": [], "failure": []}
        return {"success": [t for t in tests if t not in differing], "failure": [t for t in tests if t in differing]}

    return {row.instance_id: {
        "patch_is_None": prediction.model_patch is None, "patch_exists": not is_empty(prediction),
        "patch_successfully_applied": ran, "resolved": bool(grade and grade.resolved),
        "tests_status": {"FAIL_TO_PASS": split(row.FAIL_TO_PASS), "PASS_TO_PASS": split(row.PASS_TO_PASS),
                         "FAIL_TO_FAIL": {"success": [], "failure": []}, "PASS_TO_FAIL": {"success": [], "failure": []}},
    }}  # fmt: skip


def write_arm(folder: Path, run_id: str, arm_rows: Mapping[str, DeckRow], predictions: Sequence[Prediction],
              grades: Mapping[str, PredictionGrade]) -> list[Path]:  # fmt: skip
    """One arm's harness folder (module docstring); returns the model reports written."""
    reports = []
    shutil.rmtree(folder / "logs" / "run_evaluation" / run_id, ignore_errors=True)  # a rerun's folders replace the last one's
    models = sorted({p.model_name_or_path for p in predictions})
    for model in models:
        mine = [p for p in predictions if p.model_name_or_path == model]
        path = folder / f"{model_name(model)}.{run_id}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(model_report(arm_rows, mine, grades), indent=4) + "\n")
        reports.append(path)
        for prediction in mine:
            if prediction.instance_id in arm_rows:
                _instance_folder(folder / "logs" / "run_evaluation" / run_id / model_name(model), arm_rows[prediction.instance_id],
                                 prediction, grades.get(prediction.prediction_id()))  # fmt: skip
    return reports


def _instance_folder(root: Path, row: DeckRow, prediction: Prediction, grade: PredictionGrade | None) -> None:
    where = root / file_name(prediction.instance_id)
    if where.exists():  # a second prediction of this model for this instance (samples): its own folder
        where = root / f"{file_name(prediction.instance_id)}.{prediction.prediction_id()[:12]}"
    where.mkdir(parents=True, exist_ok=True)
    (where / "report.json").write_text(json.dumps(instance_report(row, prediction, grade), indent=4) + "\n")
    (where / "patch.diff").write_text(prediction.model_patch or "")
    output = where / "test_output.txt"
    if grade is not None and grade.log_path and Path(grade.log_path).is_file():
        shutil.copyfile(grade.log_path, output)
    else:
        output.write_text(f"{grade.reason}: {grade.detail}\n" if grade else "empty patch: not run\n")
