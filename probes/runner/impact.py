"""Change impact: the tests whose gold-run coverage a probe's diff against the gold tree touches."""

from __future__ import annotations

import ast
import copy
import difflib
import symtable
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from harness.pyast import is_generator, parse
from probes.runner.coverage import GoldCoverage

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
    if same_head and (not isinstance(gold, _FUNCTIONS) or is_generator(gold) == is_generator(probe)):
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
            if is_generator(g_fn) != is_generator(p_fn):
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
