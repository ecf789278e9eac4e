"""One uniform layout for a hidden test file: every test, real, twin or canary, written alike.

The host rebuilds the file from its statements: two blank lines between top-level statements, one
between a class's members, one newline at the end, no comment or blank line outside a statement.
Every test gets a neutral name, ``test_`` and twelve random hex digits (one per original name and
family of classes related by inheritance in the file, so an override keeps overriding; a twin set
is drawn only for a test no other class of its family names alike), and each test goes to a
random place in its scope: after the first statements that bind a name its decorators, defaults or
annotations read (a twin reads what its original reads, so the two have the same choices), in random
order within a place. Test classes keep their places (a class may derive from one above it); only
their test methods move. What a test's own lines hold is kept as it is: a twin copies them.

A file whose tests are named anywhere else in it (``self.test_other()``, ``del TestBase.test_x``) or
share a line with another statement is left as it is, with no twins.
"""

from __future__ import annotations

import ast
import random
import re
from dataclasses import dataclass, field

from harness.grading.canaries.sources import read_module, start_line, test_functions, test_scopes

_HEX = "0123456789abcdef"


@dataclass(frozen=True)
class Site:
    """A test of the file: its scope, name, source lines (``row``: the line of its ``def``)."""

    scope: str
    name: str
    node: ast.FunctionDef | ast.AsyncFunctionDef
    start: int  # 0-based first line (decorators included)
    segment: str
    row: int


@dataclass(frozen=True)
class Unit:
    """A test to add to a scope: its name, its source (already named), and the test whose places it
    shares (``like``; "" for any place of the scope)."""

    scope: str
    name: str
    source: str
    like: str = ""


@dataclass
class Rewritten:
    text: bytes
    names: dict[str, str] = field(default_factory=dict)  # neutral name -> the file's own name
    own: dict[tuple[str, str], str] = field(default_factory=dict)  # (scope, own name) -> neutral name


def families(module: ast.Module) -> dict[str, str]:
    """Each class of the file -> the first class of its family (classes joined by deriving from one
    another here)."""
    root: dict[str, str] = {}

    def find(name: str) -> str:
        while root.get(name, name) != name:
            name = root[name]
        return name

    classes = [node for node in module.body if isinstance(node, ast.ClassDef)]
    for node in classes:
        root.setdefault(node.name, node.name)
        for base in node.bases:
            if isinstance(base, ast.Name) and base.id in root:
                root[find(node.name)] = find(base.id)
    return {node.name: find(node.name) for node in classes}


def sites(path: str, blob: bytes) -> list[Site] | None:
    """The file's tests, or None where the file cannot be rewritten (see the module's docstring)."""
    parsed = read_module(path, blob)
    if parsed is None:
        return None
    module, lines = parsed
    found = test_functions(module)
    names = {test.name for _, test in found}
    defs = {id(test) for _, test in found}
    for node in ast.walk(module):
        used = (
            node.id if isinstance(node, ast.Name)
            else node.attr if isinstance(node, ast.Attribute)
            else node.value if isinstance(node, ast.Constant) and isinstance(node.value, str)
            else None
        )  # fmt: skip
        if used in names or (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in names and id(node) not in defs):
            return None
    out = []
    for scope, test in found:
        start, end = start_line(test), test.end_lineno or test.lineno
        segment = "".join(lines[start:end])
        out.append(Site(scope, test.name, test, start, segment if segment.endswith("\n") else segment + "\n", test.lineno - 1 - start))
    for body in [module.body, *(c.body for c in module.body if isinstance(c, ast.ClassDef))]:
        if _shares_lines(body, defs):
            return None
    return out


def named(segment: str, row: int, old: str, new: str) -> str:
    rows = segment.splitlines(keepends=True)
    rows[row] = re.sub(rf"\bdef(\s+){re.escape(old)}\b", rf"def\g<1>{new}", rows[row], count=1)
    return "".join(rows)


def neutral(rng: random.Random, taken: set[str]) -> str:
    while True:
        name = "test_" + "".join(rng.choice(_HEX) for _ in range(12))
        if name not in taken:
            taken.add(name)
            return name


def rewrite(path: str, blob: bytes, extra: list[Unit], rng: random.Random, taken: set[str]) -> Rewritten:
    """The file in the uniform layout with ``extra`` tests added; ``taken``: neutral names in use."""
    module, lines = read_module(path, blob)  # type: ignore[misc]
    found = sites(path, blob) or []
    out = Rewritten(b"")
    own: dict[tuple[str, str], str] = {}
    family = families(module)
    for site in found:
        mine = (family.get(site.scope, site.scope), site.name)
        if mine not in own:
            own[mine] = neutral(rng, taken)
            out.names[own[mine]] = site.name
    by_node = {id(site.node): site for site in found}
    out.own = {(site.scope, site.name): own[(family.get(site.scope, site.scope), site.name)] for site in found}
    classes = {s.name for s in test_scopes(module, lines) if s.method}
    module_tests = any(not s.method for s in test_scopes(module, lines))

    def test_text(node: ast.stmt) -> str | None:
        site = by_node.get(id(node))
        return None if site is None else named(site.segment, site.row, site.name, out.own[(site.scope, site.name)])

    def other_text(node: ast.stmt) -> str:
        if isinstance(node, ast.ClassDef) and node.name in classes:
            header = [line for line in lines[start_line(node) : start_line(node.body[0])]]
            while header and (not header[-1].strip() or header[-1].lstrip().startswith("#")):
                header.pop()
            units = [u for u in extra if u.scope == node.name]
            return "".join(header) + _scope(node.body, lines, test_text, units, by_node, rng, "\n")
        text = "".join(lines[start_line(node) : node.end_lineno])
        return text if text.endswith("\n") else text + "\n"

    units = [u for u in extra if u.scope == ""] if module_tests else []
    body = _scope(module.body, lines, test_text if module_tests else (lambda node: None), units, by_node, rng, "\n\n", other_text)
    out.text = body.encode()
    return out


def _scope(
    body: list[ast.stmt], lines: list[str], test_text, units: list[Unit], by_node: dict, rng: random.Random, gap: str, other_text=None
) -> str:
    """A scope's statements: the others in their order, the tests (its own and ``units``) each at a
    random place after the statements binding what it reads at definition time."""
    other_text = other_text or (lambda node: "".join(lines[start_line(node) : node.end_lineno]).rstrip("\n") + "\n")
    others: list[tuple[str, set[str] | None]] = []  # text, names bound (None: unknown, a star import)
    tests: list[tuple[ast.stmt | None, str]] = []
    earliest: dict[str, int] = {}
    for node in body:
        text = test_text(node)
        if text is None:
            others.append((other_text(node), _binds(node)))
            continue
        tests.append((node, text))
    header = 0
    for node in body:  # a docstring and the imports that open the scope stay first
        if test_text(node) is not None or not isinstance(node, (ast.Import, ast.ImportFrom, ast.Expr)):
            break
        header += 1
    placed: list[list[str]] = [[] for _ in range(len(others) + 1)]

    def first(node: ast.stmt | None) -> int:
        reads = _reads(node) if node is not None else set()
        bound = [i + 1 for i, (_, binds) in enumerate(others) if binds is None or binds & reads]
        return max([header, *bound])

    for node, text in tests:
        site = by_node.get(id(node))
        earliest[site.name if site else ""] = first(node)
        placed[rng.randint(earliest[site.name if site else ""], len(others))].append(text)
    for unit in units:
        low = earliest.get(unit.like, header) if unit.like else header
        placed[rng.randint(low, len(others))].append(unit.source)
    pieces: list[str] = []
    for i, group in enumerate(placed):
        rng.shuffle(group)
        pieces += [t.rstrip("\n") + "\n" for t in group]
        if i < len(others):
            pieces.append(others[i][0].rstrip("\n") + "\n")
    return gap.join(pieces)


def _binds(node: ast.stmt) -> set[str] | None:
    names: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, (ast.Store, ast.Del)):
            names.add(sub.id)
        elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(sub.name)
        elif isinstance(sub, (ast.Import, ast.ImportFrom)):
            for alias in sub.names:
                if alias.name == "*":
                    return None
                names.add((alias.asname or alias.name).split(".")[0])
    return names


def _reads(node: ast.stmt) -> set[str]:
    """Names a function's definition evaluates: decorators, defaults, annotations."""
    parts: list[ast.AST] = list(getattr(node, "decorator_list", []))
    args = getattr(node, "args", None)
    if args is not None:
        parts += [*args.defaults, *(d for d in args.kw_defaults if d is not None)]
        parts += [a.annotation for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg] if a is not None and a.annotation]
    if getattr(node, "returns", None) is not None:
        parts.append(node.returns)  # type: ignore[attr-defined]
    return {n.id for part in parts for n in ast.walk(part) if isinstance(n, ast.Name)}


def _shares_lines(body: list[ast.stmt], tests: set[int]) -> bool:
    """Whether a test shares a line with another statement of its scope (a segment would hold both)."""
    spans = sorted((start_line(n), n.end_lineno or n.lineno, id(n) in tests) for n in body)
    return any(a[1] > b[0] and (a[2] or b[2]) for a, b in zip(spans, spans[1:]))
