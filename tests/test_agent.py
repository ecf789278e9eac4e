"""The agent loop: two tools, explicit submit, raw-turn check before execution, gated reward.

A scripted engine (the package's test double) plays realistic turns; the sandbox, the tools and the
grader are the real ones.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from harness.agent.loop import AgentConfig, rollout, shown, str_replace
from harness.agent.engine import ByteTokenizer, EngineError, ScriptedEngine
from harness.grading.grader import grade
from harness.records import Task, TrajectoryRecord
from harness.sandboxes.sandbox import Backend, EnvError
from harness.agent.turns import render_turn

TASK = "sample__toposort-1"
STAMP = {"config_hash": "test", "task_hash": "test", "instance_id": TASK}


def turn(name: str, **args: str) -> str:
    return render_turn("Let me act.", "", name, args)


def gold_edits(patch: str) -> list[str]:
    """The gold patch as edit_via_str_replace turns: each hunk's old side replaced by its new side."""
    turns = []
    for section in re.split(r"(?m)^diff --git ", patch)[1:]:
        path = re.search(r"(?m)^\+\+\+ b/(.+)$", section).group(1)
        for hunk in re.split(r"(?m)^@@.*@@.*\n", section)[1:]:
            lines = hunk.splitlines(keepends=True)
            old = "".join(line[1:] for line in lines if line[:1] in (" ", "-"))
            new = "".join(line[1:] for line in lines if line[:1] in (" ", "+"))
            turns.append(turn("edit_via_str_replace", path=path, old_str=old, new_str=new))
    return turns


def run(task: Task, backend: Backend, turns: list[str], **config: object) -> TrajectoryRecord:
    engine = ScriptedEngine(turns)
    return rollout(
        task, engine, backend, lambda t, p: grade(t, p, backend).reward,
        config=AgentConfig(**config), stamp=STAMP, rollout_id="r0", group_id="g0",
    )  # fmt: skip


@pytest.fixture
def toposort(sample_tasks: dict[str, Task]) -> Task:
    return sample_tasks[TASK]


# ------------------------------------------------------------------------------------------ pure pieces


@pytest.mark.parametrize(
    ("text", "old", "new", "want", "error"),
    [
        ("a = 1\nb = 2\n", "b = 2", "b = 3", "a = 1\nb = 3\n", ""),
        ("x\nx\n", "x", "y", None, "found 2 times"),
        ("x\n", "z", "y", None, "not found"),
        ("x\n", "", "y", None, "empty"),
        # exact bytes: a tab is not four spaces, and leading indentation is not stripped
        ("\tif x:\n\t\treturn 1\n", "    if x:", "    if y:", None, "not found"),
        ("\tif x:\n\t\treturn 1\n", "\t\treturn 1", "\t\treturn 2", "\tif x:\n\t\treturn 2\n", ""),
    ],
)
def test_str_replace_is_exact_once(text: str, old: str, new: str, want: str | None, error: str) -> None:
    got, why = str_replace(text, old, new)
    assert got == want
    assert error in why


def test_shown_keeps_head_and_tail() -> None:
    output = "HEAD" + "x" * 50_000 + "TAIL"
    view = shown(output, 1000)
    assert view.startswith("HEAD") and view.endswith("TAIL") and "omitted" in view
    assert len(view) < 1100
    assert shown("short", 1000) == "short"


# ------------------------------------------------------------------------------------------ rollouts


def test_scripted_agent_solves_through_the_two_tools(toposort: Task, backend: Backend) -> None:
    turns = [turn("execute_bash", command="grep -n '_deps\\[node\\].append' toposort/graph.py")]
    edits = gold_edits(toposort.answer.gold_patch)
    record = run(toposort, backend, turns + edits + [turn("submit")])
    assert record.termination == "submitted", record.detail
    assert record.grader_reward == 1.0 and record.reward == 1.0
    first = record.turns[0]
    assert "self._deps[node].append(dependency)" in first.output and "[exit code 0]" in first.output
    assert [t.call.name for t in record.turns] == ["execute_bash"] + ["edit_via_str_replace"] * len(edits) + ["submit"]
    assert all(t.output == "edited toposort/graph.py" for t in record.turns[1:-1])
    # the trajectory keeps the sampled tokens themselves
    tok = ByteTokenizer()
    assert all(tok.decode(t.token_ids) == t.raw and len(t.logprobs) == len(t.token_ids) for t in record.turns)
    assert "if dependency not in self._deps[node]" in record.patch


def test_hidden_tests_are_not_in_the_agents_sandbox(toposort: Task, backend: Backend) -> None:
    added = re.findall(r"(?m)^\+\s*def (test_\w+)", toposort.answer.hidden_tests.patch)
    assert added, "the hidden tests of this task add test functions"
    record = run(toposort, backend, [turn("execute_bash", command="grep -rn 'def test_' . || true"), turn("submit")])
    listing = record.turns[0].output
    assert "def test_" in listing  # the tree's own tests are there
    assert not [name for name in added if f"def {name}(" in listing]


@pytest.mark.parametrize(
    ("ending", "reason"),
    [
        (["I believe the fix is complete.<|im_end|>"], "malformed_turn"),  # no submit call
        ([turn("execute_bash", command="ls"), turn("execute_bash", command="ls")], "repeated_call"),
    ],
)
def test_solved_but_not_submitted_earns_zero(toposort: Task, backend: Backend, ending: list[str], reason: str) -> None:
    turns = gold_edits(toposort.answer.gold_patch) + ending + [turn("submit")]
    record = run(toposort, backend, turns)
    assert record.termination == reason
    assert record.reward == 0.0 and record.grader_reward is None
    assert "if dependency not in self._deps[node]" in record.patch  # the fix was there all along


def test_turn_budget_ends_with_max_turns(toposort: Task, backend: Backend) -> None:
    turns = [turn("execute_bash", command=f"echo {i}") for i in range(10)] + [turn("submit")]
    record = run(toposort, backend, turns, max_turns=3)
    assert record.termination == "max_turns" and record.reward == 0.0
    assert len(record.turns) == 3
    assert record.turns[-1].output == ""  # the last allowed turn's call is not executed


def test_token_budget_ends_with_max_tokens(toposort: Task, backend: Backend) -> None:
    turns = [turn("execute_bash", command=f"echo {i}") for i in range(30)]
    record = run(toposort, backend, turns, max_tokens=1600)
    assert record.termination == "max_tokens" and record.reward == 0.0


def test_duplicated_destructive_command_never_runs(toposort: Task, backend: Backend) -> None:
    raw = (
        "Clean up.\n</think>\n\n<tool_call>\n<function=execute_bash>\n"
        "<parameter=command>\nls\n</parameter>\n<parameter=command>\nrm -rf toposort\n</parameter>\n"
        "</function>\n</tool_call><|im_end|>"
    )
    record = run(toposort, backend, [raw])
    assert record.termination == "malformed_turn"
    assert record.turns[0].check_error == "duplicated_parameter" and record.turns[0].call is None
    assert record.patch == ""  # neither value ran: the tree is untouched


def test_engine_failure_ends_with_env_error(toposort: Task, backend: Backend) -> None:
    class Down:
        tokenizer = ByteTokenizer()

        def generate(self, *args: object, **kwargs: object) -> None:
            raise EngineError("connection refused")

        def end_session(self, session: str) -> None:
            pass

    grader: Callable[[Task, str], float] = lambda t, p: 1.0
    record = rollout(toposort, Down(), backend, grader, config=AgentConfig(), stamp=STAMP, rollout_id="r", group_id="g")
    assert record.termination == "env_error" and "connection refused" in record.detail and record.reward == 0.0


def test_regression_a_grader_failing_for_the_machine_ends_with_env_error(toposort: Task, backend: Backend) -> None:
    """The loop called the grader outside its error handling: an environment that failed while
    grading (a gold run with no usable pattern) crashed the rollout instead of recording it."""

    def broken(task: Task, patch: str) -> float:
        raise EnvError(f"{task.instance_id}: the gold run gave no usable pattern (no test passed)")

    engine = ScriptedEngine([turn("submit")])
    record = rollout(toposort, engine, backend, broken, config=AgentConfig(), stamp=STAMP, rollout_id="r", group_id="g")
    assert record.termination == "env_error" and "no usable pattern" in record.detail and record.reward == 0.0
