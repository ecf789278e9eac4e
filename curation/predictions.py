"""Batch grading of an agent run, as SWE-bench's harness evaluates one: a predictions file graded against
the arms of a deck by the one grader.

A predictions file is JSONL or a JSON list (or SWE-bench's ``{instance_id: prediction}`` object) of
``{instance_id, model_patch, model_name_or_path}`` rows (``harness.records.Prediction``). Unlike
SWE-bench, several predictions of one instance (samples, models) are graded apart: a prediction is
known by the hash of its three fields. Each arm grades it with that arm's version of the task, as
``swedeck grade ID --source DECK --arm ARM`` does: the raw arm by the corpus's tests, the strengthened
arm by the strengthened ones.

Each grade is committed on its own, atomically (``OUT/graded/<arm>/<prediction_id>/grade.parquet``,
``curation.store.commit_folder``), so a killed run loses only the grades in flight and a rerun skips
every prediction already graded with the same task and sandbox settings (environment failures are
retried). ``OUT/results.parquet`` and ``summary.json`` hold the grades of the file's predictions on
the requested arms (an earlier run's grades of another arm are not this run's); ``OUT/<arm>/`` is
the same in the SWE-bench harness's layout (``curation.swebench_layout``).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from pydantic import ValidationError

from curation.deck_files import DECK_FILE, arm_tasks, arms
from curation.store import commit_folder, read_records, write_records
from curation.swebench_layout import is_empty
from harness.config import UserError
from harness.grading.grader import gold_pattern, grade
from harness.names import file_name
from harness.records import DeckRow, Prediction, PredictionGrade, Task
from harness.sandboxes.sandbox import Backend, EnvError

GRADED = "graded"
RESULTS = "results.parquet"
SUMMARY = "summary.json"


class PredictionsError(UserError):
    """A predictions file swedeck cannot read: the message says where."""


def read_predictions(path: Path) -> list[Prediction]:
    """The rows of a .jsonl or .json predictions file, in file order (SWE-bench's rule for the suffix)."""
    if not path.is_file():
        raise PredictionsError(f"predictions file {path}: no such file")
    text = path.read_text()
    try:
        if path.suffix == ".jsonl":
            rows = [(f"line {n}", json.loads(line)) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
        elif path.suffix == ".json":
            found = json.loads(text)
            found = list(found.values()) if isinstance(found, dict) else found
            if not isinstance(found, list):
                raise PredictionsError(f"predictions file {path}: a JSON list of predictions (or an object of them by instance id), not {type(found).__name__}")
            rows = [(f"item {n}", row) for n, row in enumerate(found)]
        else:
            raise PredictionsError(f"predictions file {path}: name it .jsonl (one prediction a line) or .json (a list of them)")
    except json.JSONDecodeError as err:
        raise PredictionsError(f"predictions file {path}: not JSON at line {err.lineno}, column {err.colno}: {err.msg}") from None
    predictions = []
    for where, row in rows:
        try:
            predictions.append(Prediction.model_validate(row))
        except ValidationError as err:
            first = err.errors()[0]
            field = ".".join(map(str, first["loc"])) or "row"
            raise PredictionsError(f"predictions file {path}, {where}: {field}: {first['msg']}") from None
    return predictions


def graded_dir(out: Path, arm: str, prediction_id: str) -> Path:
    return out / GRADED / file_name(arm) / prediction_id


def _stored(out: Path, arm: str, prediction_id: str) -> PredictionGrade | None:
    path = graded_dir(out, arm, prediction_id) / "grade.parquet"
    return read_records(path, PredictionGrade)[0] if path.exists() else None


def reusable(record: PredictionGrade | None, task: Task, config_hash: str) -> bool:
    """A stored grade stands when its task and sandbox settings are today's and its environment ran."""
    return record is not None and record.task_hash == task.task_hash() and record.config_hash == config_hash and record.reason != "env_error"


class _GoldPatterns:
    """Gold's pattern once per task, however many workers grade its predictions at once."""

    def __init__(self, backend: Backend) -> None:
        self._backend = backend
        self._locks: dict[tuple[str, str], threading.Lock] = {}
        self._guard = threading.Lock()

    def __call__(self, arm: str, task: Task) -> dict:
        with self._guard:
            lock = self._locks.setdefault((arm, task.instance_id), threading.Lock())
        with lock:  # the grader caches the pattern on disk: only the first caller runs gold
            return gold_pattern(task, self._backend)


def grade_one(prediction: Prediction, arm: str, row: DeckRow, task: Task, backend: Backend, config_hash: str, out: Path,
              expected: Callable[[str, Task], dict]) -> PredictionGrade:  # fmt: skip
    """Grade one prediction on one arm's task and commit the grade; an environment that cannot run
    (or a gold run with no pattern) is recorded as env_error, never raised."""
    start = time.monotonic()
    base = {"config_hash": config_hash, "task_hash": task.task_hash(), "instance_id": prediction.instance_id,
            "prediction_id": prediction.prediction_id(), "model_name_or_path": prediction.model_name_or_path,
            "deck_id": row.deck_id, "arm": arm, "tests": row.tests}  # fmt: skip
    try:
        result = grade(task, prediction.model_patch or "", backend, expected=expected(arm, task), log_dir=out / "logs" / file_name(arm))
        found = {"resolved": result.reward == 1, "reward": result.reward, "reason": result.reason, "detail": result.detail,
                 "differing": sorted(result.differing), "backend": result.backend, "log_path": result.log_path}  # fmt: skip
    except EnvError as err:
        found = {"resolved": False, "reward": 0.0, "reason": "env_error", "detail": str(err), "differing": [],
                 "backend": backend.name, "log_path": ""}  # fmt: skip
    record = PredictionGrade(**base, **found, duration_s=round(time.monotonic() - start, 3))
    commit_folder(graded_dir(out, arm, record.prediction_id), [("grade", PredictionGrade, [record])])
    return record


def arm_versions(deck: Path, arm: str) -> dict[str, tuple[DeckRow, Task]]:
    """Each task of ``arm`` by instance id: its deck row and the task as the arm grades it."""
    if not (deck / DECK_FILE).exists():
        raise UserError(f"{deck}: not a deck folder (no {DECK_FILE}); build one with `swedeck deck RUN --out DIR`")
    if arm not in arms(deck):
        raise UserError(f"deck {deck} has no arm {arm!r}; its arms: {', '.join(arms(deck))}")
    rows = {r.instance_id: r for r in read_records(deck / DECK_FILE, DeckRow) if r.arm == arm}
    return {t.instance_id: (rows[t.instance_id], t) for t in arm_tasks(deck, arm)}


def grade_predictions(
    deck: Path,
    predictions: Sequence[Prediction],
    arm_names: Sequence[str],
    backend: Backend,
    config_hash: str,
    out: Path,
    *,
    workers: int = 1,
    on_done: Callable[[PredictionGrade, bool], None] = lambda record, reused: None,
) -> list[PredictionGrade]:
    """Every prediction whose instance is in an arm, graded on that arm (``workers`` at a time), but an
    empty or null patch (SWE-bench runs none: it is an empty patch); grades already in ``out`` that
    still stand are reused. ``on_done(record, reused)`` follows each one."""
    versions = {arm: arm_versions(deck, arm) for arm in arm_names}
    unique = list({p.prediction_id(): p for p in predictions}.values())
    jobs = [(p, arm, *versions[arm][p.instance_id]) for arm in arm_names for p in unique if p.instance_id in versions[arm] and not is_empty(p)]
    records, todo = [], []
    for prediction, arm, row, task in jobs:
        stored = _stored(out, arm, prediction.prediction_id())
        if reusable(stored, task, config_hash):
            records.append(stored)
            on_done(stored, True)
        else:
            todo.append((prediction, arm, row, task))
    expected = _GoldPatterns(backend)
    pool = ThreadPoolExecutor(max_workers=max(1, workers))
    try:
        futures = [pool.submit(grade_one, *job, backend, config_hash, out, expected) for job in todo]
        for future in as_completed(futures):
            records.append(future.result())
            on_done(records[-1], False)
    finally:  # Ctrl-C: what is committed stays, what is queued is dropped, a rerun picks up the rest
        pool.shutdown(wait=True, cancel_futures=True)
    return records


def collect(out: Path, predictions: Iterable[Prediction], arm_names: Sequence[str]) -> list[PredictionGrade]:
    """Every grade in ``out`` of these predictions on these arms (this run's or an earlier one's)."""
    ids = {p.prediction_id() for p in predictions}
    return [r for arm in arm_names for pid in sorted(ids) if (r := _stored(out, file_name(arm), pid)) is not None]


def summary(records: Sequence[PredictionGrade], predictions: Sequence[Prediction], deck: Path, arm_names: Sequence[str]) -> dict:
    """Per requested arm (each one, graded or not): predictions graded, resolved count and rate, grade
    reasons, empty patches, predictions of instances the arm does not hold (and their ids); per pair of
    arms: how many predictions one resolves and the other does not (raw against strengthened: the
    "resolved" patches only the weak tests accept)."""
    unique = {p.prediction_id(): p for p in predictions}
    by_arm: dict[str, dict[str, PredictionGrade]] = {arm: {} for arm in arm_names}
    for r in records:
        by_arm[r.arm][r.prediction_id] = r
    deck_rows = read_records(deck / DECK_FILE, DeckRow)
    per_arm = {}
    for arm, graded in sorted(by_arm.items()):
        held = {r.instance_id for r in deck_rows if r.arm == arm}
        resolved = sum(r.resolved for r in graded.values())
        counted = [r for r in graded.values() if r.reason != "env_error"]
        outside = sorted({p.instance_id for p in unique.values() if p.instance_id not in held})
        per_arm[arm] = {
            "predictions": len(graded), "resolved": resolved,
            "rate": round(resolved / len(counted), 4) if counted else None,
            "reasons": dict(Counter(r.reason for r in graded.values()).most_common()),
            "env_errors": len(graded) - len(counted),
            "empty_patches": sum(is_empty(p) and p.instance_id in held for p in unique.values()),
            "not_in_arm": sum(p.instance_id not in held for p in unique.values()), "not_in_arm_ids": outside,
        }  # fmt: skip
    pairs = {}
    names = sorted(by_arm)
    for a in names:
        for b in names:
            both = [pid for pid in by_arm[a] if pid in by_arm[b] and "env_error" not in (by_arm[a][pid].reason, by_arm[b][pid].reason)]
            only = sorted(pid for pid in both if by_arm[a][pid].resolved and not by_arm[b][pid].resolved)
            if a != b and both:
                pairs[f"{a}_not_{b}"] = {"graded_on_both": len(both), "resolved": len(only), "prediction_ids": only}
    return {"predictions": len(unique), "arms": per_arm, "resolved_only_on": pairs}


def write_results(out: Path, records: Sequence[PredictionGrade], found: dict) -> tuple[Path, Path]:
    """``results.parquet`` (every grade, sorted by arm and instance) and ``summary.json``, each replaced whole."""
    ordered = sorted(records, key=lambda r: (r.arm, r.instance_id, r.model_name_or_path, r.prediction_id))
    paths = out / RESULTS, out / SUMMARY
    tmp = [p.with_name(f".{p.name}.tmp") for p in paths]
    out.mkdir(parents=True, exist_ok=True)
    write_records(tmp[0], PredictionGrade, ordered)
    tmp[1].write_text(json.dumps(found, indent=2) + "\n")
    for t, p in zip(tmp, paths):
        os.replace(t, p)
    return paths
