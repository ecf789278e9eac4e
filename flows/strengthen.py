"""Test strengthening as a Prefect flow over a run directory's Pipeline 2 results: every task the judge
called too loose (with ``every``, every kept task) gets its hidden tests repaired
by ``judge.strengthen``; each task's record is committed atomically under ``OUT/strengthen/<id>/``.
With judge settings the judge proposes tests and reviews the model-free ones (``strengthen_session``);
without, the model-free tests go in flagged ``unreviewed``."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

from prefect import flow, task
from prefect.cache_policies import NO_CACHE

from curation.pipeline1 import kept_tasks
from curation.store import CATALOG, read_records, refresh_catalog
from flows.config import SwedeckConfig
from flows.runners import task_runner
from harness.config import Settings
from harness.sandboxes.envs import prepare_tree
from harness.records import Pipeline1Result, ProbeResult, Strengthening, Task
from harness.sandboxes.backends import get_backend
from judge.config import JudgeSettings
from judge.loop import strengthen_session
from judge.pipeline2 import result_path as p2_path
from judge.pipeline2 import verdicts
from judge.strengthen import Workbench, eligible, finished, process_task, result_path


def stored_probes(out: Path, instance_id: str) -> list[ProbeResult]:
    path = p2_path(out, instance_id) / "probes.parquet"
    return read_records(path, ProbeResult) if path.exists() else []  # type: ignore[return-value]


@task(name="strengthen-task", cache_policy=NO_CACHE)
def run_one(task_json: str, p1_json: str, out: str, config_json: str, settings_json: str | None = None) -> dict[str, str | int]:
    work = Task.model_validate_json(task_json)
    p1 = Pipeline1Result.model_validate_json(p1_json)
    config = SwedeckConfig.model_validate_json(config_json)
    out_dir = Path(out)
    if not finished(out_dir, work, config.hash()):
        backend = get_backend(config.sandbox)
        tree = prepare_tree(work, getattr(backend, "settings", None) or Settings.from_env())
        judge = None
        if settings_json:
            settings = JudgeSettings.model_validate_json(settings_json)

            def judge(bench: Workbench) -> str:
                return strengthen_session(bench, settings, config.pipeline2.judge, out_dir / "transcripts")

        process_task(work, p1, stored_probes(out_dir, work.instance_id), backend, config.hash(), tree, out_dir, judge)
    record = read_records(result_path(out_dir, work.instance_id) / "strengthening.parquet", Strengthening)[0]
    assert isinstance(record, Strengthening)
    kept = [t for t in record.tests if not t.rejected_at]
    return {
        "instance_id": work.instance_id, "status": record.status, "reason": record.reason,
        "survivors": len(record.survivors), "killed": len(record.killed), "tests_tried": len(record.tests),
        "tests_kept": len(kept), "executions": record.executions, "seconds": record.duration_s,
    }  # fmt: skip


@flow(name="strengthen")
def strengthen_flow(out: str, config: dict, every: bool = False, settings: dict | None = None) -> dict:
    """Strengthen the eligible tasks of the run directory ``out`` (see the module docstring)."""
    started = time.monotonic()
    cfg = SwedeckConfig.model_validate(config)
    settings_json = JudgeSettings.model_validate(settings).model_dump_json() if settings else None
    out_dir = Path(out)
    judged = verdicts(out_dir)
    todo = [(t, r) for t, r in kept_tasks(out_dir) if eligible(judged.get(t.instance_id), every)]
    config_json = cfg.model_dump_json()
    futures = [run_one.submit(t.model_dump_json(), r.model_dump_json(), out, config_json, settings_json) for t, r in todo]
    outcomes = []
    for (t, _), future in zip(todo, futures):
        outcome = future.result(raise_on_failure=False)
        if isinstance(outcome, BaseException):  # nothing committed; the next run retries it
            outcome = {"instance_id": t.instance_id, "status": "failed", "reason": str(outcome)}
        outcomes.append(outcome)
    refresh_catalog(out_dir)
    return {
        "tasks": len(todo),
        "statuses": dict(sorted(Counter(str(o["status"]) for o in outcomes).items())),
        "per_task": {str(o["instance_id"]): {k: v for k, v in o.items() if k != "instance_id"} for o in outcomes},
        "seconds": round(time.monotonic() - started, 1),
        "catalog": str(out_dir / CATALOG),
    }


def run_strengthen(out: Path, cfg: SwedeckConfig, workers: int, every: bool, settings: JudgeSettings | None = None) -> dict:
    # as for Pipeline 2, the API key never travels in flow parameters
    payload = settings.model_dump(mode="json") if settings else None
    with task_runner(cfg.runner, cfg.sandbox, workers) as runner:
        return strengthen_flow.with_options(task_runner=runner)(str(out), cfg.model_dump(mode="json"), every, payload)
