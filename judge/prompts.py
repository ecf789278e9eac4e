"""What the judge model reads: the system prompt, the task prompt and the tool schemas (OpenAI tool
calling wire format). Pure functions of the task, Pipeline 1's result and the probes."""

from __future__ import annotations

import json
from collections.abc import Sequence

from harness.records import AddedTest, Pipeline1Result, ProbeResult, Task

GOLD_PATCH_PATH = "/tmp/swedeck-judge/gold.patch"  # written into the shell sandbox, not applied
PROBE_PATCH_CHARS = 4000
LISTED_PASS_TO_PASS = 50

SYSTEM_PROMPT = f"""\
You are the privileged judge of a software-engineering RL task. An agent will read only the issue; its
reward will come from the hidden tests, graded against the gold run's status pattern. You see
everything: the issue, the gold patch, the hidden tests, Pipeline 1's execution records and the
model-free probe results. Decide, in this order:

Q1  Does the gold patch fix the issue as written? If not, stop: q1_gold_fixes_issue = false.
Q2  Do the hidden tests grade what the issue asks? Answer only with executed evidence:
    - too_loose: a plausible but wrong patch (one that does not fix the issue) gets reward 1;
    - over_restrictive: a correct patch that differs from gold gets reward 0;
    - yes: plausible but wrong patches get reward 0 (the tests reject them).
Q3  Only when Q1 and Q2 hold: does the issue state everything the tests require? If not, give
    rewritten_issue: the issue restated so an agent can meet the tests. It must state the required
    behaviour without giving away the gold implementation: no line the gold patch adds, and no name
    the gold patch introduces unless the issue or the hidden tests already use it.

Tools:
- shell: run a command in a sandbox of the task (buggy tree with the hidden tests applied, no
  network, one sandbox for the whole session). The gold patch is at {GOLD_PATCH_PATH}
  (apply it with `git apply {GOLD_PATCH_PATH}` to reproduce the issue on the gold tree).
- grade_patch: grade a candidate patch with the one grader in a fresh sandbox. Say what it is:
  kind = plausible_wrong or correct_alternative. The result carries a probe_id you can cite.
- differential: run a graded plausible_wrong probe and gold on the same inputs (the FAIL_TO_PASS tests'
  calls, their literals varied) and return an input on which they behave differently, or "none found".
- submit_verdict: your answers, the probe ids that support them (evidence) and a short rationale.

Evidence rules (a verdict that breaks them is refused and you are told why):
- cite only probes graded by grade_patch in this session or listed under "Model-free probes";
- too_loose cites a plausible_wrong probe with reward 1 that behaves unlike gold on some input (a
  model-free probe shows it as "distinguishing"; for one you graded, call differential first: a
  survivor that behaves exactly like gold is no evidence); over_restrictive cites a correct_alternative
  probe with reward 0; yes cites plausible_wrong probes with reward 0; every cited probe must point
  the same way as the verdict;
- Q1 = no must rest on something you executed (a reproduction with the shell tool).
Reply with tool calls only; plain text is not read."""

TOOLS: list[dict] = [
    {
        "type": "function",
        "function": {
            "name": "shell",
            "description": "Run a bash command in the task's sandbox (buggy tree + hidden tests, no network).",
            "parameters": {
                "type": "object",
                "properties": {"command": {"type": "string", "description": "the bash command"}},
                "required": ["command"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "grade_patch",
            "description": "Grade a unified diff against the buggy tree with the task's grader; returns a probe_id.",
            "parameters": {
                "type": "object",
                "properties": {
                    "patch": {"type": "string", "description": "unified diff against the buggy tree"},
                    "kind": {"type": "string", "enum": ["plausible_wrong", "correct_alternative"]},
                    "description": {"type": "string", "description": "what the patch does and why it is that kind"},
                },
                "required": ["patch", "kind"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "differential",
            "description": "Search for an input on which a graded plausible_wrong probe behaves differently from gold.",
            "parameters": {
                "type": "object",
                "properties": {"probe_id": {"type": "string", "description": "a probe graded in this session or given to you"}},
                "required": ["probe_id"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "submit_verdict",
            "description": "Submit the answers to Q1, Q2 and Q3 with the probe ids that support them.",
            "parameters": {
                "type": "object",
                "properties": {
                    "q1_gold_fixes_issue": {"type": "boolean"},
                    "q2_tests_grade_issue": {
                        "type": ["string", "null"],
                        "enum": ["yes", "too_loose", "over_restrictive", None],
                    },
                    "q3_issue_states_requirements": {"type": ["boolean", "null"]},
                    "evidence": {"type": "array", "items": {"type": "string"}, "description": "probe ids"},
                    "rewritten_issue": {"type": ["string", "null"]},
                    "rationale": {"type": "string"},
                },
                "required": ["q1_gold_fixes_issue", "evidence", "rationale"],
                "additionalProperties": False,
            },
        },
    },
]
TOOL_NAMES = tuple(tool["function"]["name"] for tool in TOOLS)

NUDGE = (
    "Plain text is not read. Continue with a tool call: shell, grade_patch, differential, or submit_verdict with your "
    "answers and evidence."
)


def cut(text: str, limit: int) -> str:
    """Head and tail of ``text`` within ``limit`` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters omitted ...]\n{text[-half:]}"


def hidden_tests_text(task: Task) -> str:
    hidden = task.answer.hidden_tests
    files = "".join(f"\n--- file {path} ---\n{content}" for path, content in sorted(hidden.files.items()))
    return hidden.patch + files


def probe_view(probe: ProbeResult) -> dict:
    return {
        "probe_id": probe.probe_id,
        "kind": probe.kind,
        "origin": probe.origin,
        "operator": probe.operator,
        "description": probe.description,
        "reward": probe.reward,
        "reason": probe.reason,
        "differing": probe.differing[:10],
        "distinguishing": probe.distinguishing.model_dump() if probe.distinguishing else None,
        "likely_equivalent": probe.likely_equivalent,
        "patch": cut(probe.patch, PROBE_PATCH_CHARS),
    }


def render_task(task: Task, p1: Pipeline1Result, probes: Sequence[ProbeResult], section_chars: int) -> str:
    p2p = p1.pass_to_pass
    listed = ", ".join(p2p[:LISTED_PASS_TO_PASS]) + (
        f", ... ({len(p2p) - LISTED_PASS_TO_PASS} more)" if len(p2p) > LISTED_PASS_TO_PASS else ""
    )
    pipeline1 = "\n".join(
        [
            f"- FAIL_TO_PASS ({len(p1.fail_to_pass)}): {', '.join(p1.fail_to_pass) or 'none'}",
            f"- PASS_TO_PASS ({len(p2p)}): {listed or 'none'}",
            f"- flaky: {', '.join(p1.flaky) or 'none'}",
            f"- failing on gold: {', '.join(p1.gold_failing) or 'none'}",
            f"- binding assertions (file:line): {', '.join(p1.binding_assertions) or 'none'}",
            f"- decision: {p1.decision}{f' ({p1.reason})' if p1.reason else ''}",
        ]
    )
    probe_json = json.dumps([probe_view(p) for p in probes], indent=1)
    return f"""\
# Task {task.instance_id}
repo: {task.repo}
test command: {" && ".join(task.test_cmd)}

## Issue (what the agent reads)
<issue>
{cut(task.problem_statement, section_chars)}
</issue>

## Gold patch
<gold_patch>
{cut(task.answer.gold_patch, section_chars)}
</gold_patch>

## Hidden tests (applied after the candidate patch)
<hidden_tests>
{cut(hidden_tests_text(task), section_chars)}
</hidden_tests>

## Pipeline 1 (execution records, buggy and gold trees)
{pipeline1}

## Model-free probes (executed by the grader; cite by probe_id)
<probes>
{probe_json}
</probes>
"""


def render_messages(task: Task, p1: Pipeline1Result, probes: Sequence[ProbeResult], section_chars: int) -> list[dict]:
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": render_task(task, p1, probes, section_chars)},
    ]


# ------------------------------------------------------------------------------------------ strengthening

STRENGTHEN_SYSTEM_PROMPT = """\
You are the privileged judge of a software-engineering RL task whose hidden tests are too loose: the
wrong patches listed below pass them, and each behaves unlike the gold patch on some input. Your job is
to make the tests reject them without rejecting any correct fix of the issue.

Tools:
- propose_test: add one test function to a hidden test file. It runs through validation first (it must
  pass on gold in repeated runs, fail on the buggy tree, fail on at least one surviving wrong patch,
  pass on behaviour-preserving rewrites of gold, leave the other tests as they are, and name nothing
  that only the gold patch introduces); you see the outcome of every step. Write the test from the
  issue, never from the gold code: cite in `cites` the issue sentence(s) each assertion follows from,
  verbatim. A proposal that cites no sentence of the issue is rejected.
- review_test: for each model-free test listed under "Added tests", say whether the issue asks for the
  behaviour it asserts: relevant (cite the issue sentence(s) that ask for it) or irrelevant (it pins
  something the issue does not ask for; it is then dropped).
- finish: when every added test is reviewed and the wrong patches are rejected, or nothing more helps.
Reply with tool calls only; plain text is not read."""

STRENGTHEN_TOOLS: list[dict] = [
    {
        "type": "function",
        "function": {
            "name": "propose_test",
            "description": "Add one test to a hidden test file; it is validated before you see the outcome.",
            "parameters": {
                "type": "object",
                "properties": {
                    "file": {"type": "string", "description": "a hidden test file (path in the repository)"},
                    "code": {"type": "string", "description": "one test function, imports inside it if the file lacks them"},
                    "cites": {"type": "array", "items": {"type": "string"}, "description": "issue sentences, verbatim"},
                    "test_class": {"type": ["string", "null"], "description": "a unittest class to add the method to"},
                },
                "required": ["file", "code", "cites"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "review_test",
            "description": "Mark a model-free added test relevant (with the issue sentences that ask for it) or irrelevant.",
            "parameters": {
                "type": "object",
                "properties": {
                    "test_id": {"type": "string"},
                    "relevant": {"type": "boolean"},
                    "cites": {"type": "array", "items": {"type": "string"}, "description": "issue sentences, verbatim"},
                    "reason": {"type": "string"},
                },
                "required": ["test_id", "relevant"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "finish",
            "description": "End the strengthening session.",
            "parameters": {
                "type": "object",
                "properties": {"rationale": {"type": "string"}},
                "additionalProperties": False,
            },
        },
    },
]
STRENGTHEN_TOOL_NAMES = tuple(tool["function"]["name"] for tool in STRENGTHEN_TOOLS)
STRENGTHEN_NUDGE = "Plain text is not read. Continue with a tool call: propose_test, review_test or finish."


def added_test_view(test: AddedTest) -> dict:
    return {"test_id": test.test_id, "file": test.file, "code": test.code, "found_by": test.found_by,
            "relevance": test.relevance, "kept": not test.rejected_at, "kills": test.kills}  # fmt: skip


def render_strengthen(task: Task, survivors: Sequence[ProbeResult], tests: Sequence[AddedTest], sources: dict[str, str],
                      section_chars: int) -> list[dict]:  # fmt: skip
    """The strengthening session's messages: the issue, the hidden test files as they run, the wrong
    patches that pass them (with the inputs that tell them from gold) and the model-free tests added
    so far. Gold's code is not shown: the tests must follow from the issue."""
    files = "".join(f"\n--- file {path} ---\n{text}" for path, text in sorted(sources.items()))
    user = f"""\
# Task {task.instance_id}
repo: {task.repo}

## Issue (what the agent reads)
<issue>
{cut(task.problem_statement, section_chars)}
</issue>

## Hidden test files (FAIL_TO_PASS files, as they run)
<test_files>
{cut(files, section_chars)}
</test_files>

## Wrong patches that pass the hidden tests
<survivors>
{json.dumps([probe_view(p) for p in survivors], indent=1)}
</survivors>

## Added tests (model-free, validated; review each)
<added_tests>
{json.dumps([added_test_view(t) for t in tests], indent=1)}
</added_tests>
"""
    return [{"role": "system", "content": STRENGTHEN_SYSTEM_PROMPT}, {"role": "user", "content": user}]
