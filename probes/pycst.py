"""libcst views of the post-gold Python files a probe operator rewrites, and the small CST helpers the
operators share."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from probes.workspace import Contents, Workspace, added_lines, file_lines, importable, parses, touched_lines

log = logging.getLogger(__name__)


@dataclass
class PyFile:
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
            code = self.module.visit(Replace({id(target): fn})).code
        except Exception:  # noqa: BLE001 - libcst refuses some replacements (bad sentinel position)
            return None
        return code if parses(code) else None

    def replace_many(self, fns: Mapping[int, Callable[[cst.CSTNode], object]]) -> str | None:
        try:
            code = self.module.visit(Replace(fns)).code
        except Exception:  # noqa: BLE001
            return None
        return code if parses(code) else None

    def names(self) -> set[str]:
        return {n.value for n in walk(self.module) if isinstance(n, cst.Name)}


class Replace(cst.CSTTransformer):
    def __init__(self, fns: Mapping[int, Callable[[cst.CSTNode], object]]) -> None:
        super().__init__()
        self.fns = fns

    def on_leave(self, original_node, updated_node):  # noqa: ANN001, ANN201
        fn = self.fns.get(id(original_node))
        return updated_node if fn is None else fn(updated_node)


def walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    yield node
    for child in node.children:
        yield from walk(child)


class Functions(cst.CSTVisitor):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[int, int, cst.FunctionDef]] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        rng = self.get_metadata(PositionProvider, node)
        self.found.append((rng.start.line, rng.end.line, node))


def one_file(path: str, code: str | None) -> Contents | None:
    return None if code is None else {path: code}


def guarded(items: Iterator, where: str) -> Iterator:
    """An operator that trips over unusual code loses its remaining candidates for that file, not
    the task's probes."""
    try:
        yield from items
    except Exception as err:  # noqa: BLE001
        log.warning("probe generation stopped early in %s: %s: %s", where, type(err).__name__, err)


def python_files(ws: Workspace) -> list[PyFile]:
    out = []
    for path in ws.paths:
        new = ws.new[path]
        if new is None or not path.endswith(".py") or not importable(path, ws.root):
            continue
        try:
            wrapper = MetadataWrapper(cst.parse_module(new))
            pos = wrapper.resolve(PositionProvider)
        except Exception:  # noqa: BLE001 - not Python 3 libcst can parse
            continue
        old_l, new_l = file_lines(ws.old[path]), file_lines(new)
        py = PyFile(path, ws.old[path], new, wrapper, pos, added_lines(old_l, new_l), touched_lines(old_l, new_l))
        finder = Functions()
        wrapper.visit(finder)
        py.functions = finder.found
        out.append(py)
    return out


def code_of(py: PyFile, node: cst.CSTNode) -> str:
    return py.module.code_for_node(node)


def short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def parens(expr: cst.BaseExpression) -> cst.BaseExpression:
    if expr.lpar or isinstance(expr, (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.BaseNumber, cst.BaseString)):
        return expr
    return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def negate(expr: cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not) and not expr.lpar:
        return expr.expression
    return cst.UnaryOperation(operator=cst.Not(), expression=parens(expr))


def fresh_name(base: str, taken: set[str]) -> str:
    name, n = base, 2
    while name in taken:
        name, n = f"{base}{n}", n + 1
    taken.add(name)
    return name


def line_of(py: PyFile, node: cst.CSTNode) -> str:
    line = py.start(node)
    return f"{py.path}:{line}"
