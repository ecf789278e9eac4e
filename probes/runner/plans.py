"""Selection: which tests each probe runs, in what order, and when tracing gold can pay for itself."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.records import Pipeline1Result, Task
from probes.generate import Candidate
from probes.runner.coverage import GoldCoverage
from probes.runner.impact import ALL, impacted_tests
from probes.workspace import Trees


def selection(p1: Pipeline1Result) -> list[str]:
    """The tests a probe is graded on first: FAIL_TO_PASS (where the binding assertions live)."""
    return [t for t in p1.fail_to_pass if t in p1.expected_status]


@dataclass
class Plan:
    """How one probe is graded: selected runs in order, then (``full``) a full grade unless one of them
    already decided the reward. No runs and no full grade: no test is impacted, reward 1 unrun."""

    runs: list[list[str]]
    full: bool
    inherited: int = 0  # tests that keep gold's status unrun when the selected runs decide
    stop_early: bool = True  # runs (the full grade too) stop at the first failure where that is sound
    why: str = ""  # why every test is impacted


def plan(p1: Pipeline1Result, impacted: set[str] | None, kind: str, why: str = "") -> Plan:
    """Plausible-but-wrong probes (mostly killed by the binding tests) run their impacted binding tests,
    then their other impacted tests; correct-but-different ones (mostly passing) run every impacted test
    in one run. A full grade only when every test is impacted or a run is inconclusive."""
    binding = selection(p1)
    if impacted is ALL:
        runs = [binding] if kind == "plausible_wrong" and binding else []
        return Plan(runs=runs, full=True, why=why)
    tests = [t for t in p1.expected_status if t in impacted]
    inherited = len(p1.expected_status) - len(tests)
    if kind == "plausible_wrong":
        first = [t for t in binding if t in impacted]
        runs = [run for run in (first, [t for t in tests if t not in first]) if run]
        return Plan(runs=runs, full=False, inherited=inherited)
    return Plan(runs=[tests] if tests else [], full=False, inherited=inherited)


MIN_TRACED_PROBES = 3
CHEAP_SUITE = "the suite's tests take less time than the rest of a test command: selection cannot pay"


def selection_pays(command_s: float, tests_s: float) -> bool:
    """From one full run of the suite in a session: ``command_s`` its command's time (fork to exit),
    ``tests_s`` its test cases' own time. A selected run skips tests, never the rest of a command (the
    fork, pytest's session, collecting the modules), so selection saves at most ``tests_s`` per probe
    while it costs a traced gold run and a second command for each wrong probe its binding tests do not
    kill: it can pay only when the tests take longer than the rest of a command. Else every probe gets
    the full suite in one command, stopping at its first failure where that is sound."""
    return tests_s > command_s - tests_s


def worth_tracing(candidates: Sequence[Candidate]) -> bool:
    """The traced gold run costs one full suite. It saves runs for the probes its binding tests do not
    decide (each then typically runs part of the suite instead of all of it), so it is recorded only for
    a task with at least MIN_TRACED_PROBES probes."""
    return len(candidates) >= MIN_TRACED_PROBES


def plan_probes(
    task: Task,
    candidates: Sequence[Candidate],
    p1: Pipeline1Result,
    coverage: GoldCoverage | None,
    tree: Path | None,
) -> list[Plan]:
    """Each candidate's plan, from its diff against the gold tree and the gold coverage (None: not
    recorded, every test impacted)."""
    if coverage is None or not coverage.usable or tree is None:
        why = "no gold coverage" if coverage is None or tree is None else f"coverage unusable: {coverage.why}"
        return [plan(p1, ALL, c.kind, why) for c in candidates]
    out = []
    with Trees(task, tree) as trees:
        for candidate in candidates:
            contents = trees.against_gold(candidate.patch)
            if contents is None:
                out.append(plan(p1, ALL, candidate.kind, "the probe or gold does not apply on the host"))
                continue
            impacted, why = impacted_tests(*contents, coverage)
            out.append(plan(p1, impacted, candidate.kind, why))
    return out
