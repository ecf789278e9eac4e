"""Scoring counterfactual patches with the one grader, cheaply and soundly.

Every probe is graded against Pipeline 1's gold pattern (``p1.expected_status``) under the exact-pattern
contract: reward 1 only when every test's status equals gold's. Any selected test that deviates from
gold therefore proves reward 0 (the full run holds that test to the same expectation). With
``selection`` (the default) a probe runs only the tests that can tell it apart from gold:

1. Change impact. Once per task, gold runs with the coverage plugin (``harness/grading/plugins/swedeck_coverage.py``)
   tracing the Python files gold changes: the lines each test ran, the functions it entered, and what
   ran outside any test (collection, imports, module bodies, wider-scoped fixtures, other threads),
   which counts for every test. ``impacted_tests`` maps the probe's diff against the gold tree to
   gold-tree statements: a changed statement, or the point where code was inserted or deleted, that a
   test ran under gold makes the test impacted. A test that ran none of them ran exactly gold's code up
   to the end, so it keeps gold's status without running (tests are deterministic: Pipeline 1 rejected
   flaky tasks). Anything the mapping cannot vouch for impacts every test: a change outside function
   bodies (module code, a ``def`` or ``class`` line, a decorator, a signature, a docstring, an import),
   a function that stops or starts being a generator, a changed statement that also ran outside any
   test, a file not traced (new, deleted, not Python, not parsed); a name whose scope changes (local,
   global, enclosing) impacts every caller of its function; a test that started a process or has no
   coverage record is always impacted; and coverage is not used at all when the traced gold run did not
   reproduce gold's pattern, lost its tracer or started a process outside a test. The traced run costs
   one suite, so it is recorded only for a task with enough probes to use it (``worth_tracing``), and
   in probe sessions only when one probe's full grade shows that the suite's tests take longer than
   the rest of a test command (``selection_pays``); else every probe gets the full suite in one
   command, stopping at its first failure where that is sound, and selection is never the slower.
2. The binding tests first. A plausible-but-wrong probe (usually killed by the FAIL_TO_PASS tests,
   where the binding assertions live) runs its impacted FAIL_TO_PASS tests first. A correct-but-
   different probe (usually passing) runs all its impacted tests in one run. Each run stops at its
   first failure (``--maxfail=1``) when none of its tests is expected to fail, since any failure is
   then a deviation. Within a run, the tests that killed the task's earlier probes go first, most
   kills first (``KillHistory``; the others keep gold's report order): probes of one task rewrite the
   same gold files, so what killed one tends to kill the next, and a stopping run stops sooner. Full
   grades keep pytest's own order. In probe sessions the probes' first runs go through mutant
   schemata where they can (``probes.schema``: one collection for many probes, each run in a fork of
   its own), before any kill is recorded, so in gold's order; the runs after them are as above. The patch not applying and a run hitting the time or output limit are final too
   (they do not depend on which tests run, or the full run would only take longer and print more). A
   run that is inconclusive (ran nothing, errored before a selected test reported, looked forged)
   hands the probe to a full grade.
3. The full grade is the final word where it matters. A probe whose impacted tests all reproduce gold
   gets reward 1 from the selection (the other tests keep gold's status), whatever its kind; the binding
   tests alone never prove reward 1, so a plausible-but-wrong probe they do not kill goes on to the rest
   of its impacted tests. A model-free reward 1 is evidence, not a verdict: a too-loose verdict must
   cite a patch that the judge's ``grade_patch`` (the one grader, full suite) scored 1 in its own
   transcript, so the full grade is the final word on every cited survivor. Reward 0 comes from an
   observed deviation, which is final. When every test is impacted, a probe gets a full grade. Full
   grades stop at the first failure too where that is sound (reward 1 still needs every test).

``ProbeResult`` says what ran: ``tests_run`` (every test executed, all runs together), ``executions``
(their count, repeats included), ``inherited`` (tests that kept gold's status unrun), ``decided_by``
(``selection`` or ``full``) and ``selected_reward`` (the verdict of the selected runs, None when none ran).

Limits of the impact mapping (the determinism it assumes): state one test leaves for another (a cache
an earlier test filled, a module-level value a test mutated) is invisible, and so are tests that read
source text or line numbers (``inspect``, tracebacks, warnings keyed by line). A test run in a subset,
or in another order, behaves as in the full run (the earlier binding-tests-first selection assumed the same).

Mutants loop forever now and then, so ``probe_task`` grades with a backend whose per-command timeout is
scaled to Pipeline 1's runs (``probe_timeout``) instead of the configured default.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from harness.config import SandboxConfig, Settings
from harness.grading.grader import grade, run_tests
from harness.grading.trusted import facts_key
from harness.grading.reports import BAD
from harness.records import Grade, Pipeline1Result, ProbeResult, Status, Task, content_hash
from harness.sandboxes.backends import get_backend
from harness.sandboxes.envs import prepare_tree
from harness.sandboxes.sandbox import EnvError
from probes.generate import Candidate
from probes.pool import SessionPool, step
from probes.runner.coverage import GoldCoverage, gold_coverage
from probes.runner.plans import CHEAP_SUITE, Plan, plan_probes, selection_pays, worth_tracing
from probes.session import Stats

TRUSTED_SELECTED_REASONS = {"pattern_mismatch", "patch_apply_failed", "forbidden_change", "timeout", "output_limit"}


def probe_id(task: Task, candidate: Candidate) -> str:
    return content_hash([task.instance_id, candidate.kind, candidate.operator, candidate.patch])


def _selected_verdict_is_final(g: Grade, select: Sequence[str]) -> bool:
    if g.reward != 0 or g.reason not in TRUSTED_SELECTED_REASONS:
        return False
    if g.reason != "pattern_mismatch":
        return True
    # a selected test that ran and did not reproduce gold's status
    return any(test_id in g.statuses and test_id in g.differing for test_id in select)


def _all_matched(g: Grade, select: Sequence[str]) -> bool:
    return g.reward == 1 and all(test_id in g.statuses for test_id in select)


def _maxfail(tests: Iterable[str], expected: Mapping[str, Status]) -> int | None:
    """Stop at the first failure when none of ``tests`` is expected to fail: a failure is then a deviation."""
    return None if any(expected.get(t) in BAD for t in tests) else 1


class KillHistory:
    """How often each test killed one of a task's probes so far; shared by the probes graded at once."""

    def __init__(self, expected: Mapping[str, Status]) -> None:
        self.position = {test_id: i for i, test_id in enumerate(expected)}  # gold's report order
        self.kills: Counter[str] = Counter()
        self.lock = threading.Lock()

    def order(self, tests: Sequence[str]) -> list[str]:
        """``tests``, the ones that killed most first, the rest in gold's report order."""
        with self.lock:
            kills = dict(self.kills)
        return sorted(tests, key=lambda test_id: (-kills.get(test_id, 0), self.position.get(test_id, len(self.position))))

    def record(self, killers: Iterable[str]) -> None:
        with self.lock:
            self.kills.update(killers)


def _differing(g: Grade, stopped: bool) -> list[str]:
    """The tests that deviated; after a run stopped at its first failure, only those that ran (the
    ones it never reached are not evidence)."""
    if stopped:
        ran = sorted(t for t in g.differing if t in g.statuses)
        if ran:
            return ran
    return sorted(g.differing)


def run_one(
    task: Task,
    candidate: Candidate,
    backend,  # noqa: ANN001 - harness.sandboxes.sandbox.Backend
    expected: dict[str, Status],
    select: Sequence[str] | Plan,
    stamp: dict[str, str],
    log_dir: Path | None,
    grader=grade,  # noqa: ANN001 - harness.grading.grader.grade or a probe session pool's grade
    history: KillHistory | None = None,
) -> ProbeResult:
    """Grade one probe by its plan (see the module docstring); ``select`` may also be a plain list of
    tests to run first, followed by a full grade. ``history``: the task's kills so far, which order each
    selected run and which this probe's kill adds to."""
    if not isinstance(select, Plan):
        select = Plan(runs=[list(select)] if select else [], full=True, stop_early=False)
    executions, ran = 0, {}
    selected_reward, final, decided_by, stopped = None, None, "full", False
    last: Grade | None = None
    for tests in select.runs:
        tests = history.order(tests) if history is not None else tests
        maxfail = _maxfail(tests, expected) if select.stop_early else None
        g = grader(task, candidate.patch, backend, expected=expected, select=tests, maxfail=maxfail, log_dir=log_dir)
        executions += len(g.statuses)
        ran.update(dict.fromkeys(g.statuses))
        last = g
        if _selected_verdict_is_final(g, tests):
            selected_reward, final, decided_by, stopped = 0.0, g, "selection", maxfail is not None
            break
        if not _all_matched(g, tests):
            selected_reward = g.reward
            break  # inconclusive: the full grade decides
        selected_reward = 1.0
    else:
        if select.runs or not select.full:
            selected_reward = 1.0
        if not select.full:  # every impacted test reproduced gold; the others keep gold's status
            decided_by = "selection"
            final = last or Grade(
                instance_id=task.instance_id, backend=getattr(backend, "name", ""), reward=1.0, reason="ok",
                statuses={}, expected=expected,
            )  # fmt: skip
    if final is None:
        maxfail = _maxfail(expected, expected) if select.stop_early else None
        final = grader(task, candidate.patch, backend, expected=expected, maxfail=maxfail, log_dir=log_dir)
        executions += len(final.statuses)
        ran.update(dict.fromkeys(final.statuses))
        decided_by, stopped = "full", maxfail is not None
    passed = final.reward == 1.0
    differing = [] if passed else _differing(final, stopped)
    if history is not None and final.reason == "pattern_mismatch":
        history.record(differing)
    return ProbeResult(
        **stamp,
        probe_id=probe_id(task, candidate),
        kind=candidate.kind,
        origin="model_free",
        operator=candidate.operator,
        description=candidate.description,
        patch=candidate.patch,
        reward=final.reward,
        reason="ok" if passed else final.reason,
        selected_reward=selected_reward,
        executions=executions,
        differing=differing,
        log_path=final.log_path,
        tests_run=list(ran),
        decided_by=decided_by,
        inherited=select.inherited if decided_by == "selection" and passed else 0,
    )


class Primed:
    """A grader (``grade``'s signature) that first gives the runs answered ahead (``SessionPool.schema_grades``:
    keyed by patch, the run's tests as a set or None for all, and maxfail), each once, and asks
    ``grader`` for every other run."""

    def __init__(self, grader, answers: dict) -> None:  # noqa: ANN001 - a grader as run_one takes it
        self.grader, self.answers = grader, dict(answers)

    def __call__(self, task: Task, patch: str, backend, *, expected: dict[str, Status], select=None, maxfail=None, log_dir=None) -> Grade:  # noqa: ANN001
        found = self.answers.pop(step(patch, select, maxfail), None)
        if found is not None:
            return found
        return self.grader(task, patch, backend, expected=expected, select=select, maxfail=maxfail, log_dir=log_dir)


def first_step(candidate: Candidate, plan: Plan, expected: Mapping[str, Status]) -> tuple[str, list[str] | None, int | None] | None:
    """The first run ``run_one`` gives the probe (patch, tests or None for all, maxfail), with no kills
    recorded yet; None where the plan runs nothing."""
    if plan.runs:
        tests = plan.runs[0]
        return candidate.patch, tests, _maxfail(tests, expected) if plan.stop_early else None
    if plan.full:
        return candidate.patch, None, _maxfail(expected, expected) if plan.stop_early else None
    return None


_CLEAN: dict[str, bool] = {}  # facts key -> whether gold, graded as a candidate is, earned 1
_CLEAN_LOCK = threading.Lock()


def gold_grades_clean(task: Task, backend) -> bool:  # noqa: ANN001 - harness.sandboxes.sandbox.Backend
    """Whether gold, graded as a candidate's patch is (canaries, the run-time guard, the audit
    zeroing), earns 1: what probe sessions, which run none of that, rely on. Their probes are our
    rewrites of gold's files, so they carry no code of their own that forges, but they carry gold's:
    a corpus's gold that forges at run time, with nothing a reader of the source sees (Pipeline 1
    runs gold instrumented, without the guard), would make every probe pass in a session while
    ``grade`` gives each 0. Once per task and backend."""
    key = facts_key(task, backend)
    with _CLEAN_LOCK:
        known = _CLEAN.get(key)
    if known is None:
        try:
            known = grade(task, task.answer.gold_patch, backend).reward == 1.0
        except EnvError:  # no usable gold pattern: a gold run the grader calls forged, or tampered
            known = False
        with _CLEAN_LOCK:
            _CLEAN[key] = known
    return known


def run_probes(
    task: Task,
    candidates: Sequence[Candidate],
    backend,  # noqa: ANN001 - harness.sandboxes.sandbox.Backend
    p1: Pipeline1Result,
    stamp: dict[str, str],
    *,
    selection: bool = True,
    log_dir: Path | None = None,
    workers: int = 1,
    timeout_s: float | None = None,
    coverage: GoldCoverage | None = None,
    tree: Path | None = None,
    sessions: bool = True,
    stats: Stats | None = None,
    coverage_cache: Path | None = None,
    schemata: bool = True,
) -> list[ProbeResult]:
    """Grade each candidate against Pipeline 1's gold pattern; results in candidate order.

    ``selection`` grades each probe on the tests its change can impact, binding tests first, with a
    full grade as the final word where the module docstring says; without it every probe gets a full
    grade. ``coverage`` is the task's gold coverage; when not given it is recorded here if it can pay
    for itself (``worth_tracing``), cached in ``coverage_cache`` when given. ``tree`` is the buggy tree (prepared when not given). ``workers``
    grades that many candidates at once; ``timeout_s`` replaces the backend's per-command timeout.
    With ``sessions`` (the default) the probes are graded in probe sessions (``probes.session``: one
    prepared sandbox per worker, start-up paid once per task; ``stats`` collects what they did),
    else each by ``harness.grading.grader.grade`` in a sandbox of its own; the rewards are the same.
    Sessions only where gold grades clean as a candidate would (``gold_grades_clean``).
    With ``schemata`` (and sessions) the probes' first runs go through mutant schemata where they can
    (``probes.schema``): one collection of the suite for up to BATCH probes.
    """
    if timeout_s is not None:
        backend = with_timeout(backend, timeout_s)
    expected = {test_id: Status(status) for test_id, status in p1.expected_status.items()}
    if not candidates:
        return []
    plans = [Plan(runs=[], full=True, stop_early=False)] * len(candidates)  # the plain full grade
    tree = tree or prepare_tree(task, getattr(backend, "settings", None) or Settings.from_env())
    pool = SessionPool(task, backend, tree, workers, stats) if sessions and gold_grades_clean(task, backend) else None
    if pool is not None:
        pool.expect([c.patch for c in candidates])
    measured: dict[int, ProbeResult] = {}  # a probe graded in full to measure the suite
    history = KillHistory(expected)

    grader = pool.grade if pool else grade

    def one(item: tuple[Candidate, Plan]) -> ProbeResult:
        return run_one(task, item[0], backend, expected, item[1], stamp, log_dir, grader, history)

    try:
        if selection:
            cheap = False
            if coverage is None and worth_tracing(candidates):
                if pool is not None:  # a correct alternative usually passes: its full grade runs every test
                    first = next((i for i, c in enumerate(candidates) if c.kind == "correct_alternative"), 0)
                    before = (pool.stats.graded, pool.stats.command_s, pool.stats.tests_s)
                    measured[first] = one((candidates[first], Plan(runs=[], full=True, stop_early=False)))
                    ran, command_s, tests_s = (now - then for now, then in zip(
                        (pool.stats.graded, pool.stats.command_s, pool.stats.tests_s), before, strict=True))  # fmt: skip
                    cheap = ran > 0 and not selection_pays(command_s, tests_s)
                if not cheap:
                    coverage = gold_coverage(
                        task, backend, p1, log_dir=log_dir, tree=tree, cache_dir=coverage_cache,
                        runner=pool.run_tests if pool else run_tests,
                    )  # fmt: skip
                    if stats is not None:
                        stats.add(traced=coverage.executions)
            plans = [Plan(runs=[], full=True, why=CHEAP_SUITE)] * len(candidates) if cheap else plan_probes(task, candidates, p1, coverage, tree)
        todo = [(c, p) for i, (c, p) in enumerate(zip(candidates, plans, strict=True)) if i not in measured]
        if pool is not None and schemata:
            steps = [step for c, p in todo if (step := first_step(c, p, expected)) is not None]
            grader = Primed(pool.grade, pool.schema_grades(task, backend, expected, steps, log_dir))
        # a session holds DEPTH jobs however few the workers, so its server never waits on the host; but
        # a selected run is ordered by the kills so far, so where probes have selected runs each waits
        # for the ones handed over before it (a full grade keeps pytest's order: nothing to wait for)
        at_once = pool.threads if pool is not None and not any(p.runs for _, p in todo) else workers
        if at_once <= 1:
            graded = [one(item) for item in todo]
        else:
            with ThreadPoolExecutor(max_workers=at_once) as threads:
                graded = list(threads.map(one, todo))
        rest = iter(graded)
        return [measured[i] if i in measured else next(rest) for i in range(len(candidates))]
    finally:
        if pool is not None:
            pool.close()


def with_timeout(backend, timeout_s: float):  # noqa: ANN001, ANN201 - harness.sandboxes.sandbox.Backend
    """The same kind of backend with another per-command timeout (both backends keep their
    SandboxConfig and Settings); the backend itself when it exposes neither."""
    config, settings = getattr(backend, "config", None), getattr(backend, "settings", None)
    if not isinstance(config, SandboxConfig) or settings is None or config.limits.timeout_s <= timeout_s:
        return backend
    limits = config.limits.model_copy(update={"timeout_s": timeout_s})
    return get_backend(config.model_copy(update={"limits": limits}), settings)
