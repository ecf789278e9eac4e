"""Pipeline 1 as a Prefect flow: one Prefect task per corpus task, bounded concurrency, retries only for
infrastructure failures, and results persisted as Parquet so a rerun resumes where the last one stopped.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from prefect import flow, task
from prefect.cache_policies import NO_CACHE

from curation import dedup
from curation.pipeline1 import finished, internal_error, process_task, result_path
from curation.sources import load_sources
from curation.store import CATALOG, commit_folder, refresh_catalog, sweep_partials
from flows.config import SwedeckConfig
from flows.runners import task_runner
from harness.records import LoadError, Pipeline1Result, Task
from harness.sandboxes.backends import get_backend

class InfrastructureFailure(RuntimeError):
    """Raised after recording a sandbox failure, so that Prefect retries the task."""


def _infra_only(task, task_run, state) -> bool:  # noqa: ANN001 - Prefect's retry_condition_fn signature
    try:
        state.result()
    except InfrastructureFailure:
        return True
    except Exception:
        return False
    return False


@task(name="pipeline1-task", retries=2, retry_delay_seconds=1, retry_condition_fn=_infra_only, cache_policy=NO_CACHE)
def run_one(task_json: str, out: str, config_json: str) -> dict[str, str]:
    work = Task.model_validate_json(task_json)
    config = SwedeckConfig.model_validate_json(config_json)
    out_dir = Path(out)
    result = finished(out_dir, work, config.hash())
    if result is not None:
        return _outcome(result, reused=True)
    try:
        result = process_task(work, get_backend(config.sandbox), config.pipeline1, config.hash(), out_dir)
    except Exception as err:  # our bug on one task must not stop the others
        result = internal_error(work, config.hash(), out_dir, err)
    if result.reason == "sandbox_error":
        raise InfrastructureFailure(f"{work.instance_id}: {result.detail}")
    return _outcome(result)


def _outcome(result: Pipeline1Result, reused: bool = False) -> dict[str, str]:
    return {"instance_id": result.instance_id, "decision": result.decision, "reason": result.reason,
            "flaky": str(len(result.flaky)), "reused": str(int(reused))}  # fmt: skip


@dataclass
class Prepared:
    """What every pass over the sources does before any task runs: the tasks (each id once), the load
    errors and the clusters of the same fix committed."""

    tasks: list[Task]
    load_errors: int
    dedup: dict


def prepare(sources: list[str], out_dir: Path, cfg: SwedeckConfig) -> Prepared:
    sweep_partials(out_dir / "p1")
    loaded = load_sources(sources, cfg.repo_cache(), role="train")
    seen: set[str] = set()
    tasks, errors = [], list(loaded.errors)
    for t in loaded.tasks:
        if t.instance_id in seen:
            errors.append(LoadError(source=t.source, location=t.instance_id, field="instance_id", message="duplicate instance_id"))
        else:
            seen.add(t.instance_id)
            tasks.append(t)
    fingerprints, eval_errors = dedup.with_evals(loaded.fingerprints, cfg.dedup, Path(cfg.sources.repo_cache) if cfg.sources.repo_cache else None)
    clustering, contamination = dedup.write(out_dir, fingerprints, cfg.dedup)
    commit_folder(out_dir / "load_errors", [("errors", LoadError, errors + eval_errors)])
    return Prepared(tasks, len(errors) + len(eval_errors), dedup.summary(clustering, contamination))


def summary(prepared: Prepared, outcomes: list[dict[str, str]], out_dir: Path, started: float) -> dict:
    refresh_catalog(out_dir)  # compact what this stage committed, then the catalog over it
    reasons = Counter(o["reason"] or "kept" for o in outcomes)
    return {
        "tasks": len(prepared.tasks),
        "kept": reasons.pop("kept", 0),
        "rejected": dict(sorted(reasons.items())),
        "load_errors": prepared.load_errors,
        "dedup": prepared.dedup,
        "flaky_tests": sum(int(o["flaky"]) for o in outcomes),
        "flaky_tasks": sum(int(o["flaky"]) > 0 for o in outcomes),
        "reused": sum(int(o.get("reused", "0")) for o in outcomes),  # results a resumed run found committed
        "seconds": round(time.monotonic() - started, 1),
        "catalog": str(out_dir / CATALOG),
    }


@flow(name="pipeline1")
def pipeline1(sources: list[str], out: str, config: dict) -> dict:
    """Run Pipeline 1 over every task in ``sources`` into the run directory ``out``."""
    started = time.monotonic()
    cfg = SwedeckConfig.model_validate(config)
    out_dir = Path(out)
    prepared = prepare(sources, out_dir, cfg)
    config_json = cfg.model_dump_json()
    futures = [run_one.submit(t.model_dump_json(), str(out_dir), config_json) for t in prepared.tasks]
    outcomes = []
    for t, future in zip(prepared.tasks, futures):
        outcome = future.result(raise_on_failure=False)
        if isinstance(outcome, BaseException):  # retries exhausted; the record on disk says why
            outcome = {"instance_id": t.instance_id, "decision": "reject", "reason": "sandbox_error", "flaky": "0", "reused": "0"}
        outcomes.append(outcome)
    return summary(prepared, outcomes, out_dir, started)


def run_pipeline1(sources: list[str], out: Path, cfg: SwedeckConfig, workers: int) -> dict:
    """A rerun over a run folder whose every task already has its result for this content and config
    answers from those results without starting Prefect (its temporary API takes up to a minute to
    start on a busy machine), and says how many it reused."""
    if done_count(out):
        started = time.monotonic()
        prepared = prepare([str(s) for s in sources], out, cfg)
        stored = [finished(out, t, cfg.hash()) for t in prepared.tasks]
        if all(stored):
            return summary(prepared, [_outcome(r, reused=True) for r in stored if r], out, started)
    with task_runner(cfg.runner, cfg.sandbox, workers) as runner:
        return pipeline1.with_options(task_runner=runner)([str(s) for s in sources], str(out), cfg.model_dump(mode="json"))


def done_count(out: Path) -> int:
    return sum(1 for _ in (out / "p1").glob("*/result.parquet")) if (out / "p1").exists() else 0


__all__ = ["pipeline1", "run_pipeline1", "done_count", "result_path"]
