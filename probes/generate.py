"""Model-free counterfactual patches, derived mechanically from a task's gold patch.

Two kinds (``harness.records.ProbeKind``):

* ``plausible_wrong``: variants of gold that should break the fix (SWE-smith / mutmut / Kali-style):
  drop one hunk or change block of gold, revert one file of a multi-file gold, operator mutants of the
  lines gold *added* (comparison, arithmetic, boolean and constant swaps, negated ``if``, an early
  ``return None`` at the start of a block gold added, deletion of a statement gold added), and
  ``special_case``: gold's new code guarded by ``if str(<name>) in (<literals of the FAIL_TO_PASS
  tests>):`` with the buggy code in the ``else`` branch, i.e. a patch that only fixes the exact inputs
  the tests use. A survivor (reward 1) means the tests cannot tell the variant from gold; it may still
  be equivalent to gold, so it is evidence of a too-loose suite, never a verdict.
* ``correct_alternative``: behaviour-preserving rewrites (libcst) of the gold-patched code, restricted
  to the functions gold touched: renamed locals gold introduced, a renamed private helper gold
  introduced, negated-and-swapped if/else branches, an expression extracted into a local, loop <->
  list comprehension, two independent adjacent assignments reordered, and a reworded error message
  (only for a raise gold added whose message the issue text does not quote). A failure (reward 0) is
  evidence of an over-restrictive suite: the tests pin an incidental detail of gold.

Every candidate is a real unified diff against the sealed buggy tree: gold is applied in a temporary
clone, the post-gold files are transformed, and ``git diff`` produces the patch. The tree itself is
never modified. Identical patches are deduplicated; candidates equal to gold (or, for wrong probes,
AST-equal to gold or to the buggy tree) and empty ones are dropped; each operator is capped.

Limits of ``special_case``: literals are read statically from the FAIL_TO_PASS test functions (and
their decorators); the guard compares ``str(name)`` of each parameter of the enclosing function and
of each local gold's new code reads, so it only "special-cases" an input whose string form equals a
test literal (a str or number argument, or an object whose ``__str__`` is such a literal, e.g. a
currency code). Inputs the tests build indirectly (computed values, objects with a verbose
``__str__``) are never matched, and the guard then always falls back to the buggy code.
"""

from __future__ import annotations

import ast
import difflib
import itertools
import logging
import os
import re
import shutil
import subprocess
import tempfile
import textwrap
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import libcst as cst
from libcst.metadata import Assignment, FunctionScope, MetadataWrapper, PositionProvider, ScopeProvider

from harness.diffs import is_r2e_test_path
from harness.envs import GIT_IDENTITY
from harness.records import ProbeKind, Task
from probes.pyast import parse

log = logging.getLogger(__name__)

MAX_PER_OPERATOR = 4  # candidates kept per operator and per task
MAX_SPECIAL_CASE = 6  # special_case tries several guard names per change block
MAX_TOTAL = 40  # candidates per task and per kind, operators interleaved round-robin
MAX_LITERALS = 64  # literals in one special_case guard
CONTEXT = 3  # lines of context that group change blocks into hunks, as in `git diff`

Contents = dict[str, "str | None"]  # path -> file text (None: the file does not exist)
Lazy = Callable[[], "Contents | None"]  # a candidate built only when its operator still needs one
PER_OPERATOR_SCAN = 3 * MAX_PER_OPERATOR  # rewrites tried per operator and file (some dedupe away)


@dataclass(frozen=True)
class Candidate:
    kind: ProbeKind
    operator: str
    description: str
    patch: str


# ============================================================================================ workspace


def _git(args: Sequence[str], cwd: Path, *, check: bool = True, stdin: str | None = None) -> str:
    done = subprocess.run(
        ["git", "-c", "core.quotepath=false", "-c", "core.autocrlf=false", *args],
        cwd=cwd, input=stdin, capture_output=True, text=True, env={**os.environ, **GIT_IDENTITY},
    )  # fmt: skip
    if check and done.returncode:
        raise RuntimeError(f"git {' '.join(args)} failed in {cwd}: {done.stderr.strip()}")
    return done.stdout


def _apply(patch: str, cwd: Path) -> bool:
    """Apply a trusted patch (gold, hidden tests) on the host clone; only git's strategies, which
    refuse paths inside .git."""
    if not patch.strip():
        return True
    path = cwd.parent / f".probe-{os.getpid()}-{id(patch)}.patch"
    path.write_text(patch if patch.endswith("\n") else patch + "\n")
    try:
        for extra in ([], ["--recount", "--ignore-space-change", "--ignore-whitespace"]):
            if subprocess.run(["git", "apply", *extra, str(path)], cwd=cwd, capture_output=True).returncode == 0:
                return True
        return False
    finally:
        path.unlink(missing_ok=True)


def _read(path: Path) -> str | None:
    if not path.is_file():
        return None
    return path.read_bytes().decode("utf-8", errors="surrogateescape")


@dataclass
class _Workspace:
    """A clone of the buggy tree with gold applied; ``diff`` turns file contents into a patch."""

    root: Path
    paths: list[str]  # files gold touched
    old: Contents
    new: Contents

    def diff(self, contents: Mapping[str, str | None]) -> str:
        for path in self.paths:
            text = contents.get(path, self.new[path])
            target = self.root / path
            if text is None:
                target.unlink(missing_ok=True)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(text.encode("utf-8", errors="surrogateescape"))
        _git(["add", "-A", "--force", "--", *self.paths], self.root)
        return _git(["diff", "--cached", "--no-renames", "--no-color", "HEAD", "--", *self.paths], self.root)


@contextmanager
def _workspace(task: Task, tree: Path) -> Iterator[_Workspace | None]:
    tmp = Path(tempfile.mkdtemp(prefix="swedeck-probes-"))
    try:
        root = tmp / "repo"
        _git(["clone", "-q", str(tree), str(root)], tmp)
        if not _apply(task.answer.gold_patch, root):
            yield None
            return
        _git(["add", "-A", "--force"], root)
        status = _git(["diff", "--cached", "--no-renames", "--name-only", "-z", "HEAD"], root)
        paths = [p for p in status.split("\0") if p]
        new = {p: _read(root / p) for p in paths}
        old = {}
        for p in paths:
            shown = subprocess.run(["git", "show", f"HEAD:{p}"], cwd=root, capture_output=True)
            old[p] = shown.stdout.decode("utf-8", errors="surrogateescape") if shown.returncode == 0 else None
        yield _Workspace(root, paths, old, new)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _test_sources(task: Task, tree: Path, files: Iterable[str]) -> dict[str, str]:
    """The hidden test files as they run: the buggy tree plus the hidden tests."""
    wanted = sorted(set(files))
    if not wanted:
        return {}
    tmp = Path(tempfile.mkdtemp(prefix="swedeck-probe-tests-"))
    try:
        root = tmp / "repo"
        _git(["clone", "-q", str(tree), str(root)], tmp)
        _apply(task.answer.hidden_tests.patch, root)
        out = {}
        for path in wanted:
            if path in task.answer.hidden_tests.files:
                out[path] = task.answer.hidden_tests.files[path]
            elif (text := _read(root / path)) is not None:
                out[path] = text
        return out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ============================================================================================ line level


def _lines(text: str | None) -> list[str]:
    return [] if text is None else text.splitlines(keepends=True)


def _opcodes(old: list[str], new: list[str]) -> list[tuple[str, int, int, int, int]]:
    return difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()


def _changes(old: list[str], new: list[str]) -> list[tuple[int, int, int, int]]:
    """Non-equal blocks (i1, i2, j1, j2), 0-based half-open, old -> new."""
    return [(i1, i2, j1, j2) for tag, i1, i2, j1, j2 in _opcodes(old, new) if tag != "equal"]


def _revert(old: list[str], new: list[str], blocks: set[tuple[int, int, int, int]]) -> str:
    """The new file with the given change blocks put back to their old lines."""
    out: list[str] = []
    for tag, i1, i2, j1, j2 in _opcodes(old, new):
        out += old[i1:i2] if tag != "equal" and (i1, i2, j1, j2) in blocks else new[j1:j2]
    return "".join(out)


def _hunks(old: list[str], new: list[str]) -> list[set[tuple[int, int, int, int]]]:
    """Change blocks grouped into hunks the way a unified diff with 3 lines of context groups them."""
    groups = difflib.SequenceMatcher(None, old, new, autojunk=False).get_grouped_opcodes(CONTEXT)
    return [{(i1, i2, j1, j2) for tag, i1, i2, j1, j2 in group if tag != "equal"} for group in groups]


def _added_lines(old: list[str], new: list[str]) -> set[int]:
    """1-based line numbers of the new file that gold added or changed."""
    return {j + 1 for _, _, j1, j2 in _changes(old, new) for j in range(j1, j2)}


def _touched_lines(old: list[str], new: list[str]) -> set[int]:
    """Added lines, plus the line next to each pure deletion (so a function where gold only deleted
    code counts as touched)."""
    out = set()
    for _, _, j1, j2 in _changes(old, new):
        out |= set(range(j1 + 1, j2 + 1)) if j2 > j1 else {max(j1, 1)}
    return out


def _is_python(path: str) -> bool:
    return path.endswith(".py") and not is_r2e_test_path(path)


DOC_SUFFIXES = (".md", ".rst", ".txt", ".adoc", ".html")


def _is_code(path: str) -> bool:
    """A file whose change can alter behaviour: not a test, not documentation."""
    p = PurePosixPath(path)
    return not is_r2e_test_path(path) and p.suffix.lower() not in DOC_SUFFIXES and "docs" not in p.parts[:-1] and not p.name.upper().startswith(("CHANGELOG", "CHANGES", "NEWS", "README"))


def _ast_dump(text: str | None) -> str | None:
    """The code's AST without docstrings (comments are not in it either): two texts with the same
    dump behave the same, so a probe that only differs from gold (or from the buggy tree) there is
    not a probe."""
    if text is None:
        return None
    try:
        tree = parse(text)
    except (SyntaxError, ValueError):
        return text
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body:
            first = body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree)


def _parses(text: str) -> bool:
    try:
        parse(text)
    except (SyntaxError, ValueError):
        return False
    return True


# ============================================================================================ libcst helpers


@dataclass
class _Py:
    """One post-gold Python file: its CST with positions and scopes, and the lines gold added."""

    path: str
    old: str | None
    new: str
    wrapper: MetadataWrapper
    pos: Mapping[cst.CSTNode, object]
    added: set[int]
    touched: set[int]
    functions: list[tuple[int, int, cst.FunctionDef]] = field(default_factory=list)

    @property
    def module(self) -> cst.Module:
        return self.wrapper.module

    def lines(self, node: cst.CSTNode) -> tuple[int, int]:
        rng = self.pos[node]
        return rng.start.line, rng.end.line  # type: ignore[attr-defined]

    def start(self, node: cst.CSTNode) -> int:
        return self.lines(node)[0]

    def all_added(self, node: cst.CSTNode) -> bool:
        a, b = self.lines(node)
        return all(line in self.added for line in range(a, b + 1))

    def touched_functions(self) -> list[cst.FunctionDef]:
        return [fn for a, b, fn in self.functions if any(a <= line <= b for line in self.touched)]

    def innermost_function(self, line: int) -> cst.FunctionDef | None:
        inside = [(b - a, fn) for a, b, fn in self.functions if a <= line <= b]
        return min(inside, key=lambda item: item[0])[1] if inside else None

    def replace(self, target: cst.CSTNode, fn: Callable[[cst.CSTNode], object]) -> str | None:
        """The file with ``target`` replaced by ``fn(updated target)``; None when it does not parse."""
        try:
            code = self.module.visit(_Replace({id(target): fn})).code
        except Exception:  # noqa: BLE001 - libcst refuses some replacements (bad sentinel position)
            return None
        return code if _parses(code) else None

    def replace_many(self, fns: Mapping[int, Callable[[cst.CSTNode], object]]) -> str | None:
        try:
            code = self.module.visit(_Replace(fns)).code
        except Exception:  # noqa: BLE001
            return None
        return code if _parses(code) else None

    def names(self) -> set[str]:
        return {n.value for n in _walk(self.module) if isinstance(n, cst.Name)}


class _Replace(cst.CSTTransformer):
    def __init__(self, fns: Mapping[int, Callable[[cst.CSTNode], object]]) -> None:
        super().__init__()
        self.fns = fns

    def on_leave(self, original_node, updated_node):  # noqa: ANN001, ANN201
        fn = self.fns.get(id(original_node))
        return updated_node if fn is None else fn(updated_node)


def _walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    yield node
    for child in node.children:
        yield from _walk(child)


class _Functions(cst.CSTVisitor):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[int, int, cst.FunctionDef]] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        rng = self.get_metadata(PositionProvider, node)
        self.found.append((rng.start.line, rng.end.line, node))


def _one(path: str, code: str | None) -> Contents | None:
    return None if code is None else {path: code}


def _guarded(items: Iterator, where: str) -> Iterator:
    """An operator that trips over unusual code loses its remaining candidates for that file, not
    the task's probes."""
    try:
        yield from items
    except Exception as err:  # noqa: BLE001
        log.warning("probe generation stopped early in %s: %s: %s", where, type(err).__name__, err)


def _python_files(ws: _Workspace) -> list[_Py]:
    out = []
    for path in ws.paths:
        new = ws.new[path]
        if new is None or not _is_python(path):
            continue
        try:
            wrapper = MetadataWrapper(cst.parse_module(new))
            pos = wrapper.resolve(PositionProvider)
        except Exception:  # noqa: BLE001 - not Python 3 libcst can parse
            continue
        old_l, new_l = _lines(ws.old[path]), _lines(new)
        py = _Py(path, ws.old[path], new, wrapper, pos, _added_lines(old_l, new_l), _touched_lines(old_l, new_l))
        finder = _Functions()
        wrapper.visit(finder)
        py.functions = finder.found
        out.append(py)
    return out


def _code(py: _Py, node: cst.CSTNode) -> str:
    return py.module.code_for_node(node)


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _parens(expr: cst.BaseExpression) -> cst.BaseExpression:
    if expr.lpar or isinstance(expr, (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.BaseNumber, cst.BaseString)):
        return expr
    return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def _negate(expr: cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not) and not expr.lpar:
        return expr.expression
    return cst.UnaryOperation(operator=cst.Not(), expression=_parens(expr))


def _fresh(base: str, taken: set[str]) -> str:
    name, n = base, 2
    while name in taken:
        name, n = f"{base}{n}", n + 1
    taken.add(name)
    return name


def _line_of(py: _Py, node: cst.CSTNode) -> str:
    line = py.start(node)
    return f"{py.path}:{line}"


# ============================================================================================ plausible wrong

_COMPARE_SWAP: dict[type, Callable[[cst.BaseCompOp], cst.BaseCompOp]] = {
    cst.LessThan: lambda o: cst.LessThanEqual(whitespace_before=o.whitespace_before, whitespace_after=o.whitespace_after),
    cst.LessThanEqual: lambda o: cst.LessThan(whitespace_before=o.whitespace_before, whitespace_after=o.whitespace_after),
    cst.GreaterThan: lambda o: cst.GreaterThanEqual(whitespace_before=o.whitespace_before, whitespace_after=o.whitespace_after),
    cst.GreaterThanEqual: lambda o: cst.GreaterThan(whitespace_before=o.whitespace_before, whitespace_after=o.whitespace_after),
    cst.Equal: lambda o: cst.NotEqual(whitespace_before=o.whitespace_before, whitespace_after=o.whitespace_after),
    cst.NotEqual: lambda o: cst.Equal(whitespace_before=o.whitespace_before, whitespace_after=o.whitespace_after),
    cst.In: lambda o: cst.NotIn(whitespace_before=o.whitespace_before, whitespace_after=o.whitespace_after),
    cst.NotIn: lambda o: cst.In(whitespace_before=o.whitespace_before, whitespace_after=o.whitespace_after),
    cst.Is: lambda o: cst.IsNot(whitespace_before=o.whitespace_before, whitespace_after=o.whitespace_after),
    cst.IsNot: lambda o: cst.Is(whitespace_before=o.whitespace_before, whitespace_after=o.whitespace_after),
}  # fmt: skip
_ARITH_SWAP: dict[type, type] = {
    cst.Add: cst.Subtract, cst.Subtract: cst.Add, cst.Multiply: cst.FloorDivide, cst.Divide: cst.Multiply,
    cst.FloorDivide: cst.Divide, cst.Modulo: cst.FloorDivide, cst.Power: cst.Multiply,
    cst.LeftShift: cst.RightShift, cst.RightShift: cst.LeftShift, cst.BitAnd: cst.BitOr, cst.BitOr: cst.BitAnd,
}  # fmt: skip
_AUG_SWAP: dict[type, type] = {
    cst.AddAssign: cst.SubtractAssign, cst.SubtractAssign: cst.AddAssign, cst.MultiplyAssign: cst.FloorDivideAssign,
    cst.DivideAssign: cst.MultiplyAssign, cst.FloorDivideAssign: cst.DivideAssign,
}  # fmt: skip


def _op(cls: type, old: cst.CSTNode) -> cst.CSTNode:
    return cls(whitespace_before=old.whitespace_before, whitespace_after=old.whitespace_after)  # type: ignore[attr-defined]


_Site = tuple[str, str, cst.CSTNode, Callable[[cst.CSTNode], object]]  # operator, description, node, rewrite


class _MutationSites(cst.CSTVisitor):
    """Where the operator mutants apply: only on lines gold added."""

    def __init__(self, py: _Py) -> None:
        super().__init__()
        self.py = py
        self.sites: list[_Site] = []
        self.depth = 0  # function nesting
        self.annotations = 0  # inside a type annotation: never mutated

    def _on_added(self, node: cst.CSTNode) -> bool:
        return not self.annotations and self.py.pos.get(node) is not None and self.py.start(node) in self.py.added

    def visit_Annotation(self, node: cst.Annotation) -> None:
        self.annotations += 1

    def leave_Annotation(self, original_node: cst.Annotation) -> None:
        self.annotations -= 1

    def _add(self, operator: str, node: cst.CSTNode, what: str, fn: Callable[[cst.CSTNode], object]) -> None:
        self.sites.append((operator, f"{what} at {_line_of(self.py, node)}", node, fn))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if self._on_added(node) and isinstance(node.body, cst.IndentedBlock):
            self._early_return(node, f"def {node.name.value}")
        self.depth += 1

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.depth -= 1

    def visit_ComparisonTarget(self, node: cst.ComparisonTarget) -> None:
        swap = _COMPARE_SWAP.get(type(node.operator))
        if swap and self._on_added(node.operator):
            before, after = _code(self.py, node.operator).strip(), _code(self.py, swap(node.operator)).strip()
            self._add("mutate_compare", node, f"`{before}` -> `{after}`",
                      lambda n, swap=swap: n.with_changes(operator=swap(n.operator)))  # fmt: skip

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        new = _ARITH_SWAP.get(type(node.operator))
        if not new or not self._on_added(node.operator):
            return
        if isinstance(node.left, cst.BaseString) or isinstance(node.right, cst.BaseString):
            return  # string concatenation or %-formatting: the mutant is a TypeError, not a plausible fix
        self._add("mutate_arith", node, f"`{_code(self.py, node.operator).strip()}` -> `{_code(self.py, _op(new, node.operator)).strip()}`",
                  lambda n, new=new: n.with_changes(operator=_op(new, n.operator)))  # fmt: skip

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        new = _AUG_SWAP.get(type(node.operator))
        if new and self._on_added(node.operator):
            self._add("mutate_arith", node, f"`{_code(self.py, node.operator).strip()}` -> `{_code(self.py, _op(new, node.operator)).strip()}`",
                      lambda n, new=new: n.with_changes(operator=_op(new, n.operator)))  # fmt: skip

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        if self._on_added(node.operator):
            new = cst.Or if isinstance(node.operator, cst.And) else cst.And
            self._add("mutate_logic", node, f"`{_code(self.py, node.operator).strip()}` -> `{new.__name__.lower()}`",
                      lambda n, new=new: n.with_changes(operator=_op(new, n.operator)))  # fmt: skip

    def visit_Integer(self, node: cst.Integer) -> None:
        if not self._on_added(node):
            return
        try:
            value = int(node.value, 0)
        except ValueError:
            return
        for delta in (1, -1):
            if value + delta >= 0:
                self._add("mutate_constant", node, f"{node.value} -> {value + delta}",
                          lambda n, v=value + delta: n.with_changes(value=str(v)))  # fmt: skip

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in ("True", "False") and self._on_added(node):
            flipped = "False" if node.value == "True" else "True"
            self._add("mutate_constant", node, f"{node.value} -> {flipped}", lambda n, f=flipped: n.with_changes(value=f))

    def visit_If(self, node: cst.If) -> None:
        if self._on_added(node.test):
            self._add("negate_if", node, f"`if {_short(_code(self.py, node.test))}` negated",
                      lambda n: n.with_changes(test=_negate(n.test)))  # fmt: skip
        if self.depth and self._on_added(node):
            self._early_return(node, "if")

    def visit_For(self, node: cst.For) -> None:
        if self.depth and self._on_added(node):
            self._early_return(node, "for")

    def visit_While(self, node: cst.While) -> None:
        if self.depth and self._on_added(node):
            self._early_return(node, "while")

    def visit_With(self, node: cst.With) -> None:
        if self.depth and self._on_added(node):
            self._early_return(node, "with")

    def _early_return(self, node: cst.CSTNode, what: str) -> None:
        body = node.body  # type: ignore[attr-defined]
        stmts = list(body.body)
        skip = 1 if isinstance(node, cst.FunctionDef) and _is_docstring(stmts[0] if stmts else None) else 0
        if len(stmts) > skip and _is_return(stmts[skip]):
            return
        ret = cst.Return(value=cst.Name("None"))

        def rewrite(n: cst.CSTNode, skip: int = skip) -> cst.CSTNode:
            b = n.body  # type: ignore[attr-defined]
            inner = list(b.body)
            stmt = cst.SimpleStatementLine([ret]) if isinstance(b, cst.IndentedBlock) else ret
            return n.with_changes(body=b.with_changes(body=[*inner[:skip], stmt, *inner[skip:]]))

        self._add("early_return", node, f"`return None` at the start of the `{what}` block", rewrite)

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        if not self.depth:
            return
        for i, stmt in enumerate(node.body):
            if not self.py.all_added(stmt) or _is_docstring(stmt) or not _deletable(stmt):
                continue
            alone = len(node.body) == 1 or (len(node.body) == 2 and i == 1 and _is_docstring(node.body[0]))
            text = _code(self.py, stmt.with_changes(leading_lines=[])).strip()
            what = _short(text.splitlines()[0] if text else "")

            def rewrite(n: cst.CSTNode, alone: bool = alone) -> object:
                if alone:
                    return cst.SimpleStatementLine([cst.Pass()], leading_lines=n.leading_lines)  # type: ignore[attr-defined]
                return cst.RemovalSentinel.REMOVE

            self._add("delete_statement", stmt, f"deleted `{what}`", rewrite)


def _is_docstring(stmt: cst.CSTNode | None) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _is_return(stmt: cst.CSTNode) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and any(isinstance(s, cst.Return) for s in stmt.body)


def _deletable(stmt: cst.CSTNode) -> bool:
    if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
        return False
    if isinstance(stmt, cst.SimpleStatementLine):
        return not all(isinstance(s, (cst.Pass, cst.Import, cst.ImportFrom, cst.Global, cst.Nonlocal)) for s in stmt.body)
    return True


def _mutants(py: _Py) -> Iterator[tuple[str, str, Callable[[], str | None]]]:
    """Each site with its rewrite, unevaluated: only the first few per operator are ever built."""
    finder = _MutationSites(py)
    py.wrapper.visit(finder)
    for operator, description, node, fn in finder.sites:
        yield operator, description, lambda node=node, fn=fn: py.replace(node, fn)


# ------------------------------------------------------------------------------------ special case


def _literals(sources: Mapping[str, str], test_ids: Sequence[str]) -> list[str]:
    """String forms of the constants in the FAIL_TO_PASS test functions (and their decorators),
    plus the whitespace/comma separated words of each string constant, in order of appearance."""
    out: dict[str, None] = {}
    for test_id in test_ids:
        file, _, rest = test_id.partition("::")
        if not rest or file not in sources:
            continue
        parts = [p.split("[", 1)[0] for p in rest.split("::")]
        try:
            tree = parse(sources[file])
        except SyntaxError:
            continue
        fn = _find_def(tree, parts)
        if fn is None:
            continue
        docstring = ast.get_docstring(fn, clean=False)
        for node in ast.walk(fn):
            if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
                if isinstance(node.operand.value, (int, float)) and not isinstance(node.operand.value, bool):
                    out[str(-node.operand.value)] = None
            if not isinstance(node, ast.Constant) or isinstance(node.value, bool) or node.value is None:
                continue
            if isinstance(node.value, str):
                if node.value == docstring or len(node.value) > 200:
                    continue
                out[node.value] = None
                for word in re.split(r"[\s,]+", node.value):
                    if word:
                        out[word] = None
            elif isinstance(node.value, (int, float)):
                out[str(node.value)] = None
    return list(out)[:MAX_LITERALS]


def _find_def(tree: ast.AST, parts: Sequence[str]) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    scope: list[ast.stmt] = list(getattr(tree, "body", []))
    for i, name in enumerate(parts):
        match = next((n for n in scope if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name), None)
        if match is None:
            return None
        if i == len(parts) - 1:
            return match if isinstance(match, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
        scope = match.body
    return None


def _segment_ok(lines: list[str]) -> tuple[str, str] | None:
    """(base indentation, dedented text) when ``lines`` are complete statements at one indentation."""
    body = [line for line in lines if line.strip()]
    if not body:
        return None
    base = body[0][: len(body[0]) - len(body[0].lstrip())]
    if any(not line.startswith(base) for line in body):
        return None
    text = textwrap.dedent("".join(lines))
    try:
        tree = parse(text)
    except (SyntaxError, ValueError):
        return None
    if not tree.body or any(isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) for s in tree.body):
        return None
    for node in ast.walk(tree):  # re-indenting a multi-line string would change its value
        if isinstance(node, (ast.Constant, ast.JoinedStr)) and getattr(node, "end_lineno", node.lineno) != node.lineno:
            return None
    return base, text


def _special_cases(py: _Py, literals: Sequence[str]) -> Iterator[tuple[str, str, str]]:
    if not literals:
        return
    old_l, new_l = _lines(py.old), _lines(py.new)
    try:
        new_tree = parse(py.new)
    except SyntaxError:
        return
    guard_values = "(" + ", ".join(repr(v) for v in literals) + ("," if len(literals) == 1 else "") + ")"
    for i1, i2, j1, j2 in _changes(old_l, new_l):
        if j2 == j1:
            continue  # a pure deletion has no new logic to guard
        found = _expand(old_l, new_l, i1, i2, j1, j2)
        if found is None:
            continue
        i1, i2, j1, j2, base, new_text = found
        fn = py.innermost_function(j1 + 1)
        if fn is None:
            continue
        names = _guard_names(new_tree, py.start(fn), j1 + 1, new_text)
        unit = "\t" if "\t" in base else "    "
        for name in names[:3]:
            guard = f"{base}if str({name}) in {guard_values}:\n"
            then = [unit + line if line.strip() else line for line in new_l[j1:j2]]
            orelse = [unit + line if line.strip() else line for line in old_l[i1:i2]] if i2 > i1 else [f"{base}{unit}pass\n"]
            if not any(line.strip() for line in orelse):
                orelse = [f"{base}{unit}pass\n"]
            lines = [*new_l[:j1], guard, *then, f"{base}else:\n", *orelse, *new_l[j2:]]
            code = "".join(lines)
            if _parses(code):
                yield "special_case", f"gold's change at {py.path}:{j1 + 1} only when str({name}) is a literal of the tests, else the old code", code


def _expand(old: list[str], new: list[str], i1: int, i2: int, j1: int, j2: int) -> tuple[int, int, int, int, str, str] | None:
    """Grow a change block by equal context on both sides until old and new are whole statements."""
    for before in range(4):
        for after in range(4):
            a1, b1, a2, b2 = i1 - before, j1 - before, i2 + after, j2 + after
            if min(a1, b1) < 0 or a2 > len(old) or b2 > len(new):
                continue
            if old[a1:i1] != new[b1:j1] or old[i2:a2] != new[j2:b2]:
                continue
            n = _segment_ok(new[b1:b2])
            if n is None or _opens_block(new, b2, n[0]):
                continue
            if a2 > a1:
                o = _segment_ok(old[a1:a2])
                if o is None or o[0] != n[0] or _opens_block(old, a2, o[0]):
                    continue
            return a1, a2, b1, b2, n[0], n[1]
    return None


def _opens_block(lines: list[str], end: int, base: str) -> bool:
    """The code after a segment is indented deeper than it: the segment ends inside a block it
    opened (a statement cut in the middle of its body), so wrapping it would move that body."""
    for line in lines[end:]:
        if line.strip():
            return len(line) - len(line.lstrip()) > len(base)
    return False


def _guard_names(tree: ast.Module, fn_line: int, seg_line: int, seg_text: str) -> list[str]:
    """Names a guard may test: locals of the enclosing function that gold's new code reads (and that
    are bound before it), then the function's parameters."""
    fn = next(
        (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
         and min([n.lineno, *(d.lineno for d in n.decorator_list)]) == fn_line),
        None,
    )  # fmt: skip
    if fn is None:
        return []
    a = fn.args
    params = [p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs, *(x for x in (a.vararg, a.kwarg) if x)]]
    params = [p for p in params if p not in ("self", "cls")]
    earlier = {
        n.id for n in ast.walk(fn)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.lineno < seg_line
    }  # fmt: skip
    read = [n.id for n in ast.walk(parse(seg_text)) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]
    ordered = [n for n in dict.fromkeys(read) if n in earlier or n in params] + params
    return [n for n in dict.fromkeys(ordered) if n not in ("self", "cls")]


# ------------------------------------------------------------------------------------ assembly


def plausible_wrong(task: Task, tree: Path, test_ids: Sequence[str]) -> list[Candidate]:
    """Variants of gold that should not pass a sound suite (see the module docstring)."""
    with _workspace(task, tree) as ws:
        if ws is None:
            return []
        literals = _literals(_test_sources(task, tree, [t.partition("::")[0] for t in test_ids]), test_ids)
        per_op: dict[str, list[tuple[str, Lazy]]] = {}

        def add(operator: str, description: str, contents: Contents | Lazy) -> None:
            thunk = contents if callable(contents) else (lambda c=contents: c)
            per_op.setdefault(operator, []).append((description, thunk))

        blocks = {p: _changes(_lines(ws.old[p]), _lines(ws.new[p])) for p in ws.paths}
        hunks = [(p, h) for p in ws.paths if ws.old[p] is not None and ws.new[p] is not None and _is_code(p)
                 for h in _hunks(_lines(ws.old[p]), _lines(ws.new[p]))]  # fmt: skip
        if len(hunks) > 1:
            for n, (path, hunk) in enumerate(hunks, 1):
                text = _revert(_lines(ws.old[path]), _lines(ws.new[path]), hunk)
                first = min(j1 for _, _, j1, _ in hunk) + 1
                add("drop_hunk", f"gold without hunk {n} of {len(hunks)} ({path} near line {first})", {path: text})
        elif len(hunks) == 1 and len(blocks[hunks[0][0]]) > 1:
            path, _ = hunks[0]
            for i1, i2, j1, j2 in blocks[path]:
                text = _revert(_lines(ws.old[path]), _lines(ws.new[path]), {(i1, i2, j1, j2)})
                add("drop_change", f"gold without its change at {path}:{j1 + 1}", {path: text})
        code_paths = [p for p in ws.paths if _is_code(p)]
        if len(code_paths) > 1:
            for path in code_paths:
                add("revert_file", f"gold without its changes to {path}", {path: ws.old[path]})
        for py in _python_files(ws):
            for operator, description, build in _guarded(_mutants(py), py.path):
                add(operator, description, lambda build=build, path=py.path: _one(path, build()))
            for operator, description, code in _guarded(_special_cases(py, literals), py.path):
                add(operator, description, {py.path: code})

        gold_ast = {p: _ast_dump(ws.new[p]) for p in ws.paths}
        old_ast = {p: _ast_dump(ws.old[p]) for p in ws.paths}

        def equivalent(contents: Contents) -> bool:
            dumps = {p: _ast_dump(contents.get(p, ws.new[p])) for p in ws.paths}
            return dumps == gold_ast or dumps == old_ast

        return _finish(ws, "plausible_wrong", per_op, equivalent)


def correct_alternatives(task: Task, tree: Path) -> list[Candidate]:
    """Behaviour-preserving rewrites of the gold-patched code (see the module docstring)."""
    with _workspace(task, tree) as ws:
        if ws is None:
            return []
        per_op: dict[str, list[tuple[str, Lazy]]] = {}
        for py in _python_files(ws):
            for operator, description, code in _guarded(_rewrites(py, task.problem_statement, ws), py.path):
                per_op.setdefault(operator, []).append((description, lambda c={py.path: code}: c))
        return _finish(ws, "correct_alternative", per_op, lambda contents: False)


def _finish(
    ws: _Workspace, kind: ProbeKind, per_op: Mapping[str, list[tuple[str, Lazy]]], equivalent: Callable[[Contents], bool]
) -> list[Candidate]:
    """Diffs, deduplicated, minus gold and empties; capped per operator, interleaved, capped in total."""
    gold = ws.diff({})
    seen = {gold, ""}
    kept: dict[str, list[Candidate]] = {}
    for operator, items in per_op.items():
        cap = MAX_SPECIAL_CASE if operator == "special_case" else MAX_PER_OPERATOR
        for description, build in items:
            if len(kept.get(operator, [])) >= cap:
                break
            contents = build()
            if contents is None:
                continue
            if all(contents.get(p, ws.new[p]) == ws.new[p] for p in ws.paths) or equivalent(contents):
                continue
            patch = ws.diff(contents)
            if patch in seen or not patch.strip():
                continue
            seen.add(patch)
            kept.setdefault(operator, []).append(Candidate(kind, operator, description, patch))
    out: list[Candidate] = []
    queues = [list(v) for v in kept.values()]
    while queues and len(out) < MAX_TOTAL:
        for q in queues:
            if q and len(out) < MAX_TOTAL:
                out.append(q.pop(0))
        queues = [q for q in queues if q]
    return out


# ============================================================================================ correct alternatives


def _rewrites(py: _Py, issue: str, ws: _Workspace) -> Iterator[tuple[str, str, str]]:
    functions = py.touched_functions()
    if not functions:
        return
    scopes = py.wrapper.resolve(ScopeProvider)
    for operator in (
        _rename_locals(py, functions, scopes),
        _rename_private_helpers(py, scopes, ws),
        _swap_branches(py, functions),
        _extract_variable(py, functions),
        _loop_comprehension(py, functions, scopes),
        _reorder(py, functions),
        _reword_messages(py, functions, issue),
    ):
        yield from itertools.islice(operator, PER_OPERATOR_SCAN)  # later sites are never built


def _prioritised(py: _Py, nodes: Iterable[cst.CSTNode]) -> list[cst.CSTNode]:
    """Nodes on lines gold added first, then the rest, each in source order."""
    nodes = list(dict.fromkeys(nodes))
    added = [n for n in nodes if any(line in py.added for line in range(*_span(py, n)))]
    return added + [n for n in nodes if n not in added]


def _span(py: _Py, node: cst.CSTNode) -> tuple[int, int]:
    a, b = py.lines(node)
    return a, b + 1


def _old_locals(py: _Py, fn: cst.FunctionDef) -> set[str] | None:
    """Locals of the same function before gold (matched by qualified name); None if it is new."""
    if py.old is None:
        return None
    try:
        tree = parse(py.old)
    except SyntaxError:
        return None
    target = _qualname(py, fn)
    for qual, node in _ast_functions(tree):
        if qual == target:
            names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
            return names | {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)}
    return None


def _ast_functions(tree: ast.AST, prefix: str = "") -> Iterator[tuple[str, ast.AST]]:
    for node in getattr(tree, "body", []):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield prefix + node.name, node
            yield from _ast_functions(node, prefix + node.name + ".")
        elif isinstance(node, ast.ClassDef):
            yield from _ast_functions(node, prefix + node.name + ".")


def _qualname(py: _Py, fn: cst.FunctionDef) -> str:
    for qual, node in _cst_functions(py.module):
        if node is fn:
            return qual
    return fn.name.value


def _cst_functions(node: cst.CSTNode, prefix: str = "") -> Iterator[tuple[str, cst.FunctionDef]]:
    body = getattr(node, "body", None)
    stmts = body if isinstance(body, (list, tuple)) else getattr(body, "body", [])
    for stmt in stmts if isinstance(stmts, (list, tuple)) else []:
        if isinstance(stmt, cst.FunctionDef):
            yield prefix + stmt.name.value, stmt
            yield from _cst_functions(stmt, prefix + stmt.name.value + ".")
        elif isinstance(stmt, cst.ClassDef):
            yield from _cst_functions(stmt, prefix + stmt.name.value + ".")


_DYNAMIC = {"locals", "vars", "eval", "exec", "globals"}


def _rename_locals(py: _Py, functions: list[cst.FunctionDef], scopes: Mapping) -> Iterator[tuple[str, str, str]]:
    taken = py.names()
    for fn in functions:
        if not isinstance(fn.body, cst.IndentedBlock) or not fn.body.body:
            continue
        names_in_fn = {n.value for n in _walk(fn) if isinstance(n, cst.Name)}
        if names_in_fn & _DYNAMIC:
            continue
        scope = scopes.get(fn.body.body[0])
        if not isinstance(scope, FunctionScope):
            continue
        declared = {
            n.value for s in _walk(fn) if isinstance(s, (cst.Global, cst.Nonlocal)) for item in s.names for n in [item.name]
        }
        params = {p.name.value for p in _walk(fn.params) if isinstance(p, cst.Param)}
        before = _old_locals(py, fn) or set()
        fns: dict[int, Callable[[cst.CSTNode], object]] = {}
        renamed = []
        for name in sorted({a.name for a in scope.assignments}):
            if name in params or name in before or name in declared or name.startswith("__"):
                continue
            assignments = [a for a in scope.assignments[name] if isinstance(a, Assignment)]
            if not assignments or any(not isinstance(a.node, cst.Name) for a in assignments):
                continue
            refs = [r.node for a in assignments for r in a.references]
            if any(not isinstance(r, cst.Name) for r in refs):
                continue
            new = _fresh(f"{name}_value" if not name.startswith("_") else f"{name}_v", taken)
            for node in [*(a.node for a in assignments), *refs]:
                fns[id(node)] = lambda n, new=new: n.with_changes(value=new)
            renamed.append(f"{name}->{new}")
        if fns:
            code = py.replace_many(fns)
            if code is not None:
                yield "rename_locals", f"in {fn.name.value}() renamed gold's locals {', '.join(renamed)}", code


def _rename_private_helpers(py: _Py, scopes: Mapping, ws: _Workspace) -> Iterator[tuple[str, str, str]]:
    """A module-level private function or class that gold introduced, renamed with every reference
    in the file: the public behaviour is unchanged, only a test that imports the helper can tell."""
    old_names = set()
    if py.old is not None:
        try:
            old_names = {n.name for n in parse(py.old).body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
        except SyntaxError:
            return
    global_scope = scopes.get(py.module.body[0]) if py.module.body else None
    if global_scope is None:
        return
    taken = py.names()
    strings = " ".join(n.value for n in _walk(py.module) if isinstance(n, cst.SimpleString))
    for stmt in py.module.body:
        if not isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            continue
        name = stmt.name.value
        if not name.startswith("_") or name.startswith("__") or name in old_names or name in strings:
            continue
        others = [p for p in ws.paths if p != py.path and ws.new[p] and re.search(rf"\b{re.escape(name)}\b", ws.new[p] or "")]
        if others:
            continue  # used from another file gold touched: a one-file rename would break it
        assignments = [a for a in global_scope.assignments[name] if isinstance(a, Assignment)]
        if [a.node for a in assignments] != [stmt]:
            continue
        refs = [r.node for a in assignments for r in a.references]
        if any(not isinstance(r, cst.Name) for r in refs):
            continue
        new = _fresh(f"{name}_impl", taken)
        fns: dict[int, Callable[[cst.CSTNode], object]] = {
            id(stmt): lambda n, new=new: n.with_changes(name=n.name.with_changes(value=new))
        }
        for node in refs:
            fns[id(node)] = lambda n, new=new: n.with_changes(value=new)
        code = py.replace_many(fns)
        if code is not None:
            yield "rename_private_helper", f"private helper {name} (introduced by gold) renamed to {new}", code


def _swap_branches(py: _Py, functions: list[cst.FunctionDef]) -> Iterator[tuple[str, str, str]]:
    ifs = [n for fn in functions for n in _walk(fn) if isinstance(n, cst.If) and isinstance(n.orelse, cst.Else)]
    for node in _prioritised(py, ifs):

        def swap(n: cst.CSTNode) -> cst.CSTNode:
            return n.with_changes(test=_negate(n.test), body=n.orelse.body, orelse=n.orelse.with_changes(body=n.body))

        code = py.replace(node, swap)
        if code is not None:
            yield "swap_branches", f"`if {_short(_code(py, node.test))}` negated with its branches swapped at {_line_of(py, node)}", code


def _trivial(expr: cst.BaseExpression | None) -> bool:
    if expr is None or isinstance(expr, (cst.Name, cst.BaseNumber, cst.SimpleString)):
        return True
    if isinstance(expr, cst.Tuple):
        return all(_trivial(e.value) for e in expr.elements)
    return isinstance(expr, cst.UnaryOperation) and isinstance(expr.expression, cst.BaseNumber)


def _blocks(functions: list[cst.FunctionDef]) -> list[cst.IndentedBlock]:
    seen: dict[int, cst.IndentedBlock] = {}
    for fn in functions:
        for n in _walk(fn):
            if isinstance(n, cst.IndentedBlock):
                seen.setdefault(id(n), n)
    return list(seen.values())


def _extract_variable(py: _Py, functions: list[cst.FunctionDef]) -> Iterator[tuple[str, str, str]]:
    """``return <expr>`` -> ``result = <expr>; return result``; ``if <expr>:`` -> ``condition =
    <expr>; if condition:`` (not for elif, whose test must stay lazy)."""
    taken = py.names()
    sites: list[tuple[cst.IndentedBlock, int]] = []
    for block in _blocks(functions):
        for i, stmt in enumerate(block.body):
            if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Return):
                if not _trivial(stmt.body[0].value):
                    sites.append((block, i))
            elif isinstance(stmt, cst.If) and not _trivial(stmt.test):
                sites.append((block, i))
    ordered = _prioritised(py, [block.body[i] for block, i in sites])
    index = {id(block.body[i]): (block, i) for block, i in sites}
    for stmt in ordered:
        block, i = index[id(stmt)]
        if isinstance(stmt, cst.If):
            name = _fresh("condition", set(taken))
            expr = stmt.test
            replacement = stmt.with_changes(test=cst.Name(name), leading_lines=[])
        else:
            name = _fresh("result", set(taken))
            expr = stmt.body[0].value
            replacement = stmt.with_changes(body=[stmt.body[0].with_changes(value=cst.Name(name))], leading_lines=[])
        assign = cst.SimpleStatementLine(
            [cst.Assign(targets=[cst.AssignTarget(cst.Name(name))], value=expr.with_changes(lpar=[], rpar=[]) if _unwrap_ok(expr) else expr)],
            leading_lines=stmt.leading_lines,
        )

        def rewrite(b: cst.CSTNode, i: int = i, assign: cst.CSTNode = assign, replacement: cst.CSTNode = replacement) -> cst.CSTNode:
            body = list(b.body)  # type: ignore[attr-defined]
            return b.with_changes(body=[*body[:i], assign, replacement, *body[i + 1 :]])

        code = py.replace(block, rewrite)
        if code is not None:
            yield "extract_variable", f"`{_short(_code(py, expr))}` extracted into local `{name}` at {_line_of(py, stmt)}", code


def _unwrap_ok(expr: cst.BaseExpression) -> bool:
    return bool(expr.lpar) and not isinstance(expr, (cst.Tuple, cst.GeneratorExp, cst.Yield))


def _target_names(target: cst.BaseExpression) -> set[str] | None:
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        out: set[str] = set()
        for el in target.elements:
            inner = _target_names(el.value)
            if inner is None:
                return None
            out |= inner
        return out
    return None


def _names(node: cst.CSTNode | None) -> set[str]:
    return set() if node is None else {n.value for n in _walk(node) if isinstance(n, cst.Name)}


def _read_outside(scopes: Mapping, loop: cst.For, names: set[str]) -> bool:
    """A name the loop binds is read in the function's scope (or a scope nested in it that resolves
    to it) somewhere outside the loop."""
    scope = scopes.get(loop)
    if scope is None:
        return True
    inside = {id(n) for n in _walk(loop)}
    for name in names:
        for assignment in scope.assignments[name]:
            if any(id(ref.node) not in inside for ref in assignment.references):
                return True
        if any(id(access.node) not in inside for access in scope.accesses[name]):
            return True
    return False


def _used_in_scope(scopes: Mapping, stmt: cst.CSTNode, names: set[str]) -> bool:
    """A name is assigned or read in the scope of ``stmt`` (the comprehension's own scope excluded)."""
    scope = scopes.get(stmt)
    if scope is None:
        return True
    return any(scope.assignments[name] or scope.accesses[name] for name in names)


def _append_call(stmt: cst.CSTNode, target: str) -> cst.BaseExpression | None:
    """E when ``stmt`` is exactly ``<target>.append(E)``."""
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr)):
        return None
    call = stmt.body[0].value
    if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "append"):
        return None
    if not (isinstance(call.func.value, cst.Name) and call.func.value.value == target):
        return None
    if len(call.args) != 1 or call.args[0].keyword is not None or call.args[0].star:
        return None
    return call.args[0].value


def _single_assign(stmt: cst.CSTNode) -> tuple[str, cst.BaseExpression] | None:
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Assign)):
        return None
    assign = stmt.body[0]
    if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
        return None
    return assign.targets[0].target.value, assign.value


def _wrap_iter(py: _Py, expr: cst.BaseExpression) -> str:
    text = _code(py, expr)
    return f"({text})" if isinstance(expr, (cst.IfExp, cst.Lambda, cst.NamedExpr, cst.Yield)) and not expr.lpar else text


def _loop_comprehension(py: _Py, functions: list[cst.FunctionDef], scopes: Mapping) -> Iterator[tuple[str, str, str]]:
    sites: list[tuple[cst.FunctionDef, cst.IndentedBlock, int, str]] = []
    for fn in functions:
        for block in _blocks([fn]):
            for i, stmt in enumerate(block.body):
                one = _single_assign(stmt)
                if one is None:
                    continue
                target, value = one
                nxt = block.body[i + 1] if i + 1 < len(block.body) else None
                if isinstance(value, cst.List) and not value.elements and isinstance(nxt, cst.For):
                    sites.append((fn, block, i, "to_comprehension"))
                elif isinstance(value, cst.ListComp) and not value.for_in.inner_for_in and value.for_in.asynchronous is None:
                    if len(value.for_in.ifs) <= 1:
                        sites.append((fn, block, i, "to_loop"))
    for _, block, i, direction in sites:
        stmt = block.body[i]
        target, value = _single_assign(stmt)  # type: ignore[misc]
        if direction == "to_comprehension":
            loop = block.body[i + 1]
            assert isinstance(loop, cst.For)
            if loop.orelse is not None or loop.asynchronous is not None or not isinstance(loop.body, cst.IndentedBlock):
                continue
            if len(loop.body.body) != 1:
                continue
            inner = loop.body.body[0]
            cond = None
            if isinstance(inner, cst.If) and inner.orelse is None and isinstance(inner.body, cst.IndentedBlock) and len(inner.body.body) == 1:
                cond, inner = inner.test, inner.body.body[0]
            elt = _append_call(inner, target)
            bound = _target_names(loop.target)
            if elt is None or bound is None or target in _names(elt) | _names(loop.iter) | _names(cond):
                continue
            if _read_outside(scopes, loop, bound):
                continue  # the loop variable is read outside the loop; a comprehension would not bind it
            text = f"[{_code(py, elt)} for {_code(py, loop.target)} in {_wrap_iter(py, loop.iter)}"
            text += f" if {_wrap_iter(py, cond)}]" if cond is not None else "]"
            try:
                comp = cst.parse_expression(text)
            except Exception:  # noqa: BLE001
                continue
            new_stmt = stmt.with_changes(body=[stmt.body[0].with_changes(value=comp)])

            def rewrite(b: cst.CSTNode, i: int = i, new_stmt: cst.CSTNode = new_stmt) -> cst.CSTNode:
                body = list(b.body)  # type: ignore[attr-defined]
                return b.with_changes(body=[*body[:i], new_stmt, *body[i + 2 :]])

            what = f"loop filling `{target}` -> list comprehension"
        else:
            comp = value
            assert isinstance(comp, cst.ListComp)
            bound = _target_names(comp.for_in.target)
            if bound is None or target in _names(comp) or bound & {target} or _used_in_scope(scopes, stmt, bound):
                continue  # a loop would bind its variable in the function, where that name is in use
            cond = comp.for_in.ifs[0].test if comp.for_in.ifs else None
            elt = comp.elt
            inner = f"{target}.append({_code(py, elt)})"
            body = f"if {_code(py, cond)}:\n    {inner}" if cond is not None else inner
            src = f"{target} = []\nfor {_code(py, comp.for_in.target)} in {_code(py, comp.for_in.iter)}:\n" + textwrap.indent(body, "    ") + "\n"
            try:
                new_stmts = list(cst.parse_module(src).body)
            except Exception:  # noqa: BLE001
                continue
            new_stmts[0] = new_stmts[0].with_changes(leading_lines=stmt.leading_lines)

            def rewrite(b: cst.CSTNode, i: int = i, new_stmts: list = new_stmts) -> cst.CSTNode:
                body = list(b.body)  # type: ignore[attr-defined]
                return b.with_changes(body=[*body[:i], *new_stmts, *body[i + 1 :]])

            what = f"list comprehension `{target} = [...]` -> for loop with append"
        code = py.replace(block, rewrite)
        if code is not None:
            yield "loop_comprehension", f"{what} at {_line_of(py, stmt)}", code


_IMPURE = (cst.Call, cst.Await, cst.Yield, cst.NamedExpr)


def _reorder(py: _Py, functions: list[cst.FunctionDef]) -> Iterator[tuple[str, str, str]]:
    pairs: list[tuple[cst.IndentedBlock, int]] = []
    for block in _blocks(functions):
        for i in range(len(block.body) - 1):
            a, b = _single_assign(block.body[i]), _single_assign(block.body[i + 1])
            if a is None or b is None:
                continue
            if any(isinstance(n, _IMPURE) for v in (a[1], b[1]) for n in _walk(v)):
                continue
            names_a, names_b = {a[0]} | _names(a[1]), {b[0]} | _names(b[1])
            if names_a & names_b:
                continue
            pairs.append((block, i))
    firsts = _prioritised(py, [block.body[i] for block, i in pairs])
    index = {id(block.body[i]): (block, i) for block, i in pairs}
    for first in firsts:
        block, i = index[id(first)]

        def rewrite(b: cst.CSTNode, i: int = i) -> cst.CSTNode:
            body = list(b.body)  # type: ignore[attr-defined]
            one, two = body[i], body[i + 1]
            body[i] = two.with_changes(leading_lines=one.leading_lines)
            body[i + 1] = one.with_changes(leading_lines=two.leading_lines)
            return b.with_changes(body=body)

        code = py.replace(block, rewrite)
        if code is not None:
            yield "reorder_statements", f"independent assignments at {_line_of(py, first)} and the next line swapped", code


def _reword(text: str) -> str:
    if not text:
        return text
    first = text[0]
    if first.islower():
        text = first.upper() + text[1:]
    elif first.isupper() and text[1:2].islower():
        text = first.lower() + text[1:]
    return text if text.rstrip().endswith((".", "!", "?", ":")) else text + "."


def _reword_messages(py: _Py, functions: list[cst.FunctionDef], issue: str) -> Iterator[tuple[str, str, str]]:
    """An error message gold added, reworded, when the issue does not quote it (so its wording is not
    a requirement): first letter's case flipped and a full stop added."""
    issue_l = issue.lower()
    raises = [n for fn in functions for n in _walk(fn) if isinstance(n, cst.Raise) and py.start(n) in py.added]
    for node in dict.fromkeys(raises):
        exc = node.exc
        if not (isinstance(exc, cst.Call) and exc.args and exc.args[0].keyword is None and not exc.args[0].star):
            continue
        arg = exc.args[0].value
        if isinstance(arg, cst.SimpleString):
            if "b" in arg.prefix.lower():
                continue
            try:
                text = ast.literal_eval(arg.value)
            except (ValueError, SyntaxError):
                continue
            static = [text]
            new_arg: cst.BaseExpression = cst.SimpleString(repr(_reword(text)))
            if _reword(text) == text:
                continue
        elif isinstance(arg, cst.FormattedString):
            parts = list(arg.parts)
            static = [p.value for p in parts if isinstance(p, cst.FormattedStringText)]
            if not static:
                continue
            if isinstance(parts[0], cst.FormattedStringText):
                head = parts[0].value
                parts[0] = parts[0].with_changes(value=_reword(head)[: len(head)] if head else head)
            tail = parts[-1]
            if not (isinstance(tail, cst.FormattedStringText) and tail.value.rstrip().endswith((".", "!", "?", ":"))):
                parts.append(cst.FormattedStringText("."))
            new_arg = arg.with_changes(parts=parts)
        else:
            continue
        joined = " ".join(s.strip() for s in static if s.strip()).lower()
        if not joined or joined in issue_l or any(len(s.strip()) >= 12 and s.strip().lower() in issue_l for s in static):
            continue  # the issue states the message: its wording is a requirement

        def rewrite(n: cst.CSTNode, new_arg: cst.BaseExpression = new_arg) -> cst.CSTNode:
            args = list(n.exc.args)  # type: ignore[attr-defined]
            args[0] = args[0].with_changes(value=new_arg)
            return n.with_changes(exc=n.exc.with_changes(args=args))  # type: ignore[attr-defined]

        code = py.replace(node, rewrite)
        if code is not None:
            yield "reword_message", f"message of the raise at {_line_of(py, node)} reworded (the issue does not quote it)", code


__all__ = ["Candidate", "correct_alternatives", "plausible_wrong", "MAX_PER_OPERATOR", "MAX_TOTAL"]
