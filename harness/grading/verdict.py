"""A run's verdict: its statuses held against the expected pattern, and what the run's evidence of
forging or tampering makes of the reward."""

from __future__ import annotations

from typing import Literal

from harness.records import Grade, Status, Task, TestRun

TamperMode = Literal["zero", "flag"]


def _detail(reason: str, run: TestRun) -> str:
    """What zeroed the grade, so a grade read alone (a predictions file's results) says why."""
    evidence = {"spoofing_suspected": run.spoof_evidence, "tamper_suspected": run.tamper}.get(reason, [])
    return run.detail or "; ".join(evidence)


def compare(run: TestRun, expected: dict[str, Status], task: Task, tamper: TamperMode = "zero") -> Grade:
    """Reward 1 iff the run reproduced ``expected`` exactly and looks genuine; with ``tamper`` "zero",
    also only when the tamper audit found nothing in the change (with "flag" its findings are only
    recorded)."""
    differing = {
        test_id: [expected.get(test_id), run.statuses.get(test_id)]
        for test_id in sorted(set(expected) | set(run.statuses))
        if expected.get(test_id) != run.statuses.get(test_id)
    }
    if run.outcome != "ok":
        reason = run.outcome
    elif run.tamper and tamper == "zero":
        reason = "tamper_suspected"
    elif not run.statuses:
        reason = "spoofing_suspected" if run.spoof_evidence else "tests_errored"
    elif run.spoof_evidence:
        reason = "spoofing_suspected"
    elif differing:
        reason = "pattern_mismatch"
    else:
        reason = "ok"
    return Grade(
        instance_id=task.instance_id,
        backend=run.backend,
        reward=1.0 if reason == "ok" else 0.0,
        reason=reason,
        statuses=run.statuses,
        expected=expected,
        differing=differing,
        apply_strategy=run.apply_strategy,
        neutralized=run.neutralized,
        exit_code=run.exit_codes[-1] if run.exit_codes else None,
        spoof_evidence=run.spoof_evidence,
        durations=run.durations,
        log_path=run.log_path,
        detail=_detail(reason, run),
        canaries=run.canaries,
        forgery_bound=run.forgery_bound,
        tamper=run.tamper,
    )
