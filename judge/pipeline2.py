"""Pipeline 2 for one task: model-free probes always, then the privileged judge when an endpoint is
configured. Results land atomically under ``OUT/p2/<instance_id>/`` like Pipeline 1's."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from curation.store import commit_folder, read_records
from harness.names import under
from harness.records import Pipeline1Result, ProbeCounts, ProbeResult, Task, VerdictRecord
from harness.sandbox import Backend
from judge.config import JudgeConfig, JudgeSettings
from judge.loop import judge_task
from probes.runner import probe_task


class Pipeline2Config(BaseModel):
    model_config = ConfigDict(extra="forbid")

    probes: bool = True  # model-free probes
    selection: bool = True  # score probes on the binding tests first; the full suite stays the final word
    differential: bool = True  # a surviving wrong probe is evidence only with an input that tells it from gold
    judge: JudgeConfig = JudgeConfig()


def result_path(out: Path, instance_id: str) -> Path:
    return under(out / "p2", instance_id)


def finished(out: Path, task: Task, config_hash: str, judged: bool) -> bool:
    """Done with this content and config; a run that was not judged is redone once a judge exists,
    and an unjudgeable verdict (endpoint down, budget spent) is always retried."""
    folder = result_path(out, task.instance_id)
    if not (folder / "verdict.parquet").exists() or not (folder / "counts.parquet").exists():
        return False
    verdicts = read_records(folder / "verdict.parquet", VerdictRecord)
    probes = read_records(folder / "probes.parquet", ProbeResult)
    stamps = {(r.config_hash, r.task_hash) for r in [*verdicts, *probes]}
    if stamps and stamps != {(config_hash, task.task_hash())}:
        return False
    if judged:
        return bool(verdicts) and verdicts[0].verdict != "unjudgeable"
    return True


def earlier_probes(out: Path, task: Task, config_hash: str) -> list[ProbeResult] | None:
    """The model-free probes an earlier attempt committed for this content and config, when that
    attempt was not judged (endpoint down, budget spent): a retry grades them again for nothing.
    Each is stored with its latest grade (a judge may have confirmed it by a full grade)."""
    folder = result_path(out, task.instance_id)
    if not (folder / "counts.parquet").exists():
        return None
    (counts,) = read_records(folder / "counts.parquet", ProbeCounts)
    if (counts.config_hash, counts.task_hash) != (config_hash, task.task_hash()):
        return None
    return [p for p in read_records(folder / "probes.parquet", ProbeResult) if p.origin == "model_free"]


def verdicts(out: Path) -> dict[str, VerdictRecord]:
    """Every stored verdict of the run directory ``out``, by instance id."""
    found = {}
    for path in sorted((out / "p2").glob("*/verdict.parquet")):
        for record in read_records(path, VerdictRecord):
            found[record.instance_id] = record
    return found


def process_task(
    task: Task,
    p1: Pipeline1Result,
    backend: Backend,
    config: Pipeline2Config,
    config_hash: str,
    out: Path,
    settings: JudgeSettings | None,
    run_deadline: float | None = None,
) -> tuple[list[ProbeResult], VerdictRecord | None]:
    stamp = {"config_hash": config_hash, "task_hash": task.task_hash(), "instance_id": task.instance_id}
    log_dir = under(out / "logs", task.instance_id)
    probes = earlier_probes(out, task, config_hash)
    if probes is None:
        probes = probe_task(task, backend, p1, stamp, selection=config.selection, log_dir=log_dir, differential=config.differential) if config.probes else []
    verdict, written = None, []
    if settings is not None:
        verdict, written = judge_task(
            task, p1, probes, backend, stamp, settings=settings, config=config.judge, transcript_dir=out / "transcripts",
            run_deadline=run_deadline,
        )
    # a model-free probe the judge had confirmed by a full grade is stored once, as confirmed
    every = list({p.probe_id: p for p in [*probes, *written]}.values())
    commit_folder(
        result_path(out, task.instance_id),
        [("probes", ProbeResult, every), ("verdict", VerdictRecord, [verdict] if verdict else []),
         ("counts", ProbeCounts, [probe_counts(every, stamp)])],
    )  # fmt: skip
    return every, verdict


def probe_counts(probes: list[ProbeResult], stamp: dict[str, str]) -> ProbeCounts:
    """The task's wrong probes by fate (``probes`` holds each probe once, with its final grade)."""
    wrong = [p for p in probes if p.kind == "plausible_wrong"]
    survived = [p for p in wrong if p.reward == 1.0]
    alternatives = [p for p in probes if p.kind == "correct_alternative"]
    return ProbeCounts(
        **stamp, generated=len(wrong), survived=len(survived),
        confirmed=sum(p.distinguishing is not None for p in survived),
        likely_equivalent=sum(p.likely_equivalent for p in survived), killed=len(wrong) - len(survived),
        alternatives=len(alternatives), alternatives_failed=sum(p.reward == 0.0 for p in alternatives),
    )  # fmt: skip
