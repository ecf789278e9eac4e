"""Pipeline 2 as a Prefect flow over Pipeline 1's kept tasks in a run directory."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from prefect.task_runners import ThreadPoolTaskRunner

from curation.pipeline1 import kept_tasks
from curation.store import build_catalog, read_records
from flows.config import SwedeckConfig
from flows.pipeline1 import CATALOG, catalog_views
from harness.records import Pipeline1Result, ProbeResult, Task, VerdictRecord
from harness.sandbox import get_backend
from judge.config import JudgeSettings
from judge.pipeline2 import finished, process_task, result_path


@task(name="pipeline2-task", cache_policy=NO_CACHE)
def run_one(task_json: str, p1_json: str, out: str, config_json: str, settings_json: str | None) -> dict[str, str]:
    work = Task.model_validate_json(task_json)
    p1 = Pipeline1Result.model_validate_json(p1_json)
    config = SwedeckConfig.model_validate_json(config_json)
    settings = JudgeSettings.model_validate_json(settings_json) if settings_json else None
    out_dir = Path(out)
    if not finished(out_dir, work, config.hash(), judged=settings is not None):
        process_task(work, p1, get_backend(config.sandbox), config.pipeline2, config.hash(), out_dir, settings)
    folder = result_path(out_dir, work.instance_id)
    verdicts = read_records(folder / "verdict.parquet", VerdictRecord)
    probes = read_records(folder / "probes.parquet", ProbeResult)
    return {
        "instance_id": work.instance_id,
        "verdict": verdicts[0].verdict if verdicts else "not judged",
        "surviving_wrong": str(sum(p.kind == "plausible_wrong" and p.reward == 1 for p in probes)),
        "rejected_right": str(sum(p.kind == "correct_alternative" and p.reward == 0 for p in probes)),
    }


@flow(name="pipeline2")
def pipeline2(out: str, config: dict, settings: dict | None) -> dict:
    """Probe (and judge, when ``settings`` names an endpoint) every task Pipeline 1 kept in ``out``."""
    started = time.monotonic()
    cfg = SwedeckConfig.model_validate(config)
    out_dir = Path(out)
    settings_json = JudgeSettings.model_validate(settings).model_dump_json() if settings else None
    kept = kept_tasks(out_dir)
    config_json = cfg.model_dump_json()
    futures = [run_one.submit(t.model_dump_json(), r.model_dump_json(), out, config_json, settings_json) for t, r in kept]
    outcomes = []
    for (t, _), future in zip(kept, futures):
        outcome = future.result(raise_on_failure=False)
        if isinstance(outcome, BaseException):  # recorded as not judged; the next run retries it
            outcome = {"instance_id": t.instance_id, "verdict": f"failed: {outcome}", "surviving_wrong": "0", "rejected_right": "0"}
        outcomes.append(outcome)
    build_catalog(out_dir / CATALOG, catalog_views(out_dir))
    return {
        "tasks": len(kept),
        "verdicts": dict(sorted(Counter(o["verdict"] for o in outcomes).items())),
        "too_loose_evidence": sorted(o["instance_id"] for o in outcomes if o["surviving_wrong"] != "0"),
        "over_restrictive_evidence": sorted(o["instance_id"] for o in outcomes if o["rejected_right"] != "0"),
        "seconds": round(time.monotonic() - started, 1),
        "catalog": str(out_dir / CATALOG),
    }


def run_pipeline2(out: Path, cfg: SwedeckConfig, workers: int, settings: JudgeSettings | None) -> dict:
    runner = ThreadPoolTaskRunner(max_workers=workers)
    # the API key never travels in flow parameters (it would land in Prefect's database): settings
    # serialise without it and each worker reads SWEDECK_JUDGE_API_KEY from its environment
    payload = settings.model_dump(mode="json") if settings else None
    return pipeline2.with_options(task_runner=runner)(str(out), cfg.model_dump(mode="json"), payload)
