"""Scoring counterfactual patches with the one grader, cheaply.

Every probe is graded against Pipeline 1's gold pattern (``p1.expected_status``) under the
exact-pattern contract: reward 1 only when every test's status equals gold's. That makes a cheap
first pass sound: grade with ``select=`` the FAIL_TO_PASS tests (the tests that hold the binding
assertions); a selected test whose status differs from gold's already proves the full reward is 0,
because the full run holds that same test to that same expectation. Only when the selected tests all
match (or the selected run is inconclusive) does the full suite run, and it is the final word.

A selected verdict is trusted only when it is a real mismatch on a selected test that ran; when the
patch did not apply (which does not depend on the tests); or when the selected run hit the time or
output limit (the full run executes the same tests in the same single command under the same limits,
so it can only take longer and print more). A selected run that ran nothing, errored before any
selected test reported, or looked forged falls through to the full run.

Mutants loop forever now and then, so ``probe_task`` grades with a backend whose per-command timeout
is scaled to Pipeline 1's runs (``probe_timeout``) instead of the configured default.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from harness.config import SandboxConfig, Settings
from harness.envs import prepare_tree
from harness.grader import grade
from harness.records import Grade, Pipeline1Result, ProbeResult, Status, Task, content_hash
from harness.sandbox import get_backend
from probes.generate import Candidate, correct_alternatives, plausible_wrong

TRUSTED_SELECTED_REASONS = {"pattern_mismatch", "patch_apply_failed", "timeout", "output_limit"}
TIMEOUT_FLOOR_S = 30.0  # a probe's per-command timeout is at least this ...
TIMEOUT_FACTOR = 10.0  # ... or this many times one Pipeline 1 test run, whichever is larger


def probe_id(task: Task, candidate: Candidate) -> str:
    return content_hash([task.instance_id, candidate.kind, candidate.operator, candidate.patch])


def selection(p1: Pipeline1Result) -> list[str]:
    """The tests a probe is graded on first: FAIL_TO_PASS (where the binding assertions live)."""
    return [t for t in p1.fail_to_pass if t in p1.expected_status]


def _selected_verdict_is_final(g: Grade, select: Sequence[str]) -> bool:
    if g.reward != 0 or g.reason not in TRUSTED_SELECTED_REASONS:
        return False
    if g.reason != "pattern_mismatch":
        return True
    # a selected test that ran and did not reproduce gold's status
    return any(test_id in g.statuses and test_id in g.differing for test_id in select)


def run_one(
    task: Task,
    candidate: Candidate,
    backend,  # noqa: ANN001 - harness.sandbox.Backend
    expected: dict[str, Status],
    select: Sequence[str],
    stamp: dict[str, str],
    log_dir: Path | None,
) -> ProbeResult:
    executions = 0
    selected_reward = None
    final: Grade | None = None
    if select:
        quick = grade(task, candidate.patch, backend, expected=expected, select=list(select), log_dir=log_dir)
        executions += len(quick.statuses)
        selected_reward = quick.reward
        if _selected_verdict_is_final(quick, select):
            final = quick
    if final is None:
        final = grade(task, candidate.patch, backend, expected=expected, log_dir=log_dir)
        executions += len(final.statuses)
    return ProbeResult(
        **stamp,
        probe_id=probe_id(task, candidate),
        kind=candidate.kind,
        origin="model_free",
        operator=candidate.operator,
        description=candidate.description,
        patch=candidate.patch,
        reward=final.reward,
        reason=final.reason,
        selected_reward=selected_reward,
        executions=executions,
        differing=sorted(final.differing),
        log_path=final.log_path,
    )


def run_probes(
    task: Task,
    candidates: Sequence[Candidate],
    backend,  # noqa: ANN001 - harness.sandbox.Backend
    p1: Pipeline1Result,
    stamp: dict[str, str],
    *,
    selection: bool = True,
    log_dir: Path | None = None,
    workers: int = 1,
    timeout_s: float | None = None,
) -> list[ProbeResult]:
    """Grade each candidate against Pipeline 1's gold pattern; results in candidate order.

    ``selection`` grades the FAIL_TO_PASS tests first and skips the full run when they already
    prove reward 0; ``workers`` grades that many candidates at once (each grade is its own sandbox);
    ``timeout_s`` replaces the backend's per-command timeout.
    """
    if timeout_s is not None:
        backend = with_timeout(backend, timeout_s)
    expected = {test_id: Status(status) for test_id, status in p1.expected_status.items()}
    select = _selection(p1) if selection else []
    if not candidates:
        return []

    def one(candidate: Candidate) -> ProbeResult:
        return run_one(task, candidate, backend, expected, select, stamp, log_dir)

    if workers <= 1:
        return [one(c) for c in candidates]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(one, candidates))


_selection = selection  # run_probes' keyword argument shadows the function's name


def with_timeout(backend, timeout_s: float):  # noqa: ANN001, ANN201 - harness.sandbox.Backend
    """The same kind of backend with another per-command timeout (both backends keep their
    SandboxConfig and Settings); the backend itself when it exposes neither."""
    config, settings = getattr(backend, "config", None), getattr(backend, "settings", None)
    if not isinstance(config, SandboxConfig) or settings is None or config.limits.timeout_s <= timeout_s:
        return backend
    limits = config.limits.model_copy(update={"timeout_s": timeout_s})
    return get_backend(config.model_copy(update={"limits": limits}), settings)


def probe_timeout(p1: Pipeline1Result) -> float:
    """Per-command timeout for probes: TIMEOUT_FACTOR x one Pipeline 1 test run, at least the floor."""
    per_run = p1.duration_s / max(p1.runs, 1)
    return max(TIMEOUT_FLOOR_S, TIMEOUT_FACTOR * per_run)


def generate(task: Task, tree: Path, p1: Pipeline1Result) -> list[Candidate]:
    return plausible_wrong(task, tree, p1.fail_to_pass) + correct_alternatives(task, tree)


def probe_task(
    task: Task,
    backend,  # noqa: ANN001 - harness.sandbox.Backend
    p1: Pipeline1Result,
    stamp: dict[str, str],
    *,
    selection: bool = True,
    log_dir: Path | None = None,
    workers: int = 1,
    timeout_s: float | None = None,
) -> list[ProbeResult]:
    """Generate the model-free probes of a task Pipeline 1 kept, and grade them (per-command timeout
    ``timeout_s``, default ``probe_timeout(p1)``). A rejected task has no gold pattern to hold probes
    to, so it gets none."""
    if p1.decision != "keep" or not p1.expected_status:
        return []
    backend.prepare(task)
    settings = getattr(backend, "settings", None) or Settings.from_env()
    tree = prepare_tree(task, settings)
    return run_probes(
        task, generate(task, tree, p1), backend, p1, stamp, selection=selection, log_dir=log_dir, workers=workers,
        timeout_s=probe_timeout(p1) if timeout_s is None else timeout_s,
    )  # fmt: skip
