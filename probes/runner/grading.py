"""Scoring counterfactual patches with the one grader, cheaply and soundly.

Every probe is graded against Pipeline 1's gold pattern (``p1.expected_status``) under the exact-pattern
contract: reward 1 only when every test's status equals gold's. Any selected test that deviates from
gold therefore proves reward 0 (the full run holds that test to the same expectation). With
``selection`` (the default) a probe runs only the tests that can tell it apart from gold:

1. Change impact. Once per task, gold runs with the coverage plugin (``harness/grading/plugins/swedeck_coverage``)
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
   then a deviation. The patch not applying and a run hitting the time or output limit are final too
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
source text or line numbers (``inspect``, tracebacks, warnings keyed by line). A test run in a subset
behaves as in the full run (the earlier binding-tests-first selection assumed the same).

Mutants loop forever now and then, so ``probe_task`` grades with a backend whose per-command timeout is
scaled to Pipeline 1's runs (``probe_timeout``) instead of the configured default.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import difflib
import functools
import json
import os
import symtable
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from harness.config import SandboxConfig, Settings
from harness.sandboxes.envs import prepare_tree
from harness.grading.grader import BAD, grade, run_tests
from harness.grading.shipping import PLUGINS
from harness.grading.parsers import uses_junit
from harness.pyast import parse
from harness.records import (
    Grade,
    Pipeline1Result,
    ProbeResult,
    Status,
    Task,
    content_hash,
)
from harness.sandboxes.backends import get_backend
from probes.differential import check_survivors, session_for
from probes.generate import Candidate, correct_alternatives, plausible_wrong
from probes.session import SessionPool, Stats
from probes.workspace import Trees, recall, remember

TRUSTED_SELECTED_REASONS = {"pattern_mismatch", "patch_apply_failed", "forbidden_change", "timeout", "output_limit"}
TIMEOUT_FLOOR_S = 30.0  # a probe's per-command timeout is at least this ...
TIMEOUT_FACTOR = 10.0  # ... or this many times one Pipeline 1 test run, whichever is larger
COVERAGE_PLUGIN = PLUGINS / "swedeck_coverage.py"


def probe_id(task: Task, candidate: Candidate) -> str:
    return content_hash([task.instance_id, candidate.kind, candidate.operator, candidate.patch])


def selection(p1: Pipeline1Result) -> list[str]:
    """The tests a probe is graded on first: FAIL_TO_PASS (where the binding assertions live)."""
    return [t for t in p1.fail_to_pass if t in p1.expected_status]


# ============================================================================================ gold coverage

Lines = dict[str, set[int]]  # path -> line numbers (or first lines of code objects)


@dataclass
class GoldCoverage:
    """Per-test coverage of the gold tree's changed Python files, from one traced gold run."""

    usable: bool
    why: str = ""  # why not usable
    files: list[str] = field(default_factory=list)  # the paths traced
    lines: dict[str, Lines] = field(default_factory=dict)  # test id -> lines it ran
    calls: dict[str, Lines] = field(default_factory=dict)  # test id -> code objects it entered
    global_lines: Lines = field(default_factory=dict)  # ran outside any test: counts for every test
    global_calls: Lines = field(default_factory=dict)
    always: set[str] = field(default_factory=set)  # tests that always run (no record, started a process)
    executions: int = 0  # tests run to record it
    log_path: str = ""

    def to_json(self) -> str:
        def plain(table: Lines) -> dict[str, list[int]]:
            return {k: sorted(v) for k, v in table.items()}

        return json.dumps({
            "usable": self.usable, "why": self.why, "files": self.files,
            "lines": {t: plain(v) for t, v in self.lines.items()}, "calls": {t: plain(v) for t, v in self.calls.items()},
            "global_lines": plain(self.global_lines), "global_calls": plain(self.global_calls),
            "always": sorted(self.always), "executions": self.executions, "log_path": self.log_path,
        })  # fmt: skip

    @classmethod
    def from_json(cls, text: str) -> GoldCoverage:
        raw = json.loads(text)

        def sets(table: Mapping[str, list[int]]) -> Lines:
            return {k: set(v) for k, v in table.items()}

        return cls(
            usable=raw["usable"], why=raw["why"], files=raw["files"],
            lines={t: sets(v) for t, v in raw["lines"].items()}, calls={t: sets(v) for t, v in raw["calls"].items()},
            global_lines=sets(raw["global_lines"]), global_calls=sets(raw["global_calls"]),
            always=set(raw["always"]), executions=raw["executions"], log_path=raw["log_path"],
        )  # fmt: skip


def _merge(into: Lines, table: Mapping[str, Iterable[int]]) -> None:
    for path, values in table.items():
        into.setdefault(path, set()).update(values)


def parse_coverage(text: str, files: Sequence[str], expected: Iterable[str]) -> GoldCoverage:
    """The plugin's records as a ``GoldCoverage`` (unusable when it cannot vouch for every test)."""
    cov = GoldCoverage(usable=True, files=list(files))
    globals_seen = 0
    for raw in text.splitlines():
        try:
            row = json.loads(raw)
        except json.JSONDecodeError:
            return GoldCoverage(usable=False, why="a coverage record was cut short", files=list(files))
        if row.get("lost"):
            return GoldCoverage(usable=False, why="another tracer replaced the coverage tracer", files=list(files))
        if row.get("global"):
            globals_seen += 1
            if row.get("spawned"):
                return GoldCoverage(usable=False, why="a process started outside any test", files=list(files))
            _merge(cov.global_lines, row.get("lines", {}))
            _merge(cov.global_calls, row.get("calls", {}))
            continue
        test_id = row.get("test", "")
        if row.get("spawned"):
            cov.always.add(test_id)
        _merge(cov.lines.setdefault(test_id, {}), row.get("lines", {}))
        _merge(cov.calls.setdefault(test_id, {}), row.get("calls", {}))
    if not globals_seen:
        return GoldCoverage(usable=False, why="no coverage record from pytest (another runner?)", files=list(files))
    cov.always |= {t for t in expected if t not in cov.lines}
    # a traced file nothing ran (not imported, or imported from another copy) vouches for nothing
    ran = set(cov.global_lines) | set(cov.global_calls)
    for table in [*cov.lines.values(), *cov.calls.values()]:
        ran |= set(table)
    cov.files = [path for path in files if path in ran]
    return cov


def gold_coverage(
    task: Task,
    backend,  # noqa: ANN001 - harness.sandboxes.sandbox.Backend
    p1: Pipeline1Result,
    *,
    log_dir: Path | None = None,
    cache_dir: Path | None = None,
    tree: Path | None = None,
    runner=run_tests,  # noqa: ANN001 - harness.grading.grader.run_tests or a probe session pool's run_tests
) -> GoldCoverage:
    """One gold run with the coverage plugin tracing gold's Python files, checked against gold's
    pattern; a usable result is cached in ``cache_dir`` by task, pattern and plugin (a cached result
    reports 0 executions, since nothing ran for it)."""
    cache = None
    if cache_dir is not None:
        key = content_hash([task.task_hash(), getattr(backend, "name", ""), p1.expected_status, COVERAGE_PLUGIN.read_text()])
        cache = cache_dir / f"gold-coverage-{key}.json"
        if cache.exists():
            found = GoldCoverage.from_json(cache.read_text())
            found.executions = 0
            return found
    if not uses_junit(task.log_parser):
        return GoldCoverage(usable=False, why=f"the {task.log_parser} runner is not pytest")
    if tree is None:
        tree = prepare_tree(task, getattr(backend, "settings", None) or Settings.from_env())
    with Trees(task, tree) as trees:
        files = [p for p, text in trees.gold.items() if p.endswith(".py") and text is not None] if trees.ok else []
    if not files:
        return GoldCoverage(usable=False, why="gold changes no Python file")
    run = runner(task, task.answer.gold_patch, backend, log_dir=log_dir, coverage=files)
    expected = {k: str(v) for k, v in p1.expected_status.items()}
    if run.outcome != "ok" or run.spoof_evidence:
        cov = GoldCoverage(usable=False, why=f"the traced gold run failed: {run.outcome} {run.detail[-300:]}")
    elif {k: str(v) for k, v in run.statuses.items()} != expected:
        cov = GoldCoverage(usable=False, why="the traced gold run did not reproduce gold's pattern")
    else:
        cov = parse_coverage(run.coverage, files, expected)
    cov.executions, cov.log_path = len(run.statuses), run.log_path
    if cache is not None and cov.usable:  # a failed run may be the machine's fault: try again next time
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(cov.to_json())
    return cov


# ============================================================================================ change impact

ALL = None  # every test is impacted


@dataclass(frozen=True)
class Region:
    """Gold-tree lines of one file: a test touched it when it ran one of ``lines`` or entered a code
    object whose first line is in ``calls`` (both inclusive ranges)."""

    lines: tuple[tuple[int, int], ...] = ()
    calls: tuple[tuple[int, int], ...] = ()

    def hit(self, lines: Iterable[int] = (), calls: Iterable[int] = ()) -> bool:
        return any(a <= n <= b for n in lines for a, b in self.lines) or any(
            a <= n <= b for n in calls for a, b in self.calls
        )


class _Unsure(Exception):
    """The mapping cannot vouch for the change: every test is impacted."""


_STMT_FIELDS = ("body", "orelse", "finalbody")
_RECURSE = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try, ast.FunctionDef, ast.AsyncFunctionDef)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def _docstring(body: list[ast.stmt]) -> ast.stmt | None:
    first = body[0] if body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        return first
    return None


def _header(node: ast.stmt) -> str:
    """The statement without its blocks (a function keeps its docstring: it is no code that runs)."""
    head = copy.copy(node)
    for name in _STMT_FIELDS:
        if hasattr(head, name):
            setattr(head, name, [])
    if isinstance(node, _FUNCTIONS):
        doc = _docstring(node.body)
        head.body = [doc] if doc is not None else []
    if isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
        head.handlers = [ast.ExceptHandler(type=h.type, name=h.name, body=[]) for h in node.handlers]
    return ast.dump(head)


def _body(node: ast.stmt) -> list[ast.stmt]:
    """A function's statements after its docstring."""
    return node.body[1:] if _docstring(node.body) is not None else node.body


def _skeleton(tree: ast.Module) -> str:
    """The module with every function body (not its docstring) removed: what runs at import."""
    tree = copy.deepcopy(tree)
    for node in ast.walk(tree):
        if isinstance(node, _FUNCTIONS):
            doc = _docstring(node.body)
            node.body = [doc] if doc is not None else []
    return ast.dump(tree)


def _units(tree: ast.AST) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    """Functions not nested in another function (methods included), in source order."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, _FUNCTIONS):
            yield node
        elif not isinstance(node, ast.Lambda):
            yield from _units(node)


def _first_line(node: ast.stmt) -> int:
    decorators = getattr(node, "decorator_list", None) or []
    return min([node.lineno, *(d.lineno for d in decorators)])


def _span(node: ast.stmt) -> Region:
    return Region(lines=((_first_line(node), node.end_lineno or node.lineno),))


def _silent(node: ast.stmt) -> bool:
    """A statement that may run without a line event (no code, or code the compiler may drop)."""
    if isinstance(node, (ast.Pass, ast.Global, ast.Nonlocal, ast.Break, ast.Continue)):
        return True
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
        return True
    if isinstance(node, ast.AnnAssign) and node.value is None:
        return True
    return isinstance(node, (ast.If, ast.While)) and isinstance(node.test, ast.Constant)


def _reach(block: list[ast.stmt], i: int, owner: Region) -> Region:
    """The tests that reach position ``i`` of ``block`` ran the statement there, or the last statement
    before it that leaves a line event, or entered the block (``owner``)."""
    if i < len(block) and not _silent(block[i]):
        return _span(block[i])
    for k in range(min(i, len(block)) - 1, -1, -1):
        if not _silent(block[k]):
            return _span(block[k])
    return owner


def _entry(fn: ast.stmt) -> Region:
    """Tests that called ``fn``: its code object starts at its first decorator or its ``def`` line."""
    return Region(calls=((_first_line(fn), fn.lineno),))


def _blocks(gold: ast.stmt, probe: ast.stmt) -> Iterator[tuple[list[ast.stmt], list[ast.stmt]]]:
    for name in _STMT_FIELDS:
        if hasattr(gold, name):
            if isinstance(gold, _FUNCTIONS) and name == "body":
                yield _body(gold), _body(probe)
            else:
                yield getattr(gold, name), getattr(probe, name)
    for g, p in zip(getattr(gold, "handlers", []), getattr(probe, "handlers", []), strict=True):
        yield g.body, p.body


def _block_regions(gold: list[ast.stmt], probe: list[ast.stmt], owner: Region) -> Iterator[Region]:
    g_dump, p_dump = [ast.dump(s) for s in gold], [ast.dump(s) for s in probe]
    if g_dump == p_dump:
        return
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, g_dump, p_dump, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        if tag == "replace" and i2 - i1 == j2 - j1:
            for k in range(i2 - i1):
                yield from _stmt_regions(gold, i1 + k, probe[j1 + k], owner)
            continue
        yield _reach(gold, i1, owner)  # code inserted or deleted at position i1
        yield from (_span(s) for s in gold[i1:i2])


def _stmt_regions(block: list[ast.stmt], i: int, probe: ast.stmt, owner: Region) -> Iterator[Region]:
    gold = block[i]
    same_head = type(gold) is type(probe) and isinstance(gold, _RECURSE) and _header(gold) == _header(probe)
    if same_head and (not isinstance(gold, _FUNCTIONS) or _is_generator(gold) == _is_generator(probe)):
        inner = _entry(gold) if isinstance(gold, _FUNCTIONS) else _span(gold)
        for g_block, p_block in _blocks(gold, probe):
            yield from _block_regions(g_block, p_block, inner)
        return
    yield _reach(block, i, owner)
    yield _span(gold)


def _scopes(text: str, name: str) -> dict[tuple[str, ...], dict[str, str]]:
    """How each named scope (function or class, by its path) resolves each name it uses."""
    out: dict[tuple[str, ...], dict[str, str]] = {}

    def kind(sym: symtable.Symbol) -> str:
        if sym.is_global():
            return "global"
        if sym.is_nonlocal() or sym.is_free():
            return "free"
        return "local" if sym.is_local() else "other"

    def walk(table: symtable.SymbolTable, path: tuple[str, ...]) -> None:
        seen: dict[str, int] = {}
        for child in table.get_children():
            if child.get_type() not in ("function", "class"):
                continue
            n = seen[child.get_name()] = seen.get(child.get_name(), 0) + 1
            key = (*path, f"{child.get_name()}#{n}")
            out[key] = {s.get_name(): kind(s) for s in child.get_symbols()}
            walk(child, key)

    walk(symtable.symtable(text, name, "exec"), ())
    return out


def _is_generator(fn: ast.AST) -> bool:
    """Whether ``fn`` itself (not a function nested in it) yields."""
    stack = list(ast.iter_child_nodes(fn))
    while stack:
        child = stack.pop()
        if isinstance(child, (ast.Yield, ast.YieldFrom)):
            return True
        if not isinstance(child, _SCOPES):
            stack.extend(ast.iter_child_nodes(child))
    return False


def changed_regions(gold: str, probe: str, path: str = "<file>") -> list[Region] | None:
    """Gold-tree regions of ``path`` whose tests may see ``probe`` behave differently from ``gold``;
    None (``ALL``) when the change is outside function bodies or cannot be mapped."""
    try:
        g_tree, p_tree = parse(gold, path), parse(probe, path)
        compile(probe, path, "exec", dont_inherit=True)
        g_scopes, p_scopes = _scopes(gold, path), _scopes(probe, path)
    except (SyntaxError, ValueError, RecursionError):
        return ALL
    if _skeleton(g_tree) != _skeleton(p_tree):
        return ALL  # module code, a def or class line, a decorator, a signature, a docstring
    regions: list[Region] = []
    try:
        for g_fn, p_fn in zip(_units(g_tree), _units(p_tree), strict=True):
            if ast.dump(g_fn) == ast.dump(p_fn):
                continue
            if _is_generator(g_fn) != _is_generator(p_fn):
                raise _Unsure  # a caller that never iterated may see the difference
            rescoped = any(
                g_scopes[key][name] != p_scopes[key][name]
                for key in set(g_scopes) & set(p_scopes)
                for name in set(g_scopes[key]) & set(p_scopes[key])
            )
            if rescoped:  # a name moved between local, global and enclosing scope: every caller
                body, end = _body(g_fn), g_fn.end_lineno or g_fn.lineno
                start = body[0].lineno if body else end + 1
                regions.append(Region(lines=((start, end),), calls=((_first_line(g_fn), end),)))
                continue
            regions += _block_regions(_body(g_fn), _body(p_fn), _entry(g_fn))
    except (_Unsure, ValueError):
        return ALL
    return regions


def impacted_tests(
    gold: Mapping[str, str | None], probe: Mapping[str, str | None], cov: GoldCoverage
) -> tuple[set[str] | None, str]:
    """The tests that may not keep gold's status under the probe (``ALL``: every test) and, for ALL,
    why. ``gold`` and ``probe`` map every path where they may differ to its text (None: absent)."""
    if not cov.usable:
        return ALL, f"coverage unusable: {cov.why}"
    impacted = set(cov.always)
    for path in sorted(set(gold) | set(probe)):
        g_text, p_text = gold.get(path), probe.get(path)
        if g_text == p_text:
            continue
        if path not in cov.files or g_text is None or p_text is None:
            return ALL, f"{path}: not traced"
        regions = changed_regions(g_text, p_text, path)
        if regions is ALL:
            return ALL, f"{path}: a change outside function bodies, or one the mapping cannot place"
        for region in regions:
            if region.hit(cov.global_lines.get(path, ()), cov.global_calls.get(path, ())):
                return ALL, f"{path}: changed code also ran outside any test"
            impacted |= {
                t for t in cov.lines
                if region.hit(cov.lines[t].get(path, ()), cov.calls.get(t, {}).get(path, ()))
            }  # fmt: skip
    return impacted, ""


# ============================================================================================ grading


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
) -> ProbeResult:
    """Grade one probe by its plan (see the module docstring); ``select`` may also be a plain list of
    tests to run first, followed by a full grade."""
    if not isinstance(select, Plan):
        select = Plan(runs=[list(select)] if select else [], full=True, stop_early=False)
    executions, ran = 0, {}
    selected_reward, final, decided_by, stopped = None, None, "full", False
    last: Grade | None = None
    for tests in select.runs:
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
        differing=[] if passed else _differing(final, stopped),
        log_path=final.log_path,
        tests_run=list(ran),
        decided_by=decided_by,
        inherited=select.inherited if decided_by == "selection" and passed else 0,
    )


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
    """
    if timeout_s is not None:
        backend = with_timeout(backend, timeout_s)
    expected = {test_id: Status(status) for test_id, status in p1.expected_status.items()}
    if not candidates:
        return []
    plans = [Plan(runs=[], full=True, stop_early=False)] * len(candidates)  # the plain full grade
    tree = tree or prepare_tree(task, getattr(backend, "settings", None) or Settings.from_env())
    pool = SessionPool(task, backend, tree, workers, stats) if sessions else None
    measured: dict[int, ProbeResult] = {}  # a probe graded in full to measure the suite

    def one(item: tuple[Candidate, Plan]) -> ProbeResult:
        return run_one(task, item[0], backend, expected, item[1], stamp, log_dir, pool.grade if pool else grade)

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
        if workers <= 1:
            graded = [one(item) for item in todo]
        else:
            with ThreadPoolExecutor(max_workers=workers) as threads:
                graded = list(threads.map(one, todo))
        rest = iter(graded)
        return [measured[i] if i in measured else next(rest) for i in range(len(candidates))]
    finally:
        if pool is not None:
            pool.close()


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


_selection = selection  # run_probes' keyword argument shadows the function's name


def with_timeout(backend, timeout_s: float):  # noqa: ANN001, ANN201 - harness.sandboxes.sandbox.Backend
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


GENERATION_CODE = (Path(__file__).parent, Path(__file__).parents[1] / "harness")  # what generation runs


@functools.cache
def _generation_code() -> str:
    """The sources of GENERATION_CODE, read once per process (not once per task)."""
    return content_hash([f.read_text() for folder in GENERATION_CODE for f in sorted(folder.rglob("*.py"))])


def generate(task: Task, tree: Path, p1: Pipeline1Result, cache_dir: Path | None = None) -> list[Candidate]:
    """The task's model-free probes, cached in ``cache_dir`` when given: they are a function of the
    task's content, its FAIL_TO_PASS tests and the code that generates them (every draw is
    derandomised), so the key holds the sources of ``probes`` and ``harness`` and a change to either
    generates again. A cached probe comes with the files it produces, remembered as at its making
    (``probes.workspace.remember``), so sessions need no host clone to take it."""
    if cache_dir is None:
        return plausible_wrong(task, tree, p1.fail_to_pass) + correct_alternatives(task, tree)
    cache = cache_dir / f"candidates-{content_hash([task.task_hash(), p1.fail_to_pass, _generation_code()])}.json"
    if cache.exists():
        stored = json.loads(cache.read_text())
        for row in stored:
            if row["known"]:
                remember(tree, row["patch"], row["files"])
        return [Candidate(**{k: v for k, v in row.items() if k not in ("known", "files")}) for row in stored]
    candidates = plausible_wrong(task, tree, p1.fail_to_pass) + correct_alternatives(task, tree)
    rows = [{**dataclasses.asdict(c), **dict(zip(("known", "files"), recall(tree, c.patch)))} for c in candidates]
    cache.parent.mkdir(parents=True, exist_ok=True)
    partial = cache.with_name(f"{cache.name}.{os.getpid()}-{threading.get_ident()}")
    partial.write_text(json.dumps(rows))
    partial.replace(cache)  # whole or absent: two runs may write the same entry
    return candidates


def probe_task(
    task: Task,
    backend,  # noqa: ANN001 - harness.sandboxes.sandbox.Backend
    p1: Pipeline1Result,
    stamp: dict[str, str],
    *,
    selection: bool = True,
    log_dir: Path | None = None,
    workers: int = 1,
    timeout_s: float | None = None,
    differential: bool = True,
) -> list[ProbeResult]:
    """Generate the model-free probes of a task Pipeline 1 kept, and grade them (per-command timeout
    ``timeout_s``, default ``probe_timeout(p1)``). A rejected task has no gold pattern to hold probes
    to, so it gets none. With ``selection`` the gold coverage is recorded once here when it can pay for
    itself (``worth_tracing``), cached in the settings' cache folder (a fact of the task's content and
    gold pattern, like the trusted facts: a second run folder over the same tasks does not trace
    again). With ``differential`` every wrong
    probe that survived is run against gold by ``probes.differential``: evidence only with a
    distinguishing input, else ``likely_equivalent``."""
    if p1.decision != "keep" or not p1.expected_status:
        return []
    backend.prepare(task)
    settings = getattr(backend, "settings", None) or Settings.from_env()
    tree = prepare_tree(task, settings)
    timeout_s = probe_timeout(p1) if timeout_s is None else timeout_s
    candidates = generate(task, tree, p1, settings.cache_dir / "probes")
    graded = run_probes(
        task, candidates, backend, p1, stamp, selection=selection, log_dir=log_dir, workers=workers,
        timeout_s=timeout_s, tree=tree, coverage_cache=settings.cache_dir / "coverage",
    )  # fmt: skip
    if not differential or not any(p.kind == "plausible_wrong" and p.reward == 1.0 for p in graded):
        return graded
    return check_survivors(session_for(task, backend, p1.fail_to_pass, tree), graded)
