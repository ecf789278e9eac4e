"""The scripted judge's policies: its next assistant message, a pure function of the conversation so far.

``labelled``
    Strengthening sessions (a prompt with added tests): reviews every kept model-free test as relevant,
    citing the issue sentence of ``STRENGTHEN`` for the task, proposes that entry's test with the same
    citation, and finishes (a task without an entry: finish at once).
    Verdict sessions: plays the sample corpus from its ground truth (``data/sample/labels.toml``; the real fix
    commits of ``data/real`` from ``data/real/labels.toml``) and the probe patches
    in ``data/sample/<id>/probes/``, standing in for a model that found them. too_loose: cite the
    model-free survivors that have a distinguishing input; with none, grade the wrong patch as
    plausible_wrong, run ``differential`` on it, and cite it. over_restrictive: grade the alternative patch as
    correct_alternative, cite it. gold_wrong: run the issue's reproduction on the gold tree in the
    shell, then Q1 = no. valid / history_leak: first a verdict with no evidence (refused: the rules
    work), then cite model-free plausible_wrong probes that scored 0, or, with none given, make a
    no-op change in the shell, grade it as plausible_wrong and cite it. issue_underspecified: the same
    evidence, a first rewrite that copies a gold line (refused), then a clean rewrite.
"""

from __future__ import annotations

import itertools
import json
import re
import shlex
import tomllib
from collections.abc import Callable
from typing import Any

from data import SAMPLE
from judge.prompts import GOLD_PATCH_PATH
from judge.rules import nontrivial_added_lines, touched_files

REFUSAL_TEXT = "I can't help with that."
NOOP_MARKER = "swedeck-judge-noop"
_CALL_IDS = itertools.count(1)

Message = dict[str, Any]
Policy = Callable[[list[Message]], Message]


# ------------------------------------------------------------------------------------------ replies


def text_reply(text: str) -> Message:
    return {"role": "assistant", "content": text}


def call_reply(name: str, arguments: dict | str, content: str | None = None) -> Message:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    call_id = f"call_{next(_CALL_IDS)}"
    return {
        "role": "assistant",
        "content": content,
        "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": raw}}],
    }


def submit_reply(
    q1: bool,
    q2: str | None = None,
    q3: bool | None = None,
    evidence: list[str] | None = None,
    rewritten_issue: str | None = None,
    rationale: str = "",
) -> Message:
    return call_reply(
        "submit_verdict",
        {
            "q1_gold_fixes_issue": q1,
            "q2_tests_grade_issue": q2,
            "q3_issue_states_requirements": q3,
            "evidence": evidence or [],
            "rewritten_issue": rewritten_issue,
            "rationale": rationale,
        },
    )


# ------------------------------------------------------------------------------------------ reading the conversation


def _section(text: str, tag: str) -> str:
    found = re.search(rf"<{tag}>\n(.*?)\n</{tag}>", text, re.DOTALL)
    return found.group(1) if found else ""


class Conversation:
    """What a model would read off the messages: the task prompt and each tool call with its result."""

    def __init__(self, messages: list[Message]) -> None:
        prompt = next((m.get("content") or "" for m in messages if m.get("role") == "user"), "")
        found = re.search(r"^# Task (\S+)", prompt, re.MULTILINE)
        self.instance_id = found.group(1) if found else ""
        self.issue = _section(prompt, "issue")
        self.gold_patch = _section(prompt, "gold_patch")
        try:
            self.probes: list[dict] = json.loads(_section(prompt, "probes") or "[]")
        except json.JSONDecodeError:
            self.probes = []
        added = _section(prompt, "added_tests")
        self.added_tests: list[dict] | None = json.loads(added) if added else None  # a strengthening session
        results = {m.get("tool_call_id"): m.get("content") or "" for m in messages if m.get("role") == "tool"}
        self.calls: list[tuple[str, dict, dict]] = []  # (tool, arguments, result)
        for m in messages:
            for call in m.get("tool_calls") or []:
                try:
                    args = json.loads(call["function"]["arguments"])
                    result = json.loads(results.get(call["id"], "{}"))
                except (json.JSONDecodeError, KeyError, TypeError):
                    continue
                self.calls.append((call["function"]["name"], args, result))

    def results(self, tool: str) -> list[tuple[dict, dict]]:
        return [(args, result) for name, args, result in self.calls if name == tool]


# the sample corpus's ground truth, and the real fix commits' in data/real
LABEL_FILES = (SAMPLE / "labels.toml", SAMPLE.parent / "real" / "labels.toml")


def _label(instance_id: str) -> dict | None:
    for path in LABEL_FILES:
        labels = tomllib.loads(path.read_text())["tasks"]
        if instance_id in labels:
            return labels[instance_id]
    return None


def has_script(instance_id: str) -> bool:
    """Whether the labelled policy plays this task (it answers any other with "I have no script")."""
    return _label(instance_id) is not None


def _probe_patch(instance_id: str, relative: str) -> str:
    return (SAMPLE / instance_id / relative).read_text()


def _graded(conv: Conversation, kind: str, reward: float) -> list[str]:
    return [
        r["probe_id"] for a, r in conv.results("grade_patch") if a.get("kind") == kind and r.get("reward") == reward
    ]


def _model_free(conv: Conversation, kind: str, reward: float) -> list[str]:
    ran = ("pattern_mismatch", "tests_errored") if reward == 0 else ("ok",)
    return [p["probe_id"] for p in conv.probes if p["kind"] == kind and p["reward"] == reward and p["reason"] in ran]


def _noop_evidence(conv: Conversation) -> list[str] | Message:
    """Probe ids showing that wrong patches fail: model-free ones if given, else a no-op change made in
    the shell and graded. Returns the next step's message while that is under way."""
    given = _model_free(conv, "plausible_wrong", 0.0)
    if given:
        return given
    graded = _graded(conv, "plausible_wrong", 0.0)
    if graded:
        return graded
    made = [r for a, r in conv.results("shell") if NOOP_MARKER in a.get("command", "")]
    if not made:
        path = shlex.quote(touched_files(conv.gold_patch)[0])
        command = f"printf '\\n# {NOOP_MARKER}: no behaviour change\\n' >> {path} && git diff -- {path}; git checkout -q -- {path}"
        return call_reply("shell", {"command": command})
    output = made[-1].get("output", "")
    patch = output[output.find("diff --git") :]
    return call_reply(
        "grade_patch",
        {"patch": patch, "kind": "plausible_wrong", "description": "adds a comment only: the bug is left in place"},
    )


def _code_block(text: str, after: str = "") -> str:
    start = text.find(after) if after else 0
    found = re.search(r"```(?:python)?\n(.*?)```", text[max(start, 0) :], re.DOTALL)
    return found.group(1).strip() if found else ""


# rewrites that state what the sample's underspecified tasks' hidden tests require, in the issue's words
REWRITES = {
    "sample__ttlcache-1": (
        "\n\n## Also required\n\n"
        "- `set(key, value, ttl=0)` stores an entry that never expires: it stays readable however much time "
        "passes, until it is evicted or deleted, and `ttl_remaining()` returns `None` for it.\n"
        "- A negative `ttl` is an error: `set()` raises `ValueError` and nothing is stored under that key.\n"
    ),
}


# the tests the scripted judge writes for the sample's too-loose tasks: the case the issue names and the
# hidden tests leave out, with the issue sentence it follows from (which also grounds its reviews)
STRENGTHEN = {
    "sample__moneyfmt-1": {
        "file": "tests/test_formatting.py",
        "code": (
            "def test_three_decimal_currencies_keep_their_last_digit():\n"
            "    assert format_money(Money(\"12.345\", \"KWD\")) == \"KD 12.345\"\n"
            "    assert format_money(Money(\"0.125\", \"BHD\")) == \"BD 0.125\"\n"
        ),
        "cites": [("three-decimal currencies such as KWD, BHD or TND are shown with only two decimals, so the last "
                   "digit of the amount is silently rounded away on display.")],
    },
    "sample__cronexpr-1": {
        "file": "tests/test_fields.py",
        "code": "def test_star_step_in_month_counts_from_january():\n    assert parse_field(\"*/3\", MONTH) == {1, 4, 7, 10}\n",
        "cites": ["`*/3` in the month field should be January, April, July and October"],
    },
}  # fmt: skip


def strengthening(conv: Conversation) -> Message:
    script = STRENGTHEN.get(conv.instance_id)
    if script is None:
        return call_reply("finish", {"rationale": "I have no test to add for this task."})
    reviewed = {args.get("test_id") for args, _ in conv.results("review_test")}
    for test in conv.added_tests or []:
        if test["kept"] and test["relevance"] == "unreviewed" and test["test_id"] not in reviewed:
            return call_reply("review_test", {"test_id": test["test_id"], "relevant": True, "cites": script["cites"]})
    if not conv.results("propose_test"):
        return call_reply("propose_test", {"file": script["file"], "code": script["code"], "cites": script["cites"]})
    return call_reply("finish", {"rationale": "the added tests state the cases the issue names"})


def labelled(messages: list[Message]) -> Message:
    conv = Conversation(messages)
    if conv.added_tests is not None:
        return strengthening(conv)
    label = _label(conv.instance_id)
    if label is None:
        return text_reply(f"I have no script for {conv.instance_id or 'this task'}.")
    kind = label["label"]
    submitted = conv.results("submit_verdict")
    if kind == "too_loose":
        # a survivor is evidence only with an input that tells it from gold (the differential engine)
        confirmed = [p["probe_id"] for p in conv.probes if p["kind"] == "plausible_wrong" and p["reward"] == 1.0 and p.get("distinguishing")]
        confirmed += [r["probe_id"] for _, r in conv.results("differential") if r.get("found")]
        if confirmed:
            return submit_reply(True, "too_loose", evidence=confirmed, rationale="a wrong patch gets full reward and behaves unlike gold")
        if conv.results("differential"):
            return text_reply("The surviving patch behaves like gold on every input tried; I have nothing more to try.")
        graded = _graded(conv, "plausible_wrong", 1.0)
        if graded:
            return call_reply("differential", {"probe_id": graded[0]})
        if conv.results("grade_patch"):
            return text_reply("The wrong patch did not pass; I have nothing more to try.")
        patch = _probe_patch(conv.instance_id, label["wrong_patch"])
        return call_reply("grade_patch", {"patch": patch, "kind": "plausible_wrong", "description": label["note"]})
    if kind == "over_restrictive":
        evidence = _model_free(conv, "correct_alternative", 0.0) or _graded(conv, "correct_alternative", 0.0)
        if evidence:
            return submit_reply(True, "over_restrictive", evidence=evidence, rationale="a correct fix gets reward 0")
        if conv.results("grade_patch"):
            return text_reply("The alternative fix passed; I have nothing more to try.")
        patch = _probe_patch(conv.instance_id, label["alt_patch"])
        return call_reply("grade_patch", {"patch": patch, "kind": "correct_alternative", "description": label["note"]})
    if kind == "gold_wrong":
        ran = conv.results("shell")
        if not ran:
            repro = _code_block(conv.issue)
            return call_reply("shell", {"command": f"git apply {GOLD_PATCH_PATH} && python - <<'PY'\n{repro}\nPY"})
        observed = ran[-1][1].get("output", "").strip()
        expected = _code_block(conv.issue, after="Expected")
        return submit_reply(
            False,
            rationale=f"With the gold patch applied the issue's reproduction prints {observed!r}; the issue expects {expected!r}.",
        )
    if kind in ("valid", "history_leak", "issue_underspecified"):
        if kind != "issue_underspecified" and not submitted:
            return submit_reply(True, "yes", True, rationale="the tests look right to me")  # no evidence: refused
        evidence = _noop_evidence(conv)
        if not isinstance(evidence, list):
            return evidence
        if kind != "issue_underspecified":
            return submit_reply(True, "yes", True, evidence=evidence, rationale="wrong patches fail the hidden tests")
        addendum = REWRITES.get(conv.instance_id, "\n\nThe behaviour the hidden tests check is required.\n")
        if not submitted:  # a rewrite that copies a gold line: refused by the leak check
            leaked = conv.issue + addendum + "\nImplementation hint: " + nontrivial_added_lines(conv.gold_patch)[0]
            return submit_reply(
                True, "yes", False, evidence=evidence, rewritten_issue=leaked, rationale="underspecified"
            )
        return submit_reply(
            True, "yes", False, evidence=evidence, rewritten_issue=conv.issue + addendum,
            rationale="the hidden tests require behaviour the issue never states",
        )  # fmt: skip
    return text_reply(f"I do not judge tasks labelled {kind}.")


POLICIES: dict[str, Policy] = {"labelled": labelled}


def malformed(messages: list[Message]) -> Message:
    turn = sum(1 for m in messages if m.get("role") == "assistant")
    if turn % 2 == 0:
        return call_reply("submit_verdict", '{"q1_gold_fixes_issue": true, "evidence": [')
    return call_reply("run_shell", {"command": "ls"})


def forever(messages: list[Message]) -> Message:
    turn = sum(1 for m in messages if m.get("role") == "assistant")
    return call_reply("shell", {"command": f"echo still looking {turn}"})


FAULT_POLICIES: dict[str, Policy] = {
    "malformed_tool_call": malformed,
    "refusal": lambda messages: text_reply(REFUSAL_TEXT),
    "forever": forever,
}
