"""libcst views of the post-gold Python files a probe operator rewrites, and the small CST helpers the
operators share."""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from probes.workspace import Contents, Workspace, added_lines, file_lines, importable, parses, touched_lines

log = logging.getLogger(__name__)
T = TypeVar("T")


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
        return self.replace_many({id(target): fn})

    def replace_many(self, fns: Mapping[int, Callable[[cst.CSTNode], object]]) -> str | None:
        """Only the top-level statements that hold a target are transformed and printed again, the rest
        of the text is kept as it is: a large module then costs one statement's work per probe, not the
        whole file's."""
        try:
            code = self._spliced(fns)
        except Exception:  # noqa: BLE001 - libcst refuses some replacements (bad sentinel position)
            return None
        return code if code is not None and parses(code) else None

    @functools.cached_property
    def _layout(self) -> tuple[dict[int, int], list[str], str, str] | None:
        """(top-level statement index of every node, each statement's text, header, footer); None when
        the statements' texts do not rebuild the file."""
        body = self.module.body
        texts = [self.module.code_for_node(stmt) for stmt in body]
        joined, full = "".join(texts), self.module.code
        at = full.find(joined)
        if at < 0:
            return None
        owner = {id(node): k for k, stmt in enumerate(body) for node in walk(stmt)}
        return owner, texts, full[:at], full[at + len(joined):]

    def _spliced(self, fns: Mapping[int, Callable[[cst.CSTNode], object]]) -> str | None:
        layout = self._layout
        if layout is None or any(key not in layout[0] for key in fns):
            return self.module.visit(Replace(fns)).code
        owner, texts, header, footer = layout
        texts = list(texts)
        for k in {owner[key] for key in fns}:
            new = self.module.body[k].visit(Replace(fns))
            if isinstance(new, cst.FlattenSentinel):
                return self.module.visit(Replace(fns)).code
            texts[k] = "" if isinstance(new, cst.RemovalSentinel) else self.module.code_for_node(new)
        return header + "".join(texts) + footer

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
        if (py := _parsed(path, ws.old[path], new)) is not None:
            out.append(py)
    return out


_PARSED: dict[tuple[str, str | None, str], PyFile | None] = {}  # the last MAX_PARSED files, by content
_PARSED_LOCK = threading.Lock()
MAX_PARSED = 8


def _parsed(path: str, old: str | None, new: str) -> PyFile | None:
    """One file's view, made once per content: a task's wrong probes and its rewrites of gold are
    generated from the same files, and libcst's parse with positions was half of it on a
    5,000-line module. Nothing changes a PyFile once it is made (its nodes are immutable)."""
    key = (path, old, new)
    with _PARSED_LOCK:
        if key in _PARSED:
            return _PARSED[key]
    try:
        wrapper = MetadataWrapper(cst.parse_module(new))
        pos = wrapper.resolve(PositionProvider)
    except Exception:  # noqa: BLE001 - not Python 3 libcst can parse
        py = None
    else:
        old_l, new_l = file_lines(old), file_lines(new)
        py = PyFile(path, old, new, wrapper, pos, added_lines(old_l, new_l), touched_lines(old_l, new_l))
        finder = Functions()
        wrapper.visit(finder)
        py.functions = finder.found
    with _PARSED_LOCK:
        if len(_PARSED) >= MAX_PARSED:
            _PARSED.pop(next(iter(_PARSED)))
        _PARSED[key] = py
    return py


def code_of(py: PyFile, node: cst.CSTNode) -> str:
    return py.module.code_for_node(node)


def short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def parens(expr: cst.BaseExpression) -> cst.BaseExpression:
    if expr.lpar or isinstance(expr, (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.BaseNumber, cst.BaseString)):
        return expr
    return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def keep_parens(old: cst.BaseExpression, new: cst.BaseExpression) -> cst.BaseExpression:
    """``new`` in ``old``'s place, in ``old``'s parentheses where it had them."""
    return new.with_changes(lpar=old.lpar, rpar=old.rpar) if old.lpar else new


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


def spread(items: Iterable[T], line: Callable[[T], object]) -> list[T]:
    """``items`` round-robin over the lines they sit on (in order of each line's first item): the first
    of every line, then the second of every line, ... An operator capped at a few candidates then takes
    them from as many lines as it can, not all from the first line that has many sites."""
    by_line: dict[object, list[T]] = {}
    for item in items:
        by_line.setdefault(line(item), []).append(item)
    queues = list(by_line.values())
    out: list[T] = []
    for k in range(max(map(len, queues), default=0)):
        out += [q[k] for q in queues if k < len(q)]
    return out


def line_of(py: PyFile, node: cst.CSTNode) -> str:
    line = py.start(node)
    return f"{py.path}:{line}"
