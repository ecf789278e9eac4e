"""Pipeline 2 for one task: model-free probes always, then the privileged judge when an endpoint is
configured; without one, a verdict from the executed probes alone (``judge = "none"``, see
``model_free_verdict``). Results land atomically under ``OUT/p2/<instance_id>/`` like Pipeline 1's."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from curation.store import commit_folder, read_records
from harness.names import under
from harness.records import Pipeline1Result, ProbeCounts, ProbeResult, Task, VerdictRecord
from harness.sandboxes.sandbox import Backend
from judge.config import JudgeSettings, Pipeline2Config
from judge.loop import judge_task
from judge.rules import supports
from probes.runner import probe_task


def result_path(out: Path, instance_id: str) -> Path:
    return under(out / "p2", instance_id)


def finished(out: Path, task: Task, config_hash: str, judged: bool) -> bool:
    """Done with this content and config; a run that was not judged (a model-free verdict) is redone
    once a judge exists, and an unjudgeable verdict (endpoint down, budget spent) is always retried."""
    folder = result_path(out, task.instance_id)
    if not (folder / "verdict.parquet").exists() or not (folder / "counts.parquet").exists():
        return False
    verdicts = read_records(folder / "verdict.parquet", VerdictRecord)
    probes = read_records(folder / "probes.parquet", ProbeResult)
    stamps = {(r.config_hash, r.task_hash) for r in [*verdicts, *probes]}
    if stamps and stamps != {(config_hash, task.task_hash())}:
        return False
    if judged:
        return bool(verdicts) and verdicts[0].judge != "none" and verdicts[0].verdict != "unjudgeable"
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
    probe_workers: int = 1,
) -> tuple[list[ProbeResult], VerdictRecord | None]:
    stamp = {"config_hash": config_hash, "task_hash": task.task_hash(), "instance_id": task.instance_id}
    log_dir = under(out / "logs", task.instance_id)
    probes = earlier_probes(out, task, config_hash)
    if probes is None:
        probes = probe_task(
            task, backend, p1, stamp, selection=config.selection, log_dir=log_dir, differential=config.differential, workers=probe_workers,
        ) if config.probes else []  # fmt: skip
    verdict, written = None, []
    if settings is not None:
        verdict, written = judge_task(
            task, p1, probes, backend, stamp, settings=settings, config=config.judge, transcript_dir=out / "transcripts",
            run_deadline=run_deadline,
        )
    elif config.probes:
        verdict = model_free_verdict(probes, stamp)
    # a model-free probe the judge had confirmed by a full grade is stored once, as confirmed
    every = list({p.probe_id: p for p in [*probes, *written]}.values())
    commit_folder(
        result_path(out, task.instance_id),
        [("probes", ProbeResult, every), ("verdict", VerdictRecord, [verdict] if verdict else []),
         ("counts", ProbeCounts, [probe_counts(every, stamp)])],
    )  # fmt: skip
    return every, verdict


def model_free_verdict(probes: list[ProbeResult], stamp: dict[str, str]) -> VerdictRecord:
    """The verdict of the executed probes alone, without a judge (``judge = "none"``), citing the
    probes whose grades support it by the judge's own rules (``judge.rules.supports``):
    ``over_restrictive`` when a correct alternative was rejected by the tests; else ``too_loose`` when
    a wrong probe passed and the differential engine told it from gold; else ``accept``. Q1 stays
    unanswered (no one read the issue), and a rejected alternative wins over a confirmed survivor: new
    tests cannot repair a suite that fails correct fixes."""
    cite = {q2: [p.probe_id for p in probes if p.kind == kind and supports(q2, p)]  # type: ignore[arg-type]
            for q2, kind in (("over_restrictive", "correct_alternative"), ("too_loose", "plausible_wrong"))}  # fmt: skip
    unconfirmed = sum(p.likely_equivalent for p in probes if p.kind == "plausible_wrong" and p.reward == 1.0)
    if cite["over_restrictive"]:
        verdict, evidence = "over_restrictive", cite["over_restrictive"]
        why = f"{len(evidence)} correct alternative(s) of gold rejected by the tests"
        if cite["too_loose"]:
            why += f"; {len(cite['too_loose'])} wrong probe(s) also pass with an input that tells them from gold"
    elif cite["too_loose"]:
        verdict, evidence = "too_loose", cite["too_loose"]
        why = f"{len(evidence)} wrong probe(s) pass the tests and an executed input tells each from gold"
    else:
        verdict, evidence = "accept", [p.probe_id for p in probes if supports("yes", p)]
        rejected = sum(p.kind == "plausible_wrong" and supports("yes", p) for p in probes)
        why = f"no executed evidence against the tests: {rejected} wrong probe(s) rejected by them"
        if unconfirmed:
            why += f", {unconfirmed} survivor(s) behave like gold on every input tried (likely equivalent)"
    return VerdictRecord(
        **stamp, verdict=verdict, q1_gold_fixes_issue=None, q2_tests_grade_issue="yes" if verdict == "accept" else verdict,  # type: ignore[arg-type]
        q3_issue_states_requirements=None, evidence=evidence, rewritten_issue="", rationale=why, judge_model="",
        transcript_path="", tokens=0, detail="no judge endpoint: a verdict from the executed probes alone", judge="none",
    )  # fmt: skip


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
