"""No test double on real data: without a judge endpoint, Pipeline 2's verdict comes from the executed
probes alone (``judge = "none"``), and the scripted judge (the shipped test double) answers only for a
run whose every task it has a script for. ``swedeck curate`` over a folder it has no script for runs
model-free, says so in one line, and its catalog and report show ``judge = none`` (bwrap, slow)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import cli_query, swedeck_cli

from harness.records import Behaviour, DistinguishingInput, ProbeResult
from judge.pipeline2 import model_free_verdict

STAMP = {"config_hash": "c", "task_hash": "t", "instance_id": "i"}


def probe(pid: str, kind: str, reward: float, reason: str = "ok", *, confirmed: bool = False, equivalent: bool = False) -> ProbeResult:
    d = DistinguishingInput(test_id="t.py::test_a", how="", setup=[], call="f(1)", gold=Behaviour(value="1"), other=Behaviour(value="2"))
    return ProbeResult(**STAMP, probe_id=pid, kind=kind, origin="model_free", operator="op", description="", patch="", reward=reward,  # type: ignore[arg-type]
                       reason=reason, selected_reward=None, executions=1, differing=[], log_path="",
                       distinguishing=d if confirmed else None, likely_equivalent=equivalent)  # fmt: skip


def test_a_verdict_without_a_judge_follows_from_the_executed_probes_alone() -> None:
    killed, errored = probe("k", "plausible_wrong", 0.0, "pattern_mismatch"), probe("e", "plausible_wrong", 0.0, "sandbox_error")
    equivalent = probe("s", "plausible_wrong", 1.0, equivalent=True)
    confirmed = probe("c", "plausible_wrong", 1.0, confirmed=True)
    alt_ok, alt_rejected = probe("a", "correct_alternative", 1.0), probe("r", "correct_alternative", 0.0, "pattern_mismatch")

    accepted = model_free_verdict([killed, errored, equivalent, alt_ok], STAMP)
    assert (accepted.verdict, accepted.judge, accepted.q1_gold_fixes_issue, accepted.q2_tests_grade_issue) == ("accept", "none", None, "yes")
    assert accepted.evidence == ["k", "a"]  # a wrong probe that did not run is no evidence; the likely-equivalent survivor neither
    assert "1 survivor(s) behave like gold" in accepted.rationale and accepted.judge_model == "" and accepted.transcript_path == ""

    loose = model_free_verdict([killed, equivalent, confirmed], STAMP)
    assert (loose.verdict, loose.q2_tests_grade_issue, loose.evidence) == ("too_loose", "too_loose", ["c"])
    # a suite that rejects a correct fix cannot be repaired by adding tests: that verdict wins
    both = model_free_verdict([confirmed, alt_rejected, probe("x", "correct_alternative", 0.0, "patch_failed")], STAMP)
    assert (both.verdict, both.evidence) == ("over_restrictive", ["r"]) and "1 wrong probe(s) also pass" in both.rationale


def test_the_scripted_judge_answers_only_a_run_whose_every_task_it_has_a_script_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                                   capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    import curation.pipeline1
    from flows.worker import judge_endpoint
    from harness.records import Task

    monkeypatch.delenv("SWEDECK_JUDGE_BASE_URL", raising=False)
    kept: list[str] = []
    monkeypatch.setattr(curation.pipeline1, "kept_tasks", lambda out: [(Task.model_construct(instance_id=i), None) for i in kept])
    kept[:] = ["sample__moneyfmt-1", "more-itertools__more-itertools-d64a7d6"]
    with judge_endpoint(None, tmp_path) as settings:
        assert settings is not None and settings.model == "scripted-judge"  # type: ignore[attr-defined]
    assert capsys.readouterr().err.strip().endswith("using the scripted judge, a test double")
    kept.append("acme__widgets-1")
    for asked in (None, True):
        with judge_endpoint(asked, tmp_path) as settings:
            assert settings is None
        (line,) = capsys.readouterr().err.strip().splitlines()
        assert "no script for 1 of 3 tasks (e.g. acme__widgets-1)" in line and line.endswith("(judge = none)")


@pytest.mark.slow
@pytest.mark.bwrap
@pytest.mark.prefect
def test_curate_over_a_task_without_a_script_records_judge_none_and_no_scripted_verdict(bwrap_backend, tmp_path: Path) -> None:  # noqa: ANN001
    from test_strengthen_suites import task_folder

    folder = task_folder(tmp_path / "tasks", "units")
    run = tmp_path / "run"
    done = swedeck_cli("curate", str(folder.parent), "--out", str(run), "--backend", "bwrap", "--set", "pipeline1.runs=1")
    assert done.returncode == 0, done.stderr[-3000:]
    said = [line for line in done.stderr.splitlines() if "scripted judge" in line]
    assert len(said) == 2 and all("no script for 1 of 1 tasks (e.g. local__units-1)" in line for line in said), said  # p2 and strengthening
    (verdict,) = cli_query(run, "select verdict, judge, judge_model, transcript_path, evidence from verdicts")
    assert verdict["judge"] == "none" and verdict["judge_model"] == "" and verdict["transcript_path"] == ""
    assert verdict["verdict"] in ("accept", "too_loose", "over_restrictive")
    assert not (run / "transcripts").exists()
    assert "none: verdicts from the executed probes alone" in (run / "report.html").read_text()
