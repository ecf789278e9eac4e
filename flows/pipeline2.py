"""Pipeline 2 as a Prefect flow over Pipeline 1's kept tasks in a run directory."""

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
from harness.records import Pipeline1Result, ProbeCounts, Task, VerdictRecord
from harness.sandboxes.backends import get_backend
from judge.config import JudgeSettings
from judge.pipeline2 import finished, process_task, result_path
from probes.pool import release_parked


@task(name="pipeline2-task", cache_policy=NO_CACHE)
def run_one(
    task_json: str, p1_json: str, out: str, config_json: str, settings_json: str | None, run_deadline: float | None,
    probe_workers: int = 1,
) -> dict[str, str]:
    work = Task.model_validate_json(task_json)
    p1 = Pipeline1Result.model_validate_json(p1_json)
    config = SwedeckConfig.model_validate_json(config_json)
    settings = JudgeSettings.model_validate_json(settings_json) if settings_json else None
    out_dir = Path(out)
    if not finished(out_dir, work, config.hash(), judged=settings is not None):
        process_task(work, p1, get_backend(config.sandbox), config.pipeline2, config.hash(), out_dir, settings, run_deadline,
                     probe_workers=probe_workers)  # fmt: skip
    folder = result_path(out_dir, work.instance_id)
    verdicts = read_records(folder / "verdict.parquet", VerdictRecord)
    counts = read_records(folder / "counts.parquet", ProbeCounts)
    fields = ("generated", "survived", "confirmed", "likely_equivalent", "killed", "alternatives_failed")
    return {
        "instance_id": work.instance_id,
        "verdict": verdicts[0].verdict if verdicts else "not judged",
        **{name: str(getattr(counts[0], name)) for name in fields},
    }


@flow(name="pipeline2")
def pipeline2(out: str, config: dict, settings: dict | None, workers: int = 1) -> dict:
    """Probe (and judge, when ``settings`` names an endpoint) every task Pipeline 1 kept in ``out``. When
    fewer tasks than ``workers`` are kept, each task grades its probes over its share of the workers
    (probe sessions of one task), so a run of a few big tasks fills the machine."""
    started = time.monotonic()
    cfg = SwedeckConfig.model_validate(config)
    out_dir = Path(out)
    settings_json = JudgeSettings.model_validate(settings).model_dump_json() if settings else None
    kept = kept_tasks(out_dir)
    config_json = cfg.model_dump_json()
    budget = cfg.pipeline2.judge.run_budget_s
    run_deadline = time.time() + budget if budget is not None else None  # wall clock: workers may be other machines
    probe_workers = max(1, workers // max(len(kept), 1))
    futures = [
        run_one.submit(t.model_dump_json(), r.model_dump_json(), out, config_json, settings_json, run_deadline, probe_workers)
        for t, r in kept
    ]
    outcomes = []
    for (t, _), future in zip(kept, futures):
        outcome = future.result(raise_on_failure=False)
        if isinstance(outcome, BaseException):  # recorded as not judged; the next run retries it
            outcome = {"instance_id": t.instance_id, "verdict": f"failed: {outcome}"}
        outcomes.append(outcome)
    refresh_catalog(out_dir)  # compact what this stage committed, then the catalog over it
    return {
        "tasks": len(kept),
        "verdicts": dict(sorted(Counter(o["verdict"] for o in outcomes).items())),
        # a surviving wrong probe is evidence only when an input tells it from gold (confirmed)
        "too_loose_evidence": sorted(o["instance_id"] for o in outcomes if o.get("confirmed", "0") != "0"),
        "likely_equivalent_only": sorted(
            o["instance_id"] for o in outcomes if o.get("confirmed", "0") == "0" and o.get("likely_equivalent", "0") != "0"
        ),
        "over_restrictive_evidence": sorted(o["instance_id"] for o in outcomes if o.get("alternatives_failed", "0") != "0"),
        "probe_counts": {
            o["instance_id"]: {k: int(o[k]) for k in ("generated", "survived", "confirmed", "likely_equivalent", "killed")}
            for o in outcomes if "generated" in o
        },
        "seconds": round(time.monotonic() - started, 1),
        "catalog": str(out_dir / CATALOG),
    }


def run_pipeline2(out: Path, cfg: SwedeckConfig, workers: int, settings: JudgeSettings | None) -> dict:
    # the API key never travels in flow parameters (it would land in Prefect's database): settings
    # serialise without it and each worker reads SWEDECK_JUDGE_API_KEY from its environment
    payload = settings.model_dump(mode="json") if settings else None
    with task_runner(cfg.runner, cfg.sandbox, workers) as runner:
        try:
            return pipeline2.with_options(task_runner=runner)(str(out), cfg.model_dump(mode="json"), payload, workers)
        finally:
            release_parked()  # the probe sessions kept for later tasks: the stage is over
