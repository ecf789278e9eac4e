"""Pipeline 1: execution only, no model. Is there a real, stable fail-to-pass signal, and which
assertions carry it?

Per task: build the environment; run the hidden tests on the buggy tree and on the gold tree, each
``runs`` times in fresh sandboxes through the grader's own test runner; derive FAIL_TO_PASS,
PASS_TO_PASS and flaky tests; find the binding assertions; keep or reject with one reason.

Rejection reasons (checked in this order; the first that applies wins):

==================== =================================================================== ==============
reason               meaning                                                             infrastructure
==================== =================================================================== ==============
env_error            the environment could not be built or found (stage image_missing:   yes
                     the task's image is not here and was not pulled)
sandbox_error        the sandbox failed under the run (engine gone, container died)      yes
internal_error       swedeck itself raised while processing the task                     yes
patch_does_not_apply the gold patch or the hidden tests do not apply to the buggy tree     no
timeout              a test run hit the wall-time limit                                  no
output_limit         a test run printed more than the output cap                         no
ungradeable          a gold run's output looks forged to the grader (its text summary,   no
                     JUnit report, exit code or recorded calls disagree), or the gold
                     patch does what harness.grading.capabilities refuses (stage patch, the
                     detail names the path and rule): every reward on this task would
                     be 0
needs_network        gold fails with network errors (confirmed by a networked rerun)     no
only_flaky           no stable FAIL_TO_PASS test, but some tests change outcome run to run no
gold_fails           a hidden test fails on every gold run                               no
no_fail_to_pass      the hidden tests already pass on the buggy tree (or never on gold)  no
no_binding_assertion FAIL_TO_PASS tests exist, but no assertion in them binds            no
==================== =================================================================== ==============
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, PositiveInt

from curation import assertions
from curation.store import commit_folder, read_records
from harness.grading.grader import canary_strength, run_tests
from harness.names import under
from harness.records import (
    AssertionRecord,
    CanaryStrength,
    Pipeline1Result,
    RunRecord,
    Status,
    Task,
    TaskRow,
    TestRun,
    Tree,
)
from harness.sandboxes.envs import recipe_key
from harness.sandboxes.images import ImageMissing
from harness.sandboxes.sandbox import Backend, EnvError

NETWORK_ERRORS = re.compile(
    r"gaierror|Name or service not known|Temporary failure in name resolution|Network is unreachable"
    r"|No route to host|URLError|Failed to establish a new connection|nodename nor servname provided"
)
TASK_FILE = "task.json"  # the full task, answer included, for Pipeline 2; no catalog view reads it
INFRA_REASONS = {"env_error", "sandbox_error", "internal_error"}
MISSING = "MISSING"


class Pipeline1Config(BaseModel):
    model_config = ConfigDict(extra="forbid")

    runs: PositiveInt = 3  # per tree; flakiness needs at least 2
    instrument: bool = True  # record assertion outcomes and require a binding assertion
    network_check: bool = True  # rerun gold with the network on when it fails with network errors


# ------------------------------------------------------------------------------------------ pure logic


@dataclass
class Derived:
    fail_to_pass: list[str] = field(default_factory=list)
    pass_to_pass: list[str] = field(default_factory=list)
    flaky: list[str] = field(default_factory=list)
    gold_failing: list[str] = field(default_factory=list)


def _outcomes(runs: Sequence[dict[str, str]], test_id: str) -> set[str]:
    return {run.get(test_id, MISSING) for run in runs}


def derive(buggy: Sequence[dict[str, str]], gold: Sequence[dict[str, str]], owned: Sequence[str] = ()) -> Derived:
    """FAIL_TO_PASS: never passes on buggy, passes on every gold run. PASS_TO_PASS: passes in every
    run of both. Flaky: more than one outcome across identical runs of one tree (or a parametrised
    sibling of such a test). ``gold_failing``:
    stably failing on gold, among the tests in files the task owns (all tests when it names none)."""
    d = Derived()
    ids = sorted({t for run in [*buggy, *gold] for t in run})
    unstable = {_family(t) for t in ids if len(_outcomes(buggy, t)) > 1 or len(_outcomes(gold, t)) > 1}
    for test_id in ids:
        on_buggy, on_gold = _outcomes(buggy, test_id), _outcomes(gold, test_id)
        if _family(test_id) in unstable:
            d.flaky.append(test_id)
        elif on_gold == {Status.PASSED} and on_buggy != {Status.PASSED}:
            d.fail_to_pass.append(test_id)
        elif on_gold == on_buggy == {Status.PASSED}:
            d.pass_to_pass.append(test_id)
        elif on_gold <= {Status.FAILED, Status.ERROR} and _owned(test_id, owned):
            d.gold_failing.append(test_id)
    return d


def _family(test_id: str) -> str:
    """Parametrised cases of one test function share its code: when one case flips between runs,
    the others' stability is luck, so a flaky case makes the whole family flaky."""
    return test_id.split("[", 1)[0]


def _owned(test_id: str, owned: Sequence[str]) -> bool:
    """Whether a test comes from a file the task owns. A pytest node id names its file; R2E-Gym's keys
    (``TestX.test_y``) name none, but only its ``r2e_tests`` files run; a dotted unittest/Django id
    (``forms_tests.test_x.T.test_y``, or ``test_y (forms_tests.test_x.T)`` before Python 3.11) starts
    with the file's module, counted from any folder (Django's labels drop ``tests/``)."""
    if not owned:
        return True
    if "::" in test_id or "/" in test_id:
        return any(test_id.startswith(p) for p in owned)
    if any(p.startswith("r2e_tests/") for p in owned):
        return True
    dotted = test_id[test_id.rfind(" (") + 2 : -1] + "." if test_id.endswith(")") and " (" in test_id else test_id
    parts = [p.removesuffix(".py").split("/") for p in owned]
    return any(dotted.startswith(".".join(module[i:]) + ".") for module in parts for i in range(len(module)))


def explain(reason: str, d: Derived, buggy: Sequence[dict[str, str]], gold: Sequence[dict[str, str]], limit: int = 10) -> str:
    """Which tests and runs a rejection by the test outcomes rests on (the result's ``detail``)."""

    def listed(ids: Sequence[str]) -> str:
        shown = [f"{t} (buggy {'/'.join(sorted(_outcomes(buggy, t)))}, gold {'/'.join(sorted(_outcomes(gold, t)))})" for t in ids[:limit]]
        return ", ".join(shown) + (f" and {len(ids) - limit} more" if len(ids) > limit else "")

    runs = f"{len(buggy)} buggy and {len(gold)} gold run(s)"
    if reason == "only_flaky":
        return f"no stable FAIL_TO_PASS test over {runs}; {len(d.flaky)} test(s) change outcome between identical runs: {listed(d.flaky)}"
    if reason == "gold_fails":
        return f"{len(d.gold_failing)} test(s) of the task's own files fail on every gold run ({runs}): {listed(d.gold_failing)}"
    if reason == "no_fail_to_pass":
        ids = sorted({t for run in [*buggy, *gold] for t in run})
        others = [t for t in ids if t not in d.pass_to_pass]
        return (f"no test fails on buggy and passes on gold ({runs}): {len(d.pass_to_pass)} of {len(ids)} pass on both trees"
                + (f"; the others: {listed(others)}" if others else ""))  # fmt: skip
    return ""


def decide(d: Derived, *, network: bool, binding: list[str] | None) -> str:
    """The rejection reason ('' to keep) for a task whose runs all completed."""
    if network:
        return "needs_network"
    if not d.fail_to_pass and d.flaky:
        return "only_flaky"
    if d.gold_failing:
        return "gold_fails"
    if not d.fail_to_pass:
        return "no_fail_to_pass"
    if binding is not None and not binding:
        return "no_binding_assertion"
    return ""


def label_disagreements(task: Task, d: Derived, gold_pattern: dict[str, str]) -> list[str]:
    """Where the corpus's own labels differ from what the runs showed; recorded, never hidden."""
    ours = {**dict.fromkeys(d.fail_to_pass, "FAIL_TO_PASS"), **dict.fromkeys(d.pass_to_pass, "PASS_TO_PASS")}
    ours |= dict.fromkeys(d.flaky, "flaky") | dict.fromkeys(d.gold_failing, "failing on gold")
    out = []
    for claim, ids in (("FAIL_TO_PASS", task.answer.fail_to_pass), ("PASS_TO_PASS", task.answer.pass_to_pass)):
        for test_id in ids:
            if ours.get(test_id) != claim:
                out.append(f"{test_id}: corpus says {claim}, runs say {ours.get(test_id, 'not run')}")
    if task.answer.fail_to_pass:
        out += [f"{t}: runs say FAIL_TO_PASS, corpus does not" for t in d.fail_to_pass if t not in task.answer.fail_to_pass]
    for test_id, status in sorted((task.answer.expected_status or {}).items()):
        if gold_pattern.get(test_id) != status:
            out.append(f"{test_id}: corpus gold map says {status}, our gold run says {gold_pattern.get(test_id, 'not run')}")
    return out


def network_suspected(gold_runs: Sequence[TestRun], d: Derived) -> bool:
    failing = bool(d.gold_failing) or any(s in ("FAILED", "ERROR") for r in gold_runs for s in r.statuses.values())
    return failing and any(NETWORK_ERRORS.search(Path(r.log_path).read_text(errors="replace")) for r in gold_runs)


# ------------------------------------------------------------------------------------------ the spine


def result_path(out: Path, instance_id: str) -> Path:
    return under(out / "p1", instance_id)


def kept_tasks(out: Path) -> list[tuple[Task, Pipeline1Result]]:
    """Every task Pipeline 1 kept in the run directory ``out``, with its result."""
    kept = []
    for folder in sorted((out / "p1").glob("*/")):
        if not (folder / "result.parquet").exists():
            continue
        (result,) = read_records(folder / "result.parquet", Pipeline1Result)
        if result.decision == "keep":
            kept.append((Task.model_validate_json((folder / TASK_FILE).read_text()), result))
    return kept


def finished(out: Path, task: Task, config_hash: str) -> Pipeline1Result | None:
    """The stored result when it was made from this task content and config and is not an
    infrastructure failure (those are always retried)."""
    path = result_path(out, task.instance_id) / "result.parquet"
    if not path.exists():
        return None
    (result,) = read_records(path, Pipeline1Result)
    if result.config_hash != config_hash or result.task_hash != task.task_hash() or result.infrastructure:
        return None
    return result


def process_task(task: Task, backend: Backend, config: Pipeline1Config, config_hash: str, out: Path) -> Pipeline1Result:
    """Run Pipeline 1 on one task and store its records; a bad task is a result, not an exception."""
    started = time.monotonic()
    stamp = {"config_hash": config_hash, "task_hash": task.task_hash(), "instance_id": task.instance_id}
    runs: list[RunRecord] = []
    records: list[AssertionRecord] = []
    trials: dict[Tree, list[TestRun]] = {"buggy": [], "gold": []}
    image_digest = ""

    def finish(
        reason: str, stage: str = "", detail: str = "", d: Derived | None = None, binding: list[str] | None = None,
        canaries: tuple[CanaryStrength, float] = ("none", 1.0),
    ) -> Pipeline1Result:
        d = d or Derived()
        gold = trials["gold"][0].statuses if trials["gold"] else {}
        return store(
            task, out, stamp, reason, stage, detail, d,
            binding=binding or [],
            binding_checked=binding is not None,
            expected=gold,
            disagreements=label_disagreements(task, d, gold) if trials["gold"] else [],
            runs=runs,
            records=records,
            seconds=time.monotonic() - started,
            image_digest=image_digest,
            canaries=canaries[0],
            forgery_bound=canaries[1],
        )  # fmt: skip

    try:
        backend.prepare(task)
        image_digest = backend.image_digest(task)
    except EnvError as err:
        stage = "image_missing" if isinstance(err, ImageMissing) else "environment"
        return finish("env_error", stage, f"{err}\n{err.log[-4000:]}")

    log_dir = under(out / "logs", task.instance_id)
    for tree, patch in (("buggy", ""), ("gold", task.answer.gold_patch)):
        for attempt in range(config.runs):
            trial = run_tests(task, patch, backend, log_dir=log_dir, instrument=config.instrument)
            trials[tree].append(trial)
            runs.append(run_record(trial, tree, attempt, stamp))
            if config.instrument:
                records += assertions.records_for_run(trial, tree, attempt, stamp)
            if trial.outcome in ("patch_apply_failed", "hidden_tests_apply_failed"):
                what = "gold patch" if trial.outcome == "patch_apply_failed" else "hidden tests"
                return finish("patch_does_not_apply", "patch", f"{what} did not apply on the {tree} tree:\n{trial.detail}")
            if trial.outcome == "forbidden_change":  # gold does what no candidate may: every reward would be 0
                return finish("ungradeable", "patch", f"the grader refuses the gold patch:\n{trial.detail}")
            if trial.outcome == "grader_error":
                return finish("internal_error", "grader", trial.detail)
            if trial.outcome != "ok":
                return finish(trial.outcome, "sandbox" if trial.outcome == "sandbox_error" else "tests", trial.detail)
            if tree == "gold" and trial.spoof_evidence:
                return finish("ungradeable", "tests", "the grader calls the gold run forged:\n" + "\n".join(trial.spoof_evidence))

    d = derive(
        [t.statuses for t in trials["buggy"]], [t.statuses for t in trials["gold"]], task.test_paths
    )
    network = network_suspected(trials["gold"], d)
    detail = ""
    if network and config.network_check:
        online = run_tests(task, task.answer.gold_patch, backend, log_dir=log_dir, network=True)
        runs.append(run_record(online, "gold_network", 0, stamp))
        fixed = [t for t, s in trials["gold"][0].statuses.items() if s != online.statuses.get(t)]
        detail = (
            f"with the network on, {len(fixed)} test(s) change outcome: {', '.join(fixed[:10])}"
            if fixed
            else "network errors persist with the network on: this machine has no route either"
        )
    binding = None
    if config.instrument and not network and all(t.instrumented for t in trials["gold"]):
        binding = assertions.binding_keys(records, d.fail_to_pass)
    reason = decide(d, network=network, binding=binding)
    if reason == "no_binding_assertion":
        detail = assertions.explain_no_binding(records, d.fail_to_pass)
    elif reason in ("only_flaky", "gold_fails", "no_fail_to_pass"):
        detail = explain(reason, d, [t.statuses for t in trials["buggy"]], [t.statuses for t in trials["gold"]])
    # what the kept task's grades will plant (one more gold run, which its first grade would make)
    canaries = ("none", 1.0) if reason else canary_strength(task, backend)
    return finish(reason, "tests" if reason else "", detail, d, binding, canaries)


def run_record(trial: TestRun, tree: Tree, attempt: int, stamp: dict[str, str]) -> RunRecord:
    return RunRecord(
        **stamp,
        tree=tree,
        attempt=attempt,
        backend=trial.backend,
        outcome=trial.outcome,
        statuses={k: str(v) for k, v in trial.statuses.items()},
        exit_codes=trial.exit_codes,
        apply_strategy=trial.apply_strategy,
        spoof_evidence=trial.spoof_evidence,
        durations=trial.durations,
        log_path=trial.log_path,
        detail=trial.detail,
    )


def environment_label(task: Task) -> str:
    env = task.environment
    return env.image if env.image is not None else f"recipe:{recipe_key(env.recipe)}"


def task_row(task: Task, stamp: dict[str, str]) -> TaskRow:
    return TaskRow(
        **stamp,
        source=task.source,
        repo=task.repo,
        base_commit=task.base_commit,
        problem_statement=task.problem_statement,
        test_cmd=task.test_cmd,
        log_parser=task.log_parser,
        environment=environment_label(task),
        test_paths=task.test_paths,
        claimed_fail_to_pass=task.answer.fail_to_pass,
        claimed_pass_to_pass=task.answer.pass_to_pass,
    )


def store(
    task: Task,
    out: Path,
    stamp: dict[str, str],
    reason: str,
    stage: str,
    detail: str,
    d: Derived,
    *,
    binding: list[str],
    binding_checked: bool = False,
    expected: dict[str, Status],
    disagreements: list[str],
    runs: list[RunRecord],
    records: list[AssertionRecord],
    seconds: float,
    image_digest: str = "",
    canaries: CanaryStrength = "none",
    forgery_bound: float = 1.0,
) -> Pipeline1Result:
    """Build the task's result and write its folder (task, runs, assertions, result) atomically."""
    result = Pipeline1Result(
        **stamp,
        source=task.source,
        repo=task.repo,
        decision="reject" if reason else "keep",
        reason=reason,
        infrastructure=reason in INFRA_REASONS,
        stage=stage,
        fail_to_pass=d.fail_to_pass,
        pass_to_pass=d.pass_to_pass,
        flaky=d.flaky,
        gold_failing=d.gold_failing,
        binding_assertions=binding,
        binding_checked=binding_checked,
        label_disagreements=disagreements,
        expected_status=expected,
        runs=len(runs),
        duration_s=round(seconds, 3),
        detail=detail,
        image_digest=image_digest,
        canaries=canaries,
        forgery_bound=forgery_bound,
    )
    tables = [
        ("task", TaskRow, [task_row(task, stamp)]),
        ("runs", RunRecord, runs),
        ("assertions", AssertionRecord, records),
        ("result", Pipeline1Result, [result]),
    ]
    commit_folder(result_path(out, task.instance_id), tables, {TASK_FILE: task.model_dump_json()})
    return result


def internal_error(task: Task, config_hash: str, out: Path, err: BaseException) -> Pipeline1Result:
    """Our own bug on one task: recorded with its traceback so the run goes on."""
    import traceback

    stamp = {"config_hash": config_hash, "task_hash": task.task_hash(), "instance_id": task.instance_id}
    trace = "".join(traceback.format_exception(err))[-4000:]
    return store(
        task, out, stamp, "internal_error", "our_code", trace, Derived(),
        binding=[], expected={}, disagreements=[], runs=[], records=[], seconds=0.0,
    )  # fmt: skip
