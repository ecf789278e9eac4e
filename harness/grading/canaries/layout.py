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
import functools
import random
import re
from dataclasses import dataclass, field

from harness.grading.canaries.sources import read_module, start_line, test_functions, test_scopes

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


@functools.lru_cache(maxsize=32)
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
    rows[row] = re.sub(rf"\bdef(\s+){re.escape(old)}\b", lambda m: f"def{m.group(1)}{new}", rows[row], count=1)
    return "".join(rows)


def neutral(rng: random.Random, taken: set[str]) -> str:
    while True:
        name = f"test_{rng.getrandbits(48):012x}"
        if name not in taken:
            taken.add(name)
            return name


@dataclass(frozen=True)
class _Scope:
    """A scope as every grade rewrites it: the other statements in order (a test class's with its own
    scope), and each test with the first place it may go."""

    others: tuple[tuple[str, _Scope | None], ...]  # text (a class's header), the class's scope
    tests: tuple[tuple[Site, int], ...]
    header: int  # places before this one hold the scope's docstring and opening imports
    gap: str
    name: str  # the class, "" for the module


@functools.lru_cache(maxsize=32)
def _skeleton(path: str, blob: bytes) -> tuple[_Scope, dict[str, str]] | None:
    """What a rewrite of the file keeps (once per process and content) and each class's family."""
    found = sites(path, blob)
    if found is None:
        return None
    module, lines = read_module(path, blob)  # type: ignore[misc]
    by_node = {id(site.node): site for site in found}
    scopes = test_scopes(module, lines)
    classes = {s.name for s in scopes if s.method}
    module_tests = any(not s.method for s in scopes)

    def build(body: list[ast.stmt], tests_here: bool, gap: str, name: str) -> _Scope:
        others: list[tuple[str, _Scope | None]] = []
        binds: list[set[str] | None] = []  # names each other statement binds (None: unknown, a star import)
        tests: list[tuple[Site, int]] = []
        header = 0
        for node in body:
            site = by_node.get(id(node)) if tests_here else None
            if site is not None:
                reads = _reads(node)
                bound = [i + 1 for i, names in enumerate(binds) if names is None or names & reads]
                tests.append((site, max([header, *bound])))
                continue
            if len(others) == header and not tests and isinstance(node, (ast.Import, ast.ImportFrom, ast.Expr)):
                header += 1  # a docstring and the imports that open the scope stay first
            if isinstance(node, ast.ClassDef) and node.name in classes:
                head = lines[start_line(node) : start_line(node.body[0])]
                while head and (not head[-1].strip() or head[-1].lstrip().startswith("#")):
                    head = head[:-1]
                others.append(("".join(head), build(node.body, True, "\n", node.name)))
            else:
                others.append(("".join(lines[start_line(node) : node.end_lineno]).rstrip("\n") + "\n", None))
            binds.append(_binds(node))
        return _Scope(tuple(others), tuple(tests), header, gap, name)

    return build(module.body, module_tests, "\n\n", ""), families(module)


def rewrite(path: str, blob: bytes, extra: list[Unit], rng: random.Random, taken: set[str]) -> Rewritten:
    """The file in the uniform layout with ``extra`` tests added; ``taken``: neutral names in use."""
    skeleton = _skeleton(path, blob)
    if skeleton is None:
        return Rewritten(blob)
    top, family = skeleton
    out = Rewritten(b"")
    by_family: dict[tuple[str, str], str] = {}
    for site in sites(path, blob) or []:
        mine = (family.get(site.scope, site.scope), site.name)
        if mine not in by_family:
            by_family[mine] = neutral(rng, taken)
            out.names[by_family[mine]] = site.name
        out.own[(site.scope, site.name)] = by_family[mine]

    def render(scope: _Scope) -> str:
        placed: list[list[str]] = [[] for _ in range(len(scope.others) + 1)]
        earliest = {}
        for site, first in scope.tests:
            earliest[site.name] = first
            placed[rng.randint(first, len(scope.others))].append(named(site.segment, site.row, site.name, out.own[(site.scope, site.name)]))
        for unit in (u for u in extra if u.scope == scope.name):
            placed[rng.randint(earliest.get(unit.like, scope.header), len(scope.others))].append(unit.source)
        pieces: list[str] = []
        for i, group in enumerate(placed):
            rng.shuffle(group)
            pieces += [t.rstrip("\n") + "\n" for t in group]
            if i < len(scope.others):
                text, inner = scope.others[i]
                pieces.append(text + render(inner) if inner is not None else text)
        return scope.gap.join(pieces)

    out.text = render(top).encode()
    return out


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
