"""Pipeline 2's judge: the pure rules (citations, verdict mapping, leak check, prompt), then the real
loop — the real ``openai`` client over real local HTTP against the scripted judge model, with real
bwrap sandboxes — on every sample task Pipeline 1 keeps, and under every fault the endpoint or the
model can throw at it."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import openai
import pytest
from conftest import LABELS

from curation.pipeline1 import Pipeline1Config, process_task
from data import SAMPLE
from harness.grading.grader import grade
from harness.records import Behaviour, DistinguishingInput, Pipeline1Result, ProbeResult, Status, Task, VerdictRecord, content_hash
from harness.sandboxes.sandbox import Backend
from judge import JudgeConfig, JudgeSettings, ScriptedJudge, judge_task
from judge.prompts import TOOL_NAMES, render_messages
from judge.rules import (
    VerdictArgs,
    check_citations,
    diff_lines,
    introduced_identifiers,
    leak_problems,
    map_verdict,
    nontrivial_added_lines,
    normalise,
    touched_files,
)
from judge.scripted import request_problem
from judge.scripted_policies import REFUSAL_TEXT
from judge.tools import ToolSession

KEPT = sorted(name for name, label in LABELS.items() if label["p1_decision"] == "keep")
EXPECTED = {
    "valid": "accept",
    "history_leak": "accept",
    "too_loose": "too_loose",
    "over_restrictive": "over_restrictive",
    "issue_underspecified": "issue_rewritten",
    "gold_wrong": "gold_wrong",
}
FAULT_TASK = "sample__semverlite-1"
FAST = {"timeout_s": 1.0, "max_retries": 1, "backoff_s": 0.01}  # a timeout fault costs 2 s


# ------------------------------------------------------------------------------------------ helpers


DIFFERS = DistinguishingInput(test_id="t.py::t", how="'a' -> 'b'", setup=[], call="f('b')", gold=Behaviour(value="1"),
                               other=Behaviour(value="2"))  # fmt: skip


def probe(
    probe_id: str, kind: str, reward: float, reason: str = "", origin: str = "judge", distinguishing: bool = True
) -> ProbeResult:
    survived = kind == "plausible_wrong" and reward == 1
    return ProbeResult(
        config_hash="t", task_hash="h", instance_id="i", probe_id=probe_id, kind=kind, origin=origin,
        operator="op", description="", patch="", reward=reward, reason=reason or ("ok" if reward else "pattern_mismatch"),
        selected_reward=None, executions=1, differing=[], log_path="",
        distinguishing=DIFFERS if survived and distinguishing else None,
        likely_equivalent=survived and not distinguishing, differential_tried=40 if survived else 0,
    )  # fmt: skip


def verdict(
    q1: bool = True, q2: str | None = "yes", q3: bool | None = True, evidence=(), rewrite: str | None = None
) -> VerdictArgs:
    return VerdictArgs(
        q1_gold_fixes_issue=q1, q2_tests_grade_issue=q2, q3_issue_states_requirements=q3,
        evidence=list(evidence), rewritten_issue=rewrite, rationale="r",
    )  # fmt: skip


def events(record: VerdictRecord) -> list[dict]:
    return [json.loads(line) for line in Path(record.transcript_path).read_text().splitlines()]


def tool_results(record: VerdictRecord, tool: str) -> list[dict]:
    return [json.loads(e["message"]["content"]) for e in events(record) if e.get("tool") == tool]


def stamp_for(task: Task) -> dict[str, str]:
    return {"config_hash": "t", "task_hash": task.task_hash(), "instance_id": task.instance_id}


# ------------------------------------------------------------------------------------------ verdict mapping


@pytest.mark.parametrize(
    ("q1", "q2", "q3", "outcome"),
    [
        (False, None, None, "gold_wrong"),
        (False, "too_loose", True, "gold_wrong"),  # answers past a "no" do not count
        (True, "too_loose", None, "too_loose"),
        (True, "over_restrictive", None, "over_restrictive"),
        (True, "yes", True, "accept"),
        (True, "yes", False, "issue_rewritten"),
    ],
)
def test_map_verdict_follows_the_dependency_order(q1: bool, q2: str | None, q3: bool | None, outcome: str) -> None:
    assert map_verdict(q1, q2, q3) == outcome


@pytest.mark.parametrize(("q2", "q3"), [(None, None), ("yes", None)])
def test_map_verdict_refuses_an_unanswered_question(q2: str | None, q3: bool | None) -> None:
    with pytest.raises(ValueError):
        map_verdict(True, q2, q3)


def test_normalise_drops_answers_the_order_does_not_ask_for() -> None:
    n = normalise(verdict(False, "too_loose", False, ["a", "a", " "], "text"))
    assert (n.q2_tests_grade_issue, n.q3_issue_states_requirements, n.rewritten_issue, n.evidence) == (
        None,
        None,
        None,
        ["a"],
    )
    n = normalise(verdict(True, "too_loose", False, rewrite="text"))
    assert (n.q3_issue_states_requirements, n.rewritten_issue) == (None, None)
    assert normalise(verdict(True, "yes", True, rewrite="text")).rewritten_issue is None
    assert normalise(verdict(True, "yes", False, rewrite="text")).rewritten_issue == "text"


# ------------------------------------------------------------------------------------------ citations

KNOWN = {
    p.probe_id: p
    for p in [
        probe("wrong_passes", "plausible_wrong", 1),
        probe("wrong_fails", "plausible_wrong", 0),
        probe("wrong_unapplied", "plausible_wrong", 0, "patch_apply_failed"),
        probe("alt_fails", "correct_alternative", 0),
        probe("alt_times_out", "correct_alternative", 0, "sandbox_error"),
        probe("alt_passes", "correct_alternative", 1),
        probe("mutant_fails", "plausible_wrong", 0, origin="model_free"),
        probe("mutant_passes", "plausible_wrong", 1, origin="model_free"),
        probe("mutant_like_gold", "plausible_wrong", 1, origin="model_free", distinguishing=False),
    ]
}


@pytest.mark.parametrize(
    ("q2", "evidence"),
    [
        ("too_loose", ["wrong_passes"]),
        ("too_loose", ["mutant_passes"]),  # a model-free probe counts as adopted
        ("over_restrictive", ["alt_fails"]),
        ("yes", ["wrong_fails"]),
        ("yes", ["mutant_fails", "alt_passes"]),
    ],
)
def test_citations_that_match_executed_grades_are_accepted(q2: str, evidence: list[str]) -> None:
    assert check_citations(normalise(verdict(True, q2, True, evidence)), KNOWN, executed=1) == []


@pytest.mark.parametrize(
    ("q2", "evidence", "why"),
    [
        ("too_loose", [], "must cite a plausible_wrong probe that scored reward 1"),
        ("too_loose", ["wrong_fails"], "does not support Q2 = too_loose"),
        # regression: a survivor that behaves like gold on every input tried is no evidence (issue 14)
        ("too_loose", ["mutant_like_gold"], "no input among 40 told it apart from gold"),
        ("too_loose", ["alt_passes"], "does not support Q2 = too_loose"),
        ("over_restrictive", ["alt_passes"], "does not support Q2 = over_restrictive"),
        ("over_restrictive", ["alt_times_out"], "does not support Q2 = over_restrictive"),  # the tests never judged it
        ("yes", [], "never answered by inspection"),
        ("yes", ["wrong_passes"], "does not support Q2 = yes"),
        ("yes", ["wrong_unapplied"], "does not support Q2 = yes"),
        ("yes", ["alt_passes"], "must cite plausible_wrong probes that scored reward 0"),
        ("yes", ["graded_elsewhere"], "not a probe graded in this session"),
    ],
)
def test_citations_that_do_not_match_executed_grades_are_refused(q2: str, evidence: list[str], why: str) -> None:
    problems = check_citations(normalise(verdict(True, q2, True, evidence)), KNOWN, executed=5)
    assert any(why in p for p in problems), problems


def test_citations_follow_the_question_order() -> None:
    assert any("answer Q2" in p for p in check_citations(verdict(True, None, None), KNOWN, executed=1))
    assert any(
        "answer Q3" in p for p in check_citations(verdict(True, "yes", None, ["wrong_fails"]), KNOWN, executed=1)
    )
    no_rewrite = check_citations(verdict(True, "yes", False, ["wrong_fails"]), KNOWN, executed=1)
    assert any("needs rewritten_issue" in p for p in no_rewrite)


def test_gold_wrong_must_rest_on_something_executed() -> None:
    args = normalise(verdict(False))
    assert any("executed" in p for p in check_citations(args, KNOWN, executed=0))
    assert check_citations(args, KNOWN, executed=1) == []


def test_only_model_free_probes_are_citable_without_grading_them_in_this_session(
    sample_tasks: dict[str, Task], tmp_path: Path
) -> None:
    task = sample_tasks["sample__moneyfmt-1"]
    old_judge, mutant = (
        probe("old_judge", "plausible_wrong", 1),
        probe("mutant", "plausible_wrong", 1, origin="model_free"),
    )
    tools = ToolSession(task, {}, None, stamp_for(task), [old_judge, mutant], JudgeConfig(), tmp_path)  # type: ignore[arg-type]
    assert set(tools.known) == {"mutant"}
    assert check_citations(verdict(True, "too_loose", None, ["old_judge"]), tools.known, executed=0)


# ------------------------------------------------------------------------------------------ leak check

TTL_REQUIREMENTS = (
    "\n\n## Also required\n\n- `set(..., ttl=0)` keeps the entry until it is evicted or deleted, and "
    "`ttl_remaining()` returns `None` for it.\n- A negative `ttl` makes `set()` raise `ValueError`.\n"
)


def test_a_rewrite_that_states_the_tested_behaviour_passes_the_leak_check(sample_tasks: dict[str, Task]) -> None:
    task = sample_tasks["sample__ttlcache-1"]
    rewrite = task.problem_statement + TTL_REQUIREMENTS
    assert (
        leak_problems(
            rewrite,
            issue=task.problem_statement,
            gold_patch=task.answer.gold_patch,
            hidden_tests=task.answer.hidden_tests.patch,
        )
        == []
    )


@pytest.mark.parametrize(
    ("extra", "why"),
    [
        ('\n    raise ValueError(f"ttl must not be negative, got {ttl!r}")', "copies a line the gold patch adds"),
        (
            "\nHint: `ttl=None` uses the cache's default; `ttl=0` means the entry never expires (as with memcached's `exptime=0`).",
            "copies a line the gold patch adds",
        ),  # a docstring line, quoted as prose
        ("\nStore the result in `expires_at` before touching the table.", "names 'expires_at'"),
    ],
)
def test_a_rewrite_that_gives_away_the_gold_implementation_is_refused(
    sample_tasks: dict[str, Task], extra: str, why: str
) -> None:
    task = sample_tasks["sample__ttlcache-1"]
    rewrite = task.problem_statement + TTL_REQUIREMENTS + extra
    problems = leak_problems(
        rewrite,
        issue=task.problem_statement,
        gold_patch=task.answer.gold_patch,
        hidden_tests=task.answer.hidden_tests.patch,
    )
    assert any(why in p for p in problems), problems


def test_names_the_hidden_tests_or_the_buggy_tree_use_are_not_leaks(sample_tasks: dict[str, Task]) -> None:
    slug = sample_tasks["sample__slugkit-1"]
    assert "_truncate" in introduced_identifiers(slug.answer.gold_patch)
    rewrite = slug.problem_statement + "\nThe helper `_truncate(slug, max_length, separator)` must exist."
    assert (
        leak_problems(
            rewrite,
            issue=slug.problem_statement,
            gold_patch=slug.answer.gold_patch,
            hidden_tests=slug.answer.hidden_tests.patch,
        )
        == []
    )
    ttl = sample_tasks["sample__ttlcache-1"]
    rewrite = ttl.problem_statement + "\nSee `expires_at`."
    kwargs = {"issue": ttl.problem_statement, "gold_patch": ttl.answer.gold_patch, "hidden_tests": ""}
    assert leak_problems(rewrite, **kwargs)
    assert leak_problems(rewrite, **kwargs, existing="expires_at = None  # already in the buggy tree") == []


def test_an_unchanged_or_empty_rewrite_is_refused() -> None:
    assert leak_problems("  ", issue="x", gold_patch="", hidden_tests="") == ["the rewritten issue is empty"]
    assert any(
        "unchanged" in p for p in leak_problems("the  issue\n", issue="the issue", gold_patch="", hidden_tests="")
    )


def test_diff_helpers_read_added_lines_and_touched_files() -> None:
    patch = (
        "diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1,3 +1,4 @@\n ctx_line = 1\n-old_value = compute_old(old_name)\n"
        "+new_name = compute_value(old_name, other_arg)\n+x = 1\n+    old_value = compute_old(old_name)\n"
        "+raise ValueError(new_name)\n"
        "diff --git a/n.py b/n.py\nnew file mode 100644\n--- /dev/null\n+++ b/n.py\n@@ -0,0 +1 @@\n+def helper(): pass\n"
    )
    lines = diff_lines(patch)
    assert lines.added[:2] == ["new_name = compute_value(old_name, other_arg)", "x = 1"]
    assert lines.added[-1] == "def helper(): pass"
    assert lines.other == ["ctx_line = 1", "old_value = compute_old(old_name)"]
    assert touched_files(patch) == ["m.py"]
    # a line gold only moves is not its own, and neither are Python's builtins
    assert nontrivial_added_lines(patch) == [
        "new_name = compute_value(old_name, other_arg)",
        "raise ValueError(new_name)",
    ]
    assert introduced_identifiers(patch) == {"new_name", "compute_value", "other_arg", "helper"}


# ------------------------------------------------------------------------------------------ prompt, config, server


def test_the_prompt_shows_the_judge_everything_privileged(sample_tasks: dict[str, Task]) -> None:
    task = sample_tasks["sample__moneyfmt-1"]
    p1 = Pipeline1Result(
        config_hash="t", task_hash="h", instance_id=task.instance_id, source="local", repo=task.repo, decision="keep",
        reason="", infrastructure=False, stage="", fail_to_pass=["t::f2p"], pass_to_pass=[f"t::p{i}" for i in range(60)],
        flaky=["t::flaky"], gold_failing=[], binding_assertions=["t.py:42"], label_disagreements=[],
        expected_status={"t::f2p": "PASSED"}, runs=2, duration_s=1.0, detail="",
    )  # fmt: skip
    mutant = probe("mutant_passes", "plausible_wrong", 1, origin="model_free")
    system, user = render_messages(task, p1, [mutant], section_chars=100_000)
    text = user["content"]
    for needle in (
        task.problem_statement.strip(),
        task.answer.gold_patch.strip(),
        task.answer.hidden_tests.patch.strip(),
    ):
        assert needle in text
    assert all(s in text for s in ("t::f2p", "t::flaky", "t.py:42", "(10 more)", '"probe_id": "mutant_passes"'))
    assert all(name in system["content"] for name in TOOL_NAMES)
    short = render_messages(task, p1, [], section_chars=1000)[1]["content"]
    assert "characters omitted" in short and len(short) < len(text)


def test_settings_come_from_the_environment_and_config_forbids_unknown_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SWEDECK_JUDGE_BASE_URL", "http://judge:9000/v1")
    monkeypatch.setenv("SWEDECK_JUDGE_MODEL", "Qwen/Qwen3.5-27B")
    monkeypatch.setenv("SWEDECK_JUDGE_API_KEY", "sk-secret")
    settings = JudgeSettings.from_env()
    assert (settings.base_url, settings.model, settings.resolved_api_key()) == (
        "http://judge:9000/v1",
        "Qwen/Qwen3.5-27B",
        "sk-secret",
    )
    assert "sk-secret" not in repr(settings)
    # flows hand settings to workers as JSON: the key is not in it, and the worker reads it from its environment
    dumped = settings.model_dump_json()
    assert "sk-secret" not in dumped
    assert JudgeSettings.model_validate_json(dumped).resolved_api_key() == "sk-secret"
    monkeypatch.delenv("SWEDECK_JUDGE_API_KEY")
    assert JudgeSettings.model_validate_json(dumped).resolved_api_key() == "EMPTY"
    with pytest.raises(ValueError):
        JudgeConfig(token_limit=10)


def test_the_scripted_server_speaks_the_openai_wire_format() -> None:
    with ScriptedJudge("labelled") as base_url:
        client = openai.OpenAI(base_url=base_url, api_key="x", max_retries=0, timeout=5)
        assert [m.id for m in client.models.list()] == ["scripted-judge"]
        reply = client.chat.completions.create(
            model="scripted-judge", messages=[{"role": "user", "content": "# Task unknown"}]
        )
        assert reply.choices[0].finish_reason == "stop" and reply.usage.total_tokens > 0
        with pytest.raises(openai.BadRequestError):  # a tool call left without its result, as a real server says
            client.chat.completions.create(
                model="scripted-judge",
                messages=[
                    {"role": "user", "content": "hi"},
                    {"role": "assistant", "content": None, "tool_calls": [
                        {"id": "c1", "type": "function", "function": {"name": "shell", "arguments": "{}"}}]},
                    {"role": "user", "content": "again"},
                ],
            )  # fmt: skip
    assert request_problem({"model": "m", "messages": []}) != ""


# ------------------------------------------------------------------------------------------ the real loop


@pytest.fixture(scope="module")
def p1_results(
    sample_tasks: dict[str, Task], bwrap_backend: Backend, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Pipeline1Result]:
    out = tmp_path_factory.mktemp("p1")
    return {iid: process_task(sample_tasks[iid], bwrap_backend, Pipeline1Config(runs=1), "t", out) for iid in KEPT}


def run_judge(
    task: Task, p1: Pipeline1Result, backend: Backend, transcripts: Path, probes=(), fault: str | None = None,
    fault_requests: int | None = None, **config: object,
) -> tuple[VerdictRecord, list[ProbeResult], ScriptedJudge]:  # fmt: skip
    server = ScriptedJudge("labelled", fault, fault_requests=fault_requests)
    with server as base_url:
        record, written = judge_task(
            task, p1, list(probes), backend, stamp_for(task),
            settings=JudgeSettings(base_url=base_url, model="scripted-judge"),
            config=JudgeConfig(**config), transcript_dir=transcripts,
        )  # fmt: skip
    return record, written, server


@pytest.mark.bwrap
@pytest.mark.parametrize("instance_id", KEPT)
def test_the_judge_reaches_the_labelled_verdict(
    instance_id: str,
    sample_tasks: dict[str, Task],
    p1_results: dict[str, Pipeline1Result],
    bwrap_backend: Backend,
    tmp_path: Path,
) -> None:
    task, p1, label = sample_tasks[instance_id], p1_results[instance_id], LABELS[instance_id]
    assert p1.decision == "keep", p1.detail
    record, written, _ = run_judge(task, p1, bwrap_backend, tmp_path)

    assert record.verdict == EXPECTED[label["label"]], (record.detail, events(record)[-4:])
    assert Path(record.transcript_path).is_file() and Path(record.transcript_path).parent == tmp_path
    assert events(record)[-1] == {**events(record)[-1], "event": "end", "verdict": record.verdict}
    assert (record.instance_id, record.task_hash, record.judge_model) == (
        instance_id,
        task.task_hash(),
        "scripted-judge",
    )
    assert record.tokens > 0
    # the evidence is exactly the probes the judge graded in this session, each hashed as specified
    assert record.evidence == [p.probe_id for p in written]
    for p in written:
        assert p.origin == "judge" and p.probe_id == content_hash([instance_id, p.kind, "judge", p.patch])
        assert (p.instance_id, p.config_hash) == (instance_id, "t")
    kind, reward = {
        "too_loose": ("plausible_wrong", 1.0),
        "over_restrictive": ("correct_alternative", 0.0),
        "gold_wrong": (None, None),
    }.get(label["label"], ("plausible_wrong", 0.0))
    if kind is None:  # Q1 = no rests on a reproduction run in the shell, not on a probe
        assert written == [] and record.q1_gold_fixes_issue is False and record.q2_tests_grade_issue is None
        (shell,) = tool_results(record, "shell")
        assert "page=1&page=2" in shell["output"]
    else:
        assert [(p.kind, p.reward) for p in written] == [(kind, reward)]
    if label["label"] == "issue_underspecified":
        assert "ValueError" in record.rewritten_issue and record.rewritten_issue != task.problem_statement
        refused = [e for e in events(record) if e["event"] == "verdict_refused"]
        assert len(refused) == 1 and "copies a line the gold patch adds" in refused[0]["problems"][0]
    else:
        assert record.rewritten_issue == ""


@pytest.mark.bwrap
def test_a_verdict_without_executed_evidence_is_refused_then_the_evidenced_one_accepted(
    sample_tasks: dict[str, Task], p1_results: dict[str, Pipeline1Result], bwrap_backend: Backend, tmp_path: Path
) -> None:
    task = sample_tasks[FAULT_TASK]
    record, written, _ = run_judge(task, p1_results[FAULT_TASK], bwrap_backend, tmp_path)
    verdicts = tool_results(record, "submit_verdict")
    assert [v["accepted"] for v in verdicts] == [False, True]
    assert "Q2 = yes must cite plausible_wrong probes" in verdicts[0]["refused"]
    kinds = [e["event"] for e in events(record)]
    assert kinds.index("verdict_refused") < len(kinds) - 1
    assert record.verdict == "accept" and record.detail == "1 verdict(s) refused first"
    graded = tool_results(record, "grade_patch")
    assert [g["probe_id"] for g in graded] == record.evidence == [written[0].probe_id]


@pytest.mark.bwrap
def test_a_model_free_probe_is_adopted_without_regrading(
    sample_tasks: dict[str, Task], p1_results: dict[str, Pipeline1Result], bwrap_backend: Backend, tmp_path: Path
) -> None:
    task, p1 = sample_tasks["sample__moneyfmt-1"], p1_results["sample__moneyfmt-1"]
    patch = (SAMPLE / task.instance_id / "probes" / "wrong.patch").read_text()
    expected = {k: Status(v) for k, v in p1.expected_status.items()}
    g = grade(task, patch, bwrap_backend, expected=expected)
    mutant = ProbeResult(
        **stamp_for(task), probe_id="model-free-1", kind="plausible_wrong", origin="model_free", operator="special_case",
        description="", patch=patch, reward=g.reward, reason=g.reason, selected_reward=None, executions=1,
        differing=sorted(g.differing), log_path=g.log_path, distinguishing=DIFFERS,
    )  # fmt: skip
    record, written, _ = run_judge(task, p1, bwrap_backend, tmp_path, probes=[mutant])
    assert (record.verdict, record.evidence, written) == ("too_loose", ["model-free-1"], [])


# ------------------------------------------------------------------------------------------ faults


@pytest.mark.bwrap
@pytest.mark.parametrize(
    ("fault", "config", "detail", "requests"),
    [
        ("timeout", FAST, "endpoint failed: the endpoint failed 2 time(s); last: no complete reply within 1.0 s", 2),
        ("http_500", FAST, "endpoint failed: the endpoint failed 2 time(s); last: HTTP 500", 2),
        ("malformed_tool_call", {"max_turns": 4}, "max turns reached: 4 replies", 4),
        ("refusal", {}, f"model refused: replied without a tool call 2 time(s); last: {REFUSAL_TEXT!r}", 2),
        ("forever", {"max_turns": 3}, "max turns reached: 3 replies", 3),
        ("forever", {"token_budget": 8000}, "token budget spent", None),
    ],
)
def test_every_fault_ends_unjudgeable_with_the_reason(
    fault: str, config: dict, detail: str, requests: int | None, sample_tasks: dict[str, Task],
    p1_results: dict[str, Pipeline1Result], bwrap_backend: Backend, tmp_path: Path,
) -> None:  # fmt: skip
    task = sample_tasks[FAULT_TASK]
    record, written, server = run_judge(task, p1_results[FAULT_TASK], bwrap_backend, tmp_path, fault=fault, **config)
    assert record.verdict == "unjudgeable" and detail in record.detail, record.detail
    assert (record.q1_gold_fixes_issue, record.evidence, written) == (None, [], [])
    assert events(record)[-1]["event"] == "end" and events(record)[-1]["detail"] == record.detail
    if requests is not None:
        assert server.requests == requests
    if fault == "malformed_tool_call":  # each bad call got an error result and the loop went on
        errors = [r["error"] for r in tool_results(record, "submit_verdict") + tool_results(record, "run_shell")]
        assert (
            sum("not valid JSON" in e for e in errors) == 2
            and sum("unknown tool 'run_shell'" in e for e in errors) == 2
        )
    if fault == "refusal":
        assert sum(1 for e in events(record) if e.get("nudge")) == 1
    if fault == "forever":
        assert all("still looking" in r["output"] for r in tool_results(record, "shell"))
    if fault == "timeout" or fault == "http_500":
        assert sum(1 for e in events(record) if e["event"] == "request_failed") == 2


@pytest.mark.bwrap
@pytest.mark.parametrize(("fault", "fault_requests"), [("timeout", 1), ("http_500", 1), ("malformed_tool_call", 2)])
def test_the_loop_recovers_from_a_passing_fault(
    fault: str, fault_requests: int, sample_tasks: dict[str, Task], p1_results: dict[str, Pipeline1Result],
    bwrap_backend: Backend, tmp_path: Path,
) -> None:  # fmt: skip
    task = sample_tasks[FAULT_TASK]
    record, _, _ = run_judge(
        task, p1_results[FAULT_TASK], bwrap_backend, tmp_path, fault=fault, fault_requests=fault_requests, **FAST
    )
    assert record.verdict == "accept", record.detail


@pytest.mark.bwrap
def test_an_unreachable_endpoint_ends_unjudgeable(
    sample_tasks: dict[str, Task], bwrap_backend: Backend, tmp_path: Path
) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    task = sample_tasks[FAULT_TASK]
    p1 = Pipeline1Result(
        **stamp_for(task), source="local", repo=task.repo, decision="keep", reason="", infrastructure=False, stage="",
        fail_to_pass=[], pass_to_pass=[], flaky=[], gold_failing=[], binding_assertions=[], label_disagreements=[],
        expected_status={}, runs=0, duration_s=0.0, detail="",
    )  # fmt: skip
    record, _ = judge_task(
        task, p1, [], bwrap_backend, stamp_for(task), settings=JudgeSettings(base_url=f"http://127.0.0.1:{port}/v1"),
        config=JudgeConfig(**FAST), transcript_dir=tmp_path,
    )  # fmt: skip
    assert record.verdict == "unjudgeable" and "ConnectError" in record.detail
