"""Curation as a service: one Prefect deployment per schedule of the run config, served by Prefect's
own runner (``prefect.serve``), so each shows up, runs on its cron and can be triggered in the UI.

Every run of a schedule is incremental: each stage skips what its stored results already cover
for this task content and config, and the run records, per task, whether it found it new, changed,
retried or unchanged (the ``increments`` view), then refreshes the run folder's report.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from prefect import flow, get_run_logger
from prefect.runtime import flow_run

from curation.pipeline1 import result_path
from curation.report import write_report
from curation.sources import load_sources
from curation.store import commit_folder, read_records, refresh_catalog
from flows.config import Schedule, SwedeckConfig
from flows.pipeline1 import run_pipeline1
from flows.pipeline2 import run_pipeline2
from flows.strengthen import run_strengthen
from flows.worker import judge_endpoint
from harness.records import IncrementRecord, Pipeline1Result, Task

FLOW_NAME = "curate"


def change(out: Path, task: Task, config_hash: str) -> str:
    """What a run has to do for ``task``, from what Pipeline 1 stored for it (see IncrementRecord)."""
    stored = result_path(out, task.instance_id) / "result.parquet"
    if not stored.exists():
        return "new"
    (result,) = read_records(stored, Pipeline1Result)
    if (result.task_hash, result.config_hash) != (task.task_hash(), config_hash):
        return "changed"
    return "retried" if result.infrastructure else "unchanged"


@flow(name=FLOW_NAME)
def curate(sources: list[str], out: str, config: dict, workers: int = 2, judge: bool | None = None) -> dict:
    """What `swedeck curate` does (Pipeline 1, Pipeline 2, test strengthening), over what is new or
    changed in ``sources``, into the run folder ``out``; records what each task was to this run, and
    rewrites the run's report."""
    cfg = SwedeckConfig.model_validate(config)
    out_dir = Path(out)
    started = datetime.now(UTC)
    stamp = cfg.hash()
    seen = {t.instance_id: t for t in load_sources(sources).tasks}  # Pipeline 1 reports duplicates
    increments = [
        IncrementRecord(config_hash=stamp, task_hash=t.task_hash(), instance_id=t.instance_id,
                        flow_run=str(flow_run.id), started=started.isoformat(), change=change(out_dir, t, stamp))
        for t in seen.values()
    ]  # fmt: skip
    log = get_run_logger()  # what the Prefect UI shows of the run
    counts = {c: sum(i.change == c for i in increments) for c in ("new", "changed", "retried", "unchanged")}
    log.info("%d tasks in %s: %s", len(increments), ", ".join(sources), ", ".join(f"{n} {c}" for c, n in counts.items()))
    p1 = run_pipeline1(sources, out_dir, cfg, workers)
    log.info("pipeline 1: %d kept of %d; rejected %s; %d load errors", p1["kept"], p1["tasks"], p1["rejected"] or "none", p1["load_errors"])
    with judge_endpoint(judge, out_dir) as settings:
        p2 = run_pipeline2(out_dir, cfg, workers, settings)
    log.info("pipeline 2: %s", _fields(p2))
    strengthened = run_strengthen(out_dir, cfg, workers, every=False)
    log.info("strengthening: %s", _fields(strengthened))
    commit_folder(out_dir / "increments" / f"{started:%Y%m%dT%H%M%S}-{flow_run.id}", [("changes", IncrementRecord, increments)])
    refresh_catalog(out_dir)
    report = write_report(out_dir)
    log.info("report: %s", report)
    return {"pipeline1": p1, "pipeline2": p2, "strengthen": strengthened, "increments": counts, "report": str(report)}


def _fields(summary: dict) -> str:
    return "; ".join(f"{k} {v}" for k, v in summary.items() if isinstance(v, (int, float, str, dict)) and k != "catalog")


def _absolute(source: str) -> str:
    """A source that names a path here is made absolute (flow runs need not start in this folder);
    anything else (a hub id) is passed on as written."""
    return str(Path(source).resolve()) if Path(source).exists() else source


def deployments(cfg: SwedeckConfig) -> list:
    """One deployment of the curate flow per schedule, each with the run config (less its schedules)."""
    from prefect.deployments.runner import EntrypointType
    from prefect.schedules import Cron

    config = cfg.model_dump(mode="json", exclude={"schedules"})

    def deployment(name: str, s: Schedule):  # noqa: ANN202 - a RunnerDeployment
        parameters = {"sources": [_absolute(x) for x in s.sources], "out": str(Path(s.out).resolve()), "config": config,
                      "workers": s.workers, "judge": s.judge}  # fmt: skip
        return curate.to_deployment(
            name=name, schedules=[Cron(s.cron, timezone=s.timezone)], parameters=parameters, tags=["swedeck"],
            description=f"swedeck curate {' '.join(s.sources)} -> {s.out}, on '{s.cron}' ({s.timezone})",
            concurrency_limit=1,  # runs of one schedule write one run folder: never two at once
            entrypoint_type=EntrypointType.MODULE_PATH,  # flows.serve:curate, importable wherever swedeck is installed
        )  # fmt: skip

    return [deployment(name, s) for name, s in cfg.schedules.items()]


def serve(cfg: SwedeckConfig) -> None:
    """Register the deployments on the configured Prefect API and run their flow runs until stopped."""
    from prefect import serve as prefect_serve

    prefect_serve(*deployments(cfg))
