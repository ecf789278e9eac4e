"""The grader: the one function that turns (task, candidate patch) into test statuses and a reward.

Pipeline 1, every probe, the judge's tools, strengthening validation and RL rewards all call it.

The trust boundary: the candidate's files are data until the test command starts. In a fresh sandbox
the candidate patch is applied alone (patch tools only; no interpreter, git config, attributes or
hooks from the tree run), with the harness's own listing of the tree taken before and after. From the
two listings the host decides whether the change is allowed at all (``harness.grading.capabilities``: regular
files with ordinary content outside the tests' places, nothing Python or pytest would load first;
anything else is ``forbidden_change``), then (``harness.grading.trusted``) puts back the configuration pytest
shares with packaging as the pristine tree had it, and writes the hidden tests, with a few canary
tests planted among them (every real test among must-fail twins, each file in one layout with neutral
names, ``harness.grading.canaries``), from the task record.
What the change added to the files it touched is read, never run, for code reaching into the runner or
the interpreter (``harness.grading.tamper``: ``tamper_suspected``). pytest then runs with plugin
autoloading off and exactly the environment's plugins enabled, and no process of the sandbox
surviving a command. Statuses come from JUnit XML where the runner is
pytest, cross-checked against the text summary, the exit code, what each call raised and the
canaries (``harness.grading.reports``). Reward 1 only when the statuses equal the expected pattern
exactly and nothing suggests the output was forged (``harness.grading.verdict``); anything that goes
wrong is a reason with reward 0, never an exception.
"""

from __future__ import annotations

import random
import secrets
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path

from harness.config import SandboxConfig, Settings
from harness.grading import canaries, guard as runtime_guard, tamper
from harness.grading.canaries.pool import Pool, canary_pool
from harness.grading.capabilities import describe, listed_tree, patch_violations, violations
from harness.grading.handover import Held, preload_word
from harness.grading.parsers import resolve_parser, uses_junit
from harness.grading.patching import APPLY_STRATEGIES, apply_patch
from harness.grading.reports import Budget, command_statuses, forged_passes, read_instrumentation, read_junit, read_raised
from harness.grading.shipping import PLUGIN_PATH, ship
from harness.grading.tree import LISTING, Entry, TaskFacts, parse_listing
from harness.grading.trusted import (File, archive, decode, facts_key, install_command, install_failed, installing, plan,
                                     tamper_findings, task_facts, write_names)
from harness.grading.verdict import TamperMode, compare
from harness.names import file_name, write_whole
from harness.records import CanaryStrength, Grade, Status, Task, TestRun, content_hash
from harness.sandboxes.sandbox import IO_DIR, Backend, EnvError, Sandbox, SandboxError, Unreadable, tail


class _Stages:
    """Wall time per stage of a grade, into ``durations`` (what benchmarks/grader_overhead.py prints):
    each mark charges the time since the previous one to its stage."""

    def __init__(self, durations: dict[str, float]) -> None:
        self.durations = durations
        self.last = time.monotonic()

    def mark(self, stage: str) -> None:
        now = time.monotonic()
        self.durations[stage] = round(self.durations.get(stage, 0.0) + now - self.last, 4)
        self.last = now


def run_tests(
    task: Task,
    patch: str,
    backend: Backend,
    *,
    log_dir: Path | None = None,
    network: bool = False,
    instrument: bool = False,
    select: Sequence[str] | None = None,
    coverage: Sequence[str] | None = None,
    maxfail: int | None = None,
    observe: Sequence[str] | None = None,
) -> TestRun:
    """Everything up to the statuses; no expectation involved. EnvError propagates (the environment,
    not the patch, is at fault); anything else that fails is a recorded outcome. ``instrument`` loads
    the assertion plugin and returns its events with the hidden test sources they refer to (and plants
    no canaries: the files are run as the task has them, so lines and names are the assertions').
    ``select`` runs only those pytest node ids (other runners ignore it and run everything).
    ``coverage`` loads the coverage plugin tracing those paths (relative to the workdir) and returns
    its records. ``maxfail`` stops pytest after that many failed tests (``--maxfail``; other runners
    ignore it). ``observe`` loads the observation plugin watching those functions (``path::qualname``)
    and returns its records. Coverage and observation are our own runs of gold and probes, never a
    candidate's reward, and their records name the task's tests and lines: no canaries either."""
    started = time.monotonic()
    durations: dict[str, float] = {}
    try:
        key = facts_key(task, backend)
        facts = task_facts(task, backend, key=key)
        # an observed run's records are the evidence: copies of the tests, drawn at random per run, would
        # add calls of their own and make two observations of one tree differ
        plants = not instrument and observe is None and coverage is None and canaries.usable(task.test_cmd)
        pool = _canary_pool(task, facts, backend, key) if plants else None
        selected = canaries.runs(task.test_cmd, select)
        draw = None if pool is None else (lambda texts, rng: canaries.plant(texts, rng, pool.twinned, selected, task.answer.fail_to_pass, pool.inputs))
        bound = None if pool is None else (lambda planting: canaries.bound(planting, pool.passing, task.answer.fail_to_pass, selected))
        sandbox = backend.open(task, network=network)
    except EnvError:
        raise
    except Exception as err:  # an engine that does not answer: the machine's fault, recorded as such
        return TestRun(instance_id=task.instance_id, backend=backend.name, outcome="sandbox_error", detail=f"{type(err).__name__}: {err}")
    durations["open"] = round(time.monotonic() - started, 4)
    try:
        log_dir = log_dir or Settings.from_env().cache_dir / "logs"
        return _run_in(
            sandbox, task, facts, patch, durations, log_dir, instrument, select, coverage, maxfail, observe, draw=draw, key=key, bound=bound
        )
    except SandboxError as err:
        return TestRun(instance_id=task.instance_id, backend=backend.name, outcome="sandbox_error", detail=str(err))
    except EnvError:
        raise
    except Exception as err:  # whatever the candidate's files did to us, the answer is a grade
        detail = f"{type(err).__name__}: {err}\n{traceback.format_exc()[-1500:]}"
        return TestRun(instance_id=task.instance_id, backend=backend.name, outcome="grader_error", detail=detail)
    finally:
        closing = time.monotonic()
        sandbox.close()
        durations["close"] = round(time.monotonic() - closing, 4)  # the dict the returned run holds


def _run_in(
    sandbox: Sandbox,
    task: Task,
    facts: TaskFacts,
    patch: str,
    durations: dict[str, float],
    log_dir: Path,
    instrument: bool,
    select: Sequence[str] | None,
    coverage: Sequence[str] | None = None,
    maxfail: int | None = None,
    observe: Sequence[str] | None = None,
    *,
    draw: Callable[[dict[str, bytes], random.Random], canaries.Planting] | None = None,
    key: str,
    bound: Callable[[canaries.Planting], float] | None = None,
    raw: bool = False,
) -> TestRun:
    """``draw``: what to plant in the hidden test files (``canaries.plant`` over the validated twins,
    or the trial's); None plants none. ``key``: the task's facts key, under which the fresh tree's
    listing is kept once one grade has taken it. ``bound``: the planting's forgery bound. ``raw``:
    statuses as reported, under the neutral names, with what each call raised (the trial reads its
    twins from them)."""
    clock = _Stages(durations)
    run = TestRun(instance_id=task.instance_id, backend=sandbox.backend, outcome="ok")
    token = secrets.token_hex(8)  # unguessable paths, so code under test cannot pre-write them
    if facts.hidden_error:
        return run.model_copy(update={"outcome": "hidden_tests_apply_failed", "detail": facts.hidden_error})
    paths, budget = _Paths(token), Budget()  # the budget: the host's work on this grade, from the change's judgement on
    if refused := patch_violations(patch):  # past a cap: nothing is applied at all
        return run.model_copy(update={"outcome": "forbidden_change", "detail": describe(refused)})
    # every fresh sandbox of a task holds the same tree (same files, modes, sizes, mtimes), so its
    # listing, taken before anything of a candidate ran, serves every later grade of the task
    pristine = _PRISTINE.get(key)
    first = "" if pristine is not None else f"{LISTING} > {sandbox.output(f'{paths.listings}-before')}"
    then, prefetch = f"{LISTING} > {sandbox.output(f'{paths.listings}-after')}", ""
    named = sorted(tamper.named_paths(patch))
    if named:  # the audit's files, read as the listing saw them: nothing ran in between
        prefetch = sandbox.output(f"{IO_DIR}/audit-{token}.tar")
        names = write_names(sandbox, named, f"audit-{token}")
        then += f" && {{ tar -c --null --no-recursion -T {names} -f {prefetch} 2>/dev/null || true; }}"
    held, tried = None, []
    try:
        if patch.strip() and task.test_cmd:
            # started first: the host plants the canaries and writes the tests' inputs while it starts
            held = Held(sandbox, patch, token, first=first, then=then, timeout=_timeout(sandbox), preload=preload_word(task, sandbox))
        hidden = {path: None if stored is None else decode(stored) for path, stored in facts.hidden.items()}
        planting, commands, rng = None, list(task.test_cmd), random.Random(token)
        if draw is not None:
            texts = {path: file.data for path, file in hidden.items() if file is not None}
            planting = draw(texts, rng)
            hidden |= {path: File(hidden[path].mode, data) for path, data in planting.files.items() if data != texts[path]}  # type: ignore[union-attr]
            run.canaries = canaries.strength(planting)
            run.forgery_bound = bound(planting) if bound is not None else 1.0
            commands = canaries.commands(commands, planting, rng)
            if select is not None:
                select = canaries.select_ids(planting, select, rng)
        must_fail = sum(c.must_fail for c in planting.canaries) if planting is not None else 0
        envs = _commands_env(sandbox, task, facts, paths, must_fail, uses_junit(task.log_parser), instrument, select, coverage, maxfail, observe)
        clock.mark("canaries")
        if held is not None:
            applied, why = held.applied()
            if applied:
                run.apply_strategy = APPLY_STRATEGIES[0][0]
            else:  # on through the rest of the cascade, with the listing taken before the apply
                held.stop()
                held, tried, first = None, [why], ""
        if not run.apply_strategy:
            run.apply_strategy, why = apply_patch(sandbox, patch, "candidate", first=first, then=then, tried=tried)
        if not run.apply_strategy:
            return run.model_copy(update={"outcome": "patch_apply_failed", "detail": why})
        before, listed = {}, b""
        if run.apply_strategy != "empty":
            before = pristine if pristine is not None else _PRISTINE.setdefault(key, parse_listing(sandbox.read_file(f"{paths.listings}-before")))
            listed = sandbox.read_file(f"{paths.listings}-after")
        clock.mark("apply")
        with budget.step("the capability check"):
            after, refused = listed_tree(before, listed)
            refused = refused or violations(before, after, task, facts)
        clock.mark("capabilities")
        if refused:  # refused as applied: nothing of the change runs, nothing of it is cleaned up
            return run.model_copy(update={"outcome": "forbidden_change", "detail": describe(refused)})
        with budget.step("the tamper audit"):
            audit = tamper_findings(sandbox, patch, before, after, token, prefetch)
        run.tamper = audit.findings
        runtime_guard.write_jobs(sandbox, token, envs, before, after, hidden, patch, audit.files)
        clock.mark("audit")
        todo = plan(before, after, task, facts, hidden)
        run.neutralized = todo.neutralized
        infra = f"{IO_DIR}/infra-{token}.tar"
        sandbox.write_file(infra, archive(todo.write))
        install = install_command(todo.delete, infra)  # run with the first test command
        clock.mark("plan")
        kept = None if raw else planting
        return _test(
            sandbox, task, run, patch, commands, envs, install, kept, held, paths, log_dir, clock, budget, instrument, coverage, maxfail, observe,
            keep_raised=raw,
        )
    finally:
        if held is not None:
            held.stop()


def _timeout(sandbox: Sandbox) -> float:
    config = getattr(sandbox, "limits", None)
    return config.timeout_s if config is not None else SandboxConfig().limits.timeout_s


class _Paths:
    """The IO folder's paths of one grade, each with the grade's unguessable token."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.listings = f"{IO_DIR}/listing-{token}"
        self.events = f"{IO_DIR}/asserts-{token}.jsonl"
        self.observe = f"{IO_DIR}/observe-{token}.jsonl"
        self.cover = f"{IO_DIR}/cover-{token}.jsonl"
        self.select = f"{IO_DIR}/select-{token}"
        self.cover_files = f"{IO_DIR}/cover-files-{token}"
        self.observe_targets = f"{IO_DIR}/observe-targets-{token}"


def _commands_env(
    sandbox: Sandbox, task: Task, facts: TaskFacts, paths: _Paths, must_fail: int, wants_junit: bool, instrument: bool,
    select: Sequence[str] | None, coverage: Sequence[str] | None, maxfail: int | None, observe: Sequence[str] | None,
) -> list[tuple[dict[str, str], str, str]]:
    """Per test command: its environment, its JUnit report's path and its outcome records' path ("" where
    the runner is not pytest); the plugins shipped and their inputs written. All of it is known before
    the apply, so the first command's environment can be the held command's (``harness.grading.handover``).
    ``select``: under the names the planted files give the tests (``canaries.select_ids``)."""
    plugins = (["swedeck_assertions"] if instrument else []) + (["swedeck_select"] if select is not None else [])
    plugins += ["swedeck_coverage"] if coverage is not None else []
    plugins += ["swedeck_observe"] if observe is not None else []
    plugins += ["swedeck_outcomes"] if wants_junit else []
    if observe is not None:
        sandbox.output(paths.observe)
        sandbox.write_file(paths.observe_targets, "".join(f"{target}\n" for target in observe))
    if instrument:
        sandbox.output(paths.events)
    if coverage is not None:
        sandbox.output(paths.cover)
        sandbox.write_file(paths.cover_files, "".join(f"{path}\n" for path in coverage))
    ship(sandbox, plugins)
    if select is not None:
        sandbox.write_file(paths.select, "".join(f"{test_id}\n" for test_id in select))
    token = paths.token
    out = []
    for i in range(len(task.test_cmd)):
        env: dict[str, str] = {}
        junit, outcomes = "", ""
        if wants_junit:
            junit = sandbox.output(f"{IO_DIR}/junit-{token}-{i}.xml")
            outcomes = env["SWEDECK_OUTCOME_LOG"] = sandbox.output(f"{IO_DIR}/outcomes-{token}-{i}.jsonl")
            # the environment's plugins by name, and nothing a distribution in the tree announces
            env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
            env["PYTEST_ADDOPTS"] = f"-rA -p no:cacheprovider -o junit_family=xunit1 --junitxml={junit}"
            env["PYTEST_ADDOPTS"] += "".join(f" -p {name}" for name in facts.plugins)
            if must_fail:  # pytest's own traceback parses and walks the whole test file per failure: a twin cost 10 ms and more
                env["PYTEST_ADDOPTS"] += " --tb=native"
            runtime_guard.arm(sandbox, env, token, i, ours=instrument or observe is not None or coverage is not None)
            if maxfail is not None:
                env["PYTEST_ADDOPTS"] += f" --maxfail={maxfail + must_fail}"
        if plugins:
            env["PYTEST_ADDOPTS"] = env.get("PYTEST_ADDOPTS", "") + "".join(f" -p {p}" for p in plugins)
            env["PYTHONPATH"] = PLUGIN_PATH
        if instrument:
            env["PYTEST_ADDOPTS"] += " -o enable_assertion_pass_hook=true"
            env["SWEDECK_ASSERT_LOG"] = paths.events
        if select is not None:
            env["SWEDECK_SELECT"] = paths.select
        if coverage is not None:
            env["SWEDECK_COVER_FILES"], env["SWEDECK_COVER_LOG"], env["SWEDECK_COVER_ROOT"] = paths.cover_files, paths.cover, sandbox.workdir
        if observe is not None:
            env["SWEDECK_OBSERVE_TARGETS"], env["SWEDECK_OBSERVE_LOG"] = paths.observe_targets, paths.observe
            env["SWEDECK_OBSERVE_ROOT"] = sandbox.workdir
        out.append((env, junit, outcomes))
    return out


def _test(
    sandbox: Sandbox, task: Task, run: TestRun, patch: str, commands: list[str], envs: list[tuple[dict[str, str], str, str]],
    install: str, planting: canaries.Planting | None, held: Held | None, paths: _Paths, log_dir: Path, clock: _Stages,
    budget: Budget, instrument: bool, coverage: Sequence[str] | None, maxfail: int | None, observe: Sequence[str] | None,
    *, keep_raised: bool = False,
) -> TestRun:
    """The test commands (the first in the held command where there is one), their statuses, canaries
    (statuses read back under the task's ids) and records; with ``keep_raised``, what each call raised."""
    t1, token = time.monotonic(), paths.token
    parser = resolve_parser(task.log_parser)
    log_dir.mkdir(parents=True, exist_ok=True)
    run.log_path = str(log_dir / f"{file_name(task.instance_id)}-{content_hash(patch)}-{token}.log")
    with open(run.log_path, "wb") as log:
        for i, (command, (env, junit, outcomes)) in enumerate(zip(commands, envs, strict=True)):
            clock.mark("setup")
            if i == 0 and held is not None:
                result = held.go(install, command, env)
            else:  # reaped: nothing the tests started may still write a report we are about to read
                result = sandbox.run(installing(install, command, token) if i == 0 else command, env=env, reap=True)
            clock.mark("command")
            output = Path(result.log_path).read_bytes()
            if i == 0 and install_failed(result.exit_code, output, token):
                return run.model_copy(update={"outcome": "hidden_tests_apply_failed", "detail": tail(output)})
            run.exit_codes.append(result.exit_code)
            log.write(output)
            if result.timed_out or result.output_limited:
                run.outcome = "timeout" if result.timed_out else "output_limit"
                what = f"timed out after {result.duration_s:.0f} s" if result.timed_out else f"printed over {len(output)} bytes"
                run.detail = f"command {i} `{command}` {what}; its output ends:\n{tail(output)}"
                break
            runtime_guard.judge(run, sandbox, env, junit, outcomes, result.exit_code, i)  # its finding decides the outcome
            with budget.step(f"command {i}'s output and reports"):
                try:
                    report, raised = read_junit(sandbox, junit), read_raised(sandbox, outcomes)
                except Unreadable as err:  # a named pipe, a flood: nothing pytest writes
                    report, raised = None, {}
                    run.spoof_evidence.append(f"command {i}: a report is refused: {err}")
                statuses, evidence = command_statuses(parser(output.decode(errors="replace")), report, result.exit_code, i, bool(junit))
                evidence += forged_passes(statuses, raised, i)
            run.statuses.update(statuses)
            run.spoof_evidence += evidence
            if keep_raised:
                run.raised.update(raised or {})
            clock.mark("parse")
    if planting is not None:
        with budget.step("the canaries"):
            if run.outcome == "ok":
                run.statuses, evidence = canaries.check(planting, run.statuses, complete=maxfail is None)
                run.spoof_evidence += evidence
            else:  # the task's ids whatever the run's end
                run.statuses = canaries.own_ids(run.statuses, planting.names)
    clock.mark("parse")
    clock.durations["tests"] = round(time.monotonic() - t1, 4)
    if instrument:
        run.instrumented, run.assert_events, run.test_sources = read_instrumentation(sandbox, task, paths.events)
    if coverage is not None:
        try:
            run.coverage = sandbox.read_file(paths.cover).decode(errors="replace")
        except FileNotFoundError:
            run.coverage = ""
    if observe is not None:
        try:
            run.observed = sandbox.read_file(paths.observe).decode(errors="replace")
        except FileNotFoundError:
            run.observed = ""
    run.durations = clock.durations  # the same dict: run_tests adds the close
    return run


_PRISTINE: dict[str, dict[str, Entry]] = {}  # a fresh tree's listing, per facts key (see _run_in)


def _canary_pool(task: Task, facts: TaskFacts, backend: Backend, key: str) -> Pool:
    return canary_pool(task, facts, backend, key, _run_in)


def canary_strength(task: Task, backend: Backend) -> tuple[CanaryStrength, float]:
    """What canaries this task's grades plant ("strong" where a test has validated twins) and the
    forgery bound of a grade of the whole command (``canaries.bound``); runs the canary trial once if
    no grade has yet. A trial the machine failed validates nothing."""
    if not canaries.usable(task.test_cmd):
        return "none", 1.0
    facts = task_facts(task, backend)
    try:
        pool = _canary_pool(task, facts, backend, facts_key(task, backend))
    except SandboxError:
        pool = Pool([], [])
    texts = {path: decode(stored).data for path, stored in facts.hidden.items() if stored is not None}
    selected = canaries.runs(task.test_cmd)
    planting = canaries.plant(texts, random.Random(0), pool.twinned, selected, task.answer.fail_to_pass, pool.inputs)
    return canaries.strength(planting), canaries.bound(planting, pool.passing, task.answer.fail_to_pass, selected)


def gold_pattern(task: Task, backend: Backend, settings: Settings | None = None) -> dict[str, Status]:
    """The expected pattern when the corpus gives none: one clean gold run, cached by task, tree,
    backend and grader version. A run in which no test passes is a broken environment, not a pattern."""
    if task.answer.expected_status is not None:
        return dict(task.answer.expected_status)
    settings = settings or Settings.from_env()
    cache = settings.cache_dir / "gold" / f"{facts_key(task, backend)}.json"
    if cache.exists():
        return {k: Status(v) for k, v in TestRun.model_validate_json(cache.read_text()).statuses.items()}
    run = run_tests(task, task.answer.gold_patch, backend)
    problem = (
        run.outcome if run.outcome != "ok"
        else "spoofing evidence: " + "; ".join(run.spoof_evidence) if run.spoof_evidence
        else "no test passed" if Status.PASSED not in run.statuses.values()
        else ""
    )  # fmt: skip
    if problem:
        detail = f": {run.detail}" if run.detail else ""
        raise EnvError(f"{task.instance_id}: the gold run gave no usable pattern ({problem}){detail}")
    write_whole(cache, run.model_dump_json())
    return run.statuses


def grade(
    task: Task,
    patch: str,
    backend: Backend,
    *,
    expected: dict[str, Status] | None = None,
    log_dir: Path | None = None,
    select: Sequence[str] | None = None,
    maxfail: int | None = None,
    tamper: TamperMode | None = None,
) -> Grade:
    """THE grader. ``expected`` defaults to the corpus's gold map or a cached gold run; with ``select``
    only those tests run and only their part of the pattern is held against them. ``maxfail`` stops
    pytest after that many failures: only sound for reward 0 when no test it runs is expected to fail.
    ``tamper`` defaults to the backend's SandboxConfig.tamper ("zero" where it has none)."""
    if expected is None:
        expected = gold_pattern(task, backend)
    if select is not None:
        expected = {test_id: expected[test_id] for test_id in select if test_id in expected}
    run = run_tests(task, patch, backend, log_dir=log_dir, select=select, maxfail=maxfail)
    config = getattr(backend, "config", None)  # a Backend need not carry a SandboxConfig (test doubles)
    return compare(run, expected, task, tamper or (config.tamper if isinstance(config, SandboxConfig) else "zero"))
