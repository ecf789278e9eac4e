"""A candidate test's validation, step by step by the one grader, and the workbench of one task's validated candidates."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.grading.grader import grade
from harness.pyast import parse
from harness.records import AddedTest, Grade, HiddenTests, Pipeline1Result, ProbeResult, Status, Task, ValidationCheck, content_hash
from harness.sandboxes.sandbox import Backend
from judge.rules import added_test_leaks
from judge.strengthen.cases import place
from judge.strengthen.writing import Candidate, implementation_details


GOLD_RUNS = 3  # k: a kept test passes on gold this many times
RAN = ("pattern_mismatch", "tests_errored")  # a zero reward the test itself gave


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
    gold_graded: dict[str, Grade] = field(default_factory=dict)  # gold's full grades, by suite and pattern

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


    def gold_full(self, task: Task) -> Grade:
        """Gold's full grade on ``task``'s suite and pattern, remembered: with a single kept test the
        final suite is the one that test's ``pass_to_pass`` step graded, and gold is stable on it
        (``gold_stable``), so grading it again tells nothing new."""
        assert task.answer.expected_status is not None
        expected = {k: str(v) for k, v in task.answer.expected_status.items()}
        key = content_hash([task.answer.hidden_tests, expected])
        if key not in self.gold_graded:
            self.gold_graded[key] = self.grade(task, task.answer.gold_patch, expected, None)
        return self.gold_graded[key]


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
        text = place(base, cand)
        parse(text)
    except (SyntaxError, StopIteration, ValueError) as err:
        return _reject(record, ValidationCheck(step="leak", passed=False, detail=f"the test does not fit the file: {err}"))
    leaks = added_test_leaks(cand.code, issue=ctx.task.problem_statement, gold_patch=ctx.task.answer.gold_patch, existing=ctx.existing)
    record.checks.append(ValidationCheck(step="leak", passed=not leaks, detail="; ".join(leaks) or "no gold-only name or line"))
    if leaks:
        return _reject(record)
    details = implementation_details(cand.code, cand.copied)
    record.checks.append(ValidationCheck(step="contract", passed=not details, detail=(
        f"it pins {', '.join(details)}, which another correct fix may not share" if details
        else "no exception message, object address, hash value or full-precision float")))  # fmt: skip
    if details:
        return _reject(record)
    tid = cand.test_id
    alone = {tid: "PASSED"}
    task = ctx.with_tests({cand.file: text}, {**ctx.p1.expected_status, tid: "PASSED"})
    steps: list[tuple[str, Callable[[], ValidationCheck]]] = [
        ("gold_stable", lambda: _gold_stable(ctx, task, alone, tid)),
        ("fails_on_buggy", lambda: _on_buggy(ctx, task, alone, tid, cand.keeps)),
        ("kills_survivor", lambda: _kills(ctx, task, alone, tid, record, cand.footprint or cand.keeps)),
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
        seen.append(str(g.statuses.get(tid, g.reason)) + ("" if g.reward == 1.0 or tid not in g.statuses else f" ({g.reason}: {g.detail[:120]})"))
    ok = all(r == 1.0 for r in rewards)
    detail = f"{ctx.gold_runs} gold runs: {', '.join(seen)}"
    return ValidationCheck(step="gold_stable", passed=ok, detail=detail + ("" if ok else " (flaky or failing on gold)"),
                           rewards=rewards, executions=len(rewards))  # fmt: skip


def _on_buggy(ctx: Context, task: Task, alone: dict[str, str], tid: str, keeps: bool = False) -> ValidationCheck:
    """The test fails on the buggy tree; one of what the fix keeps passes there."""
    g = ctx.grade(task, "", alone, [tid])
    status = g.statuses.get(tid)
    ok = status == Status.PASSED if keeps else status in (Status.FAILED, Status.ERROR)
    return ValidationCheck(step="passes_on_buggy" if keeps else "fails_on_buggy", passed=ok, detail=f"on the buggy tree: {status or g.reason}",
                           rewards=[g.reward], executions=1)  # fmt: skip


def _kills(ctx: Context, task: Task, alone: dict[str, str], tid: str, record: AddedTest, footprint: bool = False) -> ValidationCheck:
    """A survivor's test must fail on one; a footprint test pins what gold changed where the buggy tree
    differs (``fails_on_buggy``), so the survivors it fails are recorded, none required."""
    rewards = []
    for probe in ctx.survivors:
        g = ctx.grade(task, probe.patch, alone, [tid])
        rewards.append(g.reward)
        if g.reward == 0.0 and g.reason in RAN:
            record.kills.append(probe.probe_id)
    ok = bool(record.kills) or footprint
    detail = f"fails on {len(record.kills)} of {len(ctx.survivors)} survivors"
    return ValidationCheck(step="kills_survivor", passed=ok, rewards=rewards, executions=len(rewards),
                           detail=detail + ("; a footprint input: no survivor required" if footprint and not record.kills else ""))  # fmt: skip


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
    g = ctx.gold_full(task)
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
    transcript: str = ""  # the judge's session over it, where one ran

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
