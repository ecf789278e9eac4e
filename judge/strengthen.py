"""Test strengthening: repair a too-loose suite in place with tests that reject its surviving wrong patches.

Candidates come from two sources:

1. *Model-free*: each confirmed survivor's distinguishing input (``probes.differential``) becomes a test
   in the test file's own style (a pytest function, or a method of the FAIL_TO_PASS test's class with
   ``self.assert*`` for unittest) that asserts gold's behaviour on that input: its return value (when
   its ``repr`` evaluates back to it), the exception type it raises, or what it prints. Where the
   buggy tree already behaves like gold on that input (the survivor broke something the bug left
   alone), the test repeats the checks of the FAIL_TO_PASS test the input came from first, so it
   still fails on buggy.
2. *Judge-written*: tests the judge proposes with ``propose_test`` (``judge.tools``), each citing the
   issue sentences its assertions follow from. In the same session the judge reviews the kept
   model-free tests (``review_test``): relevant with a cited sentence of the issue, or irrelevant
   (dropped, and recorded as rejected at ``relevance``).

Every candidate goes through the same validation, by the one grader, each step recorded
(``ValidationCheck``) and stopped at the first that fails (``AddedTest.rejected_at``):

``leak``            it names no identifier that only gold introduces (unless the issue names it) and
                    copies no line gold adds;
``gold_stable``     it passes on gold in k runs;
``fails_on_buggy``  it fails on the buggy tree;
``kills_survivor``  it fails on at least one confirmed survivor;
``invariant``       it passes on every behaviour-preserving rewrite of gold (the correct_alternative
                    probes that passed the original suite): STING's guard against pinning gold's form;
``pass_to_pass``    with it added, gold still reproduces the original pattern on every other test;
``relevance``       a judge-written test must cite sentences of the issue (checked first: a proposal
                    that cites none is rejected before anything runs); a model-free one stays
                    ``unreviewed`` (kept, flagged) until the judge accepts that the issue asks for it.

Kept tests are added until every survivor is killed; the suite with all of them is graded once more
(gold reproduces its pattern; each survivor is graded in full) and the task ends ``repaired`` (every
survivor killed), ``partially_repaired`` or ``not_repaired``, with the reason. The strengthened hidden
tests are a new tests patch; the task's own hidden tests stay untouched.
"""

from __future__ import annotations

import ast
import re
import shutil
import tempfile
import textwrap
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from curation.store import commit_folder, read_records
from harness.grader import grade
from harness.names import under
from harness.pyast import parse
from harness.records import (
    AddedTest,
    DistinguishingInput,
    Grade,
    HiddenTests,
    Pipeline1Result,
    ProbeResult,
    Status,
    Strengthening,
    Task,
    ValidationCheck,
    VerdictRecord,
    content_hash,
)
from harness.sandbox import Backend
from judge.rules import added_test_leaks, touched_files
from probes.special_case import find_def
from probes.workspace import apply_trusted, git, read_text, test_sources

GOLD_RUNS = 3  # k: a kept test passes on gold this many times
RAN = ("pattern_mismatch", "tests_errored")  # a zero reward the test itself gave


# ============================================================================================ writing tests


@dataclass(frozen=True)
class Candidate:
    """A test to try: the file it goes in, the class it goes in (None: module level), its code."""

    file: str
    cls: str | None
    name: str
    code: str
    source: str  # model_free or judge
    found_by: str
    cites: tuple[str, ...] = ()  # the issue sentences its assertions follow from (judge-written)
    probe_id: str = ""  # the survivor it came from (model-free)

    @property
    def test_id(self) -> str:
        return "::".join([self.file, *([self.cls] if self.cls else []), self.name])


def is_unittest_class(source: str, cls: str) -> bool:
    for node in parse(source).body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            return any("TestCase" in ast.unparse(base) for base in node.bases)
    return False


def _imports_pytest(source: str) -> bool:
    return re.search(r"^\s*(import pytest|from pytest import)", source, re.MULTILINE) is not None


def _oneline(text: str) -> str:
    return " ".join(text.split()).replace("\\", "/")[:120]


def model_free_body(d: DistinguishingInput, *, unittest: bool, pytest_imported: bool) -> list[str] | None:
    """Statements asserting gold's behaviour on the distinguishing input; None when it cannot be stated
    (a value without an evaluable repr, a timeout)."""
    body = list(d.setup)
    raised = d.gold.raised
    if raised in ("timeout", "not reached"):
        return None
    if raised:
        module, _, name = raised.rpartition(".")
        if module:
            body.append(f"from {module} import {name}")
        if unittest:
            return [*body, f"with self.assertRaises({name}):", textwrap.indent(d.call, "    ")]
        return [*body, *([] if pytest_imported else ["import pytest"]), f"with pytest.raises({name}):", textwrap.indent(d.call, "    ")]
    if d.call_is_statement:  # gold runs it; the other patch raised
        return [*body, d.call]
    if d.gold.value == d.other.value and d.gold.stdout != d.other.stdout:
        printed = repr(d.gold.stdout)
        check = f"self.assertEqual(printed.getvalue(), {printed})" if unittest else f"assert printed.getvalue() == {printed}"
        return [*body, "import contextlib", "import io", "with contextlib.redirect_stdout(io.StringIO()) as printed:",
                textwrap.indent(d.call, "    "), check]  # fmt: skip
    if not d.literal:
        return None
    return [*body, f"self.assertEqual({d.call}, {d.literal})" if unittest else f"assert {d.call} == {d.literal}"]


def function_code(name: str, body: Sequence[str], *, method: bool, why: str) -> str:
    lines = [f"def {name}({'self' if method else ''}):", f"    # {why}"]
    lines += [textwrap.indent(statement, "    ") for statement in body]
    return "\n".join(lines) + "\n"


def own_checks(source: str, parts: Sequence[str]) -> str | None:
    """The statements of the test ``parts`` names (its docstring left out), dedented, as written."""
    try:
        fn = find_def(parse(source), parts)
    except SyntaxError:
        return None
    if fn is None:
        return None
    body = fn.body[1:] if ast.get_docstring(fn) is not None else fn.body
    if not body:
        return None
    lines = source.splitlines(keepends=True)
    return textwrap.dedent("".join(lines[body[0].lineno - 1 : fn.end_lineno])).rstrip("\n")


def model_free_candidate(probe: ProbeResult, sources: dict[str, str], *, anchored: bool = False) -> Candidate | None:
    """The survivor's distinguishing input as a test. ``anchored``: after the checks of the
    FAIL_TO_PASS test the input came from. A survivor that breaks what the buggy code already got
    right (``n <= 0`` for gold's ``n < 0``: ``tail(0, ...)`` is ``[]`` on buggy and gold) gives an
    input the buggy tree passes, which alone is no FAIL_TO_PASS test; after the original test's checks
    it fails on buggy where they do and on the survivor where the input does."""
    d = probe.distinguishing
    if d is None:
        return None
    file, _, rest = d.test_id.partition("::")
    parts = rest.split("::")
    cls = parts[-2] if len(parts) > 1 else None
    source = sources.get(file, "")
    unittest = cls is not None and is_unittest_class(source, cls)
    body = model_free_body(d, unittest=unittest, pytest_imported=_imports_pytest(source))
    if body is None:
        return None
    why = f"gold's behaviour on an input the original tests leave open ({_oneline(d.how)})"
    if anchored:
        if (own := own_checks(source, parts)) is None:
            return None
        body = [own, *body]
        why = f"{d.test_id.rpartition('::')[2]}'s checks, then {why}"
    draft = function_code("test_x", body, method=cls is not None, why=why)
    name = f"test_strengthened_{content_hash(draft)[:8]}"
    return Candidate(
        file=file, cls=cls, name=name, code=function_code(name, body, method=cls is not None, why=why),
        source="model_free", probe_id=probe.probe_id,
        found_by=f"distinguishing input of survivor {probe.probe_id} ({probe.operator}): {_oneline(d.call)} "
                 f"from {d.test_id}, {_oneline(d.how)}; gold {d.gold.raised or d.gold.value[:60]}, "
                 f"survivor {d.other.raised or d.other.value[:60]}",
    )  # fmt: skip


def insert_test(source: str, code: str, cls: str | None) -> str:
    """``source`` with the test function added at the end of the module, or of class ``cls``."""
    if cls is None:
        return source.rstrip("\n") + "\n\n\n" + code
    lines = source.splitlines(keepends=True)
    node = next(n for n in parse(source).body if isinstance(n, ast.ClassDef) and n.name == cls)
    indent = " " * node.body[0].col_offset
    end = node.end_lineno or len(lines)
    block = "\n" + textwrap.indent(code, indent)
    if end and not lines[end - 1].endswith("\n"):
        block = "\n" + block
    return "".join(lines[:end]) + block + "".join(lines[end:])


# ============================================================================================ validating


@dataclass
class Context:
    """Everything validation needs for one task, gathered once."""

    task: Task
    p1: Pipeline1Result
    backend: Backend
    survivors: list[ProbeResult]
    alternatives: list[ProbeResult]  # behaviour-preserving rewrites of gold that passed the original suite
    sources: dict[str, str]  # hidden test files as they run
    existing: str  # buggy text of the files gold touches (the leak check's baseline)
    gold_runs: int = GOLD_RUNS
    log_dir: Path | None = None
    executions: int = 0

    def with_tests(self, extra: dict[str, str], expected: dict[str, str]) -> Task:
        """The task with these test files' texts written after the hidden tests patch, and gold's pattern."""
        hidden = self.task.answer.hidden_tests
        answer = self.task.answer.model_copy(update={
            "hidden_tests": HiddenTests(patch=hidden.patch, files={**hidden.files, **extra}),
            "expected_status": {k: Status(v) for k, v in expected.items()},
        })  # fmt: skip
        return self.task.model_copy(update={"answer": answer})

    def grade(self, task: Task, patch: str, expected: dict[str, str], select: Sequence[str] | None) -> Grade:
        g = grade(task, patch, self.backend, expected={k: Status(v) for k, v in expected.items()}, select=select,
                  log_dir=self.log_dir)  # fmt: skip
        self.executions += len(g.statuses)
        return g


def validate(ctx: Context, cand: Candidate) -> AddedTest:
    """Every validation step of one candidate, in order, stopping at the first that fails."""
    record = AddedTest(file=cand.file, test_id=cand.test_id, source=cand.source, found_by=cand.found_by,  # type: ignore[arg-type]
                       code=cand.code, issue_quote=" / ".join(cand.cites))  # fmt: skip
    if cand.source == "judge" and (problem := citation_problem(cand.cites, ctx.task.problem_statement)):
        record.relevance = "rejected"
        return _reject(record, ValidationCheck(step="relevance", passed=False, detail=problem))
    base = ctx.sources.get(cand.file)  # each candidate alone on the original suite
    if base is None:
        return _reject(record, ValidationCheck(step="leak", passed=False, detail=f"no hidden test file {cand.file}"))
    try:
        text = insert_test(base, cand.code, cand.cls)
        parse(text)
    except (SyntaxError, StopIteration, ValueError) as err:
        return _reject(record, ValidationCheck(step="leak", passed=False, detail=f"the test does not fit the file: {err}"))
    leaks = added_test_leaks(cand.code, issue=ctx.task.problem_statement, gold_patch=ctx.task.answer.gold_patch, existing=ctx.existing)
    record.checks.append(ValidationCheck(step="leak", passed=not leaks, detail="; ".join(leaks) or "no gold-only name or line"))
    if leaks:
        return _reject(record)
    tid = cand.test_id
    alone = {tid: "PASSED"}
    task = ctx.with_tests({cand.file: text}, {**ctx.p1.expected_status, tid: "PASSED"})
    steps: list[tuple[str, Callable[[], ValidationCheck]]] = [
        ("gold_stable", lambda: _gold_stable(ctx, task, alone, tid)),
        ("fails_on_buggy", lambda: _fails_on_buggy(ctx, task, alone, tid)),
        ("kills_survivor", lambda: _kills(ctx, task, alone, tid, record)),
        ("invariant", lambda: _invariant(ctx, task, alone, tid)),
        ("pass_to_pass", lambda: _pass_to_pass(ctx, task)),
    ]
    for _, run in steps:
        check = run()
        record.checks.append(check)
        if not check.passed:
            return _reject(record)
    record.checks.append(_relevance(ctx, cand, record))
    if not record.checks[-1].passed:
        return _reject(record)
    return record


def _reject(record: AddedTest, check: ValidationCheck | None = None) -> AddedTest:
    if check is not None:
        record.checks.append(check)
    record.rejected_at = record.checks[-1].step
    return record


def _gold_stable(ctx: Context, task: Task, alone: dict[str, str], tid: str) -> ValidationCheck:
    rewards, seen = [], []
    for _ in range(ctx.gold_runs):
        g = ctx.grade(task, task.answer.gold_patch, alone, [tid])
        rewards.append(g.reward)
        seen.append(str(g.statuses.get(tid, g.reason)))
    ok = all(r == 1.0 for r in rewards)
    detail = f"{ctx.gold_runs} gold runs: {', '.join(seen)}"
    return ValidationCheck(step="gold_stable", passed=ok, detail=detail + ("" if ok else " (flaky or failing on gold)"),
                           rewards=rewards, executions=len(rewards))  # fmt: skip


def _fails_on_buggy(ctx: Context, task: Task, alone: dict[str, str], tid: str) -> ValidationCheck:
    g = ctx.grade(task, "", alone, [tid])
    status = g.statuses.get(tid)
    ok = status in (Status.FAILED, Status.ERROR)
    return ValidationCheck(step="fails_on_buggy", passed=ok, detail=f"on the buggy tree: {status or g.reason}",
                           rewards=[g.reward], executions=1)  # fmt: skip


def _kills(ctx: Context, task: Task, alone: dict[str, str], tid: str, record: AddedTest) -> ValidationCheck:
    rewards = []
    for probe in ctx.survivors:
        g = ctx.grade(task, probe.patch, alone, [tid])
        rewards.append(g.reward)
        if g.reward == 0.0 and g.reason in RAN:
            record.kills.append(probe.probe_id)
    ok = bool(record.kills)
    return ValidationCheck(step="kills_survivor", passed=ok, rewards=rewards, executions=len(rewards),
                           detail=f"fails on {len(record.kills)} of {len(ctx.survivors)} survivors")  # fmt: skip


def _invariant(ctx: Context, task: Task, alone: dict[str, str], tid: str) -> ValidationCheck:
    rewards, broken = [], []
    for probe in ctx.alternatives:
        g = ctx.grade(task, probe.patch, alone, [tid])
        rewards.append(g.reward)
        if g.reward != 1.0:
            broken.append(f"{probe.operator} ({probe.probe_id})")
    detail = f"fails on behaviour-preserving rewrites of gold: {', '.join(broken)}" if broken else f"passes on {len(rewards)} rewrites of gold"
    return ValidationCheck(step="invariant", passed=not broken, detail=detail, rewards=rewards, executions=len(rewards))


def _pass_to_pass(ctx: Context, task: Task) -> ValidationCheck:
    assert task.answer.expected_status is not None
    g = ctx.grade(task, task.answer.gold_patch, {k: str(v) for k, v in task.answer.expected_status.items()}, None)
    changed = {k: v for k, v in g.differing.items()}
    detail = "every other test keeps gold's status" if g.reward == 1.0 else f"{g.reason}: {dict(list(changed.items())[:5])}"
    return ValidationCheck(step="pass_to_pass", passed=g.reward == 1.0, detail=detail, rewards=[g.reward], executions=1)


def _squash(text: str) -> str:
    return " ".join(text.lower().split())


def citation_problem(cites: Sequence[str], issue: str) -> str:
    """Why ``cites`` do not ground an assertion in the issue ("" when they do): none given, or one that
    is not a sentence (at least a dozen characters) of the issue text."""
    if not cites:
        return "cites no sentence of the issue: every assertion must follow from a sentence of the issue"
    missing = [c for c in cites if len(_squash(c)) < 12 or _squash(c) not in _squash(issue)]
    return f"not sentences of the issue: {'; '.join(repr(c[:120]) for c in missing)}" if missing else ""


def _relevance(ctx: Context, cand: Candidate, record: AddedTest) -> ValidationCheck:
    if cand.source == "model_free":
        record.relevance = "unreviewed"
        return ValidationCheck(step="relevance", passed=True, detail="model-free: unreviewed until the judge accepts it")
    record.relevance = "accepted"
    return ValidationCheck(step="relevance", passed=True, detail="cites the issue: " + record.issue_quote[:200])


def review(record: AddedTest, relevant: bool, cites: Sequence[str], reason: str = "") -> AddedTest:
    """The judge's relevance review of a kept model-free test: accepted with the issue sentences that
    ask for the asserted behaviour (checked by the caller), or rejected: a test pinning behaviour the
    issue does not ask for would make the suite over-restrictive, so it leaves the suite, recorded."""
    quote = " / ".join(cites)
    detail = f"the judge accepts it: {quote[:200]}" if relevant else f"the judge finds the issue does not ask for it: {reason[:200]}"
    checks = [c for c in record.checks if c.step != "relevance"] + [ValidationCheck(step="relevance", passed=relevant, detail=detail)]
    return record.model_copy(update={
        "relevance": "accepted" if relevant else "rejected", "issue_quote": quote, "checks": checks,
        "rejected_at": record.rejected_at or ("" if relevant else "relevance"),
    })  # fmt: skip


@dataclass
class Workbench:
    """One task's candidate tests as strengthening goes, each validated record beside the candidate it
    came from; the judge proposes and reviews through it (``judge.tools.StrengthenTools``)."""

    ctx: Context
    tests: list[AddedTest] = field(default_factory=list)
    candidates: list[Candidate] = field(default_factory=list)

    def consider(self, cand: Candidate) -> AddedTest:
        record = validate(self.ctx, cand)
        self.tests.append(record)
        self.candidates.append(cand)
        return record

    def killed(self) -> set[str]:
        return {k for t in self.tests if not t.rejected_at for k in t.kills}

    def review(self, test_id: str, relevant: bool, cites: Sequence[str], reason: str = "") -> AddedTest | str:
        """Record the judge's review of a kept model-free test; a problem (no such test, a relevant one
        without a sentence of the issue) comes back as text and changes nothing."""
        at = next((i for i, t in enumerate(self.tests) if t.test_id == test_id and t.source == "model_free" and not t.rejected_at), None)
        if at is None:
            return f"no kept model-free test {test_id!r} to review"
        if relevant and (problem := citation_problem(cites, self.ctx.task.problem_statement)):
            return problem
        self.tests[at] = review(self.tests[at], relevant, cites, reason)
        return self.tests[at]


# ============================================================================================ the stage


def tests_patch(task: Task, tree: Path, files: dict[str, str]) -> HiddenTests:
    """The hidden tests with ``files`` (test path -> final text) folded in: one patch against the buggy
    tree for the paths the original patch owns or adds, the original ``files`` updated in place."""
    hidden = task.answer.hidden_tests
    in_files = {p: t for p, t in files.items() if p in hidden.files}
    tmp = Path(tempfile.mkdtemp(prefix="swedeck-strengthen-"))
    try:
        root = tmp / "repo"
        git(["clone", "-q", str(tree), str(root)], tmp)
        if not apply_trusted(hidden.patch, root):
            raise RuntimeError("the hidden tests do not apply to the buggy tree")
        for path, text in files.items():
            if path not in in_files:
                (root / path).parent.mkdir(parents=True, exist_ok=True)
                (root / path).write_text(text)
        git(["add", "-A", "--force"], root)
        patch = git(["diff", "--cached", "--no-renames", "--no-color", "HEAD"], root)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return HiddenTests(patch=patch, files={**hidden.files, **in_files})


def confirmed_survivors(probes: Sequence[ProbeResult]) -> list[ProbeResult]:
    return [p for p in probes if p.kind == "plausible_wrong" and p.reward == 1.0 and p.distinguishing is not None]


def strengthen(
    task: Task,
    p1: Pipeline1Result,
    probes: Sequence[ProbeResult],
    backend: Backend,
    stamp: dict[str, str],
    tree: Path,
    *,
    judge: Callable[[Workbench], str] | None = None,
    gold_runs: int = GOLD_RUNS,
    log_dir: Path | None = None,
) -> Strengthening:
    """Strengthen one task's hidden tests (see the module docstring). ``judge`` runs the judge's
    session over the workbench once the model-free tests are validated (it proposes tests and reviews
    the model-free ones) and says how the session ended."""
    started = time.monotonic()
    survivors = confirmed_survivors(probes)
    alternatives = [p for p in probes if p.kind == "correct_alternative" and p.reward == 1.0]
    files = list(dict.fromkeys([t.partition("::")[0] for t in p1.fail_to_pass]))
    sources = test_sources(task, tree, files)
    existing = "\n".join(text for path in touched_files(task.answer.gold_patch) if (text := read_text(tree / path)) is not None)
    ctx = Context(task, p1, backend, survivors, alternatives, sources, existing, gold_runs=gold_runs, log_dir=log_dir)

    ended = ""  # how the judge's session ended

    def done(status: str, reason: str, tests: list[AddedTest], **extra: object) -> Strengthening:
        return Strengthening(**stamp, status=status, reason=reason, survivors=[p.probe_id for p in survivors],  # type: ignore[arg-type]
                             tests=tests, executions=ctx.executions, duration_s=round(time.monotonic() - started, 2),
                             judge_session=ended, **extra)  # fmt: skip

    if not survivors:
        return done("not_repaired", "no confirmed survivor: no wrong patch the engine told apart from gold passes the tests", [], killed=[])
    bench = Workbench(ctx)
    seen: set[str] = set()
    for probe in survivors:
        if probe.probe_id in bench.killed():
            continue  # a kept test already rejects it
        cand = model_free_candidate(probe, sources)
        if cand is not None and cand.code not in seen:
            seen.add(cand.code)
            if bench.consider(cand).rejected_at == "fails_on_buggy" and (again := model_free_candidate(probe, sources, anchored=True)):
                bench.consider(again)
    ended = judge(bench) if judge is not None else ""
    session = f"; judge: {ended}" if judge is not None else ""
    tests = bench.tests
    kept = [(t, c) for t, c in zip(tests, bench.candidates, strict=True) if not t.rejected_at]
    if not kept:
        steps = sorted({t.rejected_at for t in tests})
        return done("not_repaired", f"no candidate test passed validation (rejected at: {', '.join(steps) or 'none written'}){session}", tests, killed=[])
    added: dict[str, str] = {}
    for _, cand in kept:
        added[cand.file] = insert_test(added.get(cand.file, sources[cand.file]), cand.code, cand.cls)
    new_ids = [t.test_id for t, _ in kept]
    expected = {**p1.expected_status, **dict.fromkeys(new_ids, "PASSED")}
    final = ctx.with_tests(added, expected)
    g = ctx.grade(final, task.answer.gold_patch, expected, None)
    if g.reward != 1.0:
        return done("not_repaired", f"gold does not reproduce its pattern with the added tests: {g.reason} {dict(list(g.differing.items())[:3])}", tests, killed=[])
    final_killed = [p.probe_id for p in survivors if ctx.grade(final, p.patch, expected, None).reward == 0.0]
    hidden = tests_patch(task, tree, added)
    status = "repaired" if len(final_killed) == len(survivors) else "partially_repaired" if final_killed else "not_repaired"
    reason = {
        "repaired": f"{len(kept)} added test(s) reject every confirmed survivor ({len(survivors)})",
        "partially_repaired": f"{len(final_killed)} of {len(survivors)} confirmed survivors rejected; the others behave like gold on every input the kept tests try",
        "not_repaired": "the kept tests reject no survivor in a full grade",
    }[status]
    unreviewed = sum(t.relevance == "unreviewed" for t, _ in kept)
    if unreviewed:
        reason += f"; {unreviewed} model-free test(s) unreviewed (relevance not confirmed by a judge)"
    reason += session
    return done(status, reason, tests, killed=final_killed, tests_patch=hidden.patch, hidden_files=hidden.files,
                expected_status=expected, fail_to_pass=[*p1.fail_to_pass, *new_ids])  # fmt: skip


# ============================================================================================ the run stage


def result_path(out: Path, instance_id: str) -> Path:
    return under(out / "strengthen", instance_id)


def eligible(verdict: VerdictRecord | None, probes: Sequence[ProbeResult], every: bool) -> bool:
    """A task is strengthened when the judge called it too loose; with ``every`` also when it has a
    confirmed survivor whatever its verdict (accepted tasks, or tasks no judge saw)."""
    if verdict is not None and verdict.verdict == "too_loose":
        return True
    return every and bool(confirmed_survivors(probes))


def finished(out: Path, task: Task, config_hash: str) -> bool:
    path = result_path(out, task.instance_id) / "strengthening.parquet"
    if not path.exists():
        return False
    return {(r.config_hash, r.task_hash) for r in read_records(path, Strengthening)} == {(config_hash, task.task_hash())}


def process_task(
    task: Task,
    p1: Pipeline1Result,
    probes: Sequence[ProbeResult],
    backend: Backend,
    config_hash: str,
    tree: Path,
    out: Path,
    judge: Callable[[Workbench], str] | None = None,
) -> Strengthening:
    """Strengthen one task of a run and commit its record atomically under ``OUT/strengthen/<id>/``."""
    stamp = {"config_hash": config_hash, "task_hash": task.task_hash(), "instance_id": task.instance_id}
    record = strengthen(task, p1, probes, backend, stamp, tree, judge=judge, log_dir=under(out / "logs", task.instance_id))
    commit_folder(result_path(out, task.instance_id), [("strengthening", Strengthening, [record])])
    return record


def records(out: Path) -> dict[str, Strengthening]:
    """Every stored strengthening record of the run directory ``out``, by instance id."""
    found = {}
    for path in sorted((out / "strengthen").glob("*/strengthening.parquet")):
        for record in read_records(path, Strengthening):
            found[record.instance_id] = record
    return found
