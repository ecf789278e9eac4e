"""Mutant schemata: many probes of one task in one tree, each switched on in a run of its own.

A probe session (``probes.session``) pays, for every probe, a fork of its server and pytest's
collection of the suite (importing the test modules and the package under test) before the few tests
that decide the probe. Probes that each rewrite the body of one function of gold's tree, and nothing
else, can share one tree: every such function's body becomes a switch over its probes' bodies, gold's
own body the default::

    def f(x):
        "docstring"                              # outside the switch, the same in every variant
        if __import__('swedeck_schema_switch').which('pkg/m.py:f#0') == 3:
            <probe 3's body>
        elif __import__('swedeck_schema_switch').which('pkg/m.py:f#0') == 7:
            <probe 7's body>
        else:
            <gold's body>

One pytest session collects that tree once; the schema plugin (``harness/grading/plugins/swedeck_schema.py``)
then forks one run per probe from the collected session, with that probe's number switched on, its own
selected tests, ``--maxfail``, JUnit report and output (the classic mutant schema of mutation tools,
with fork-after-collection as mutmut and cosmic-ray's runners have it).

Why a run equals the probe's own run: until its body is entered, a switched function runs nothing,
and with no probe switched on (collection) every body is gold's, which the plugin watches: a
function entered while no probe is switched on (at import, in a collection hook, a parametrize list)
sends all of its probes back to runs of their own. Within a probe's run, its function runs its body
and every other function runs gold's, exactly the probe's tree. What this module refuses, because the
switch would not be transparent: a change anywhere but one function's body (a signature, a
decorator, the docstring, module code, another file), a function nested in a function, a body on its
``def``'s line, a multi-line string or tab indentation in a body (re-indenting would change them), a
body that starts or stops being a generator, and a name whose scope differs between the variants
(local in one, global in another: the schema makes it local in all). What a schema cannot keep: a
switched function's source text and code object, and the line numbers below a switched body; a task
whose tests (the tree's, the hidden ones) or gold's changed files read source or line numbers
(``reads_source``) gets no schema.
"""

from __future__ import annotations

import ast
import functools
import io
import re
import symtable
import tokenize
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.grading.diffs import is_r2e_test_path
from harness.pyast import is_generator, parse
from probes.checks import Files

# the switch every switched body asks (harness/grading/plugins/swedeck_schema_switch.py)
SWITCH = "__import__('swedeck_schema_switch').which"
BATCH = 16  # probes in one schema run: a run that times out or dies costs its batch a second try
# What reads a function's source text or line numbers, both of which a switch changes: a task whose
# tests or gold's changed files name one of these gets no schema
READS_SOURCE = re.compile(
    rb"\b(getsource|getsourcelines|findsource|getframeinfo|getouterframes|getinnerframes|co_firstlineno|"
    rb"co_lines|f_lineno|tb_lineno|linecache|extract_tb|extract_stack|walk_tb|walk_stack|co_code)\b"
)


@dataclass(frozen=True)
class Site:
    """A function whose body one probe rewrote: ``key`` names it (path, qualified name, which of the
    definitions of that name), ``start``/``end`` the body's lines in gold (0-based, end exclusive,
    after the docstring), ``header`` gold's lines from the ``def`` to the body, ``body`` the probe's
    lines in the body's place."""

    path: str
    key: str
    start: int
    end: int
    header: tuple[str, ...]
    body: tuple[str, ...]


def tree_tests(tree: Path) -> list[bytes]:
    """The Python test files of a tree (R2E-Gym's rule, conftest.py files too)."""
    return [
        path.read_bytes()
        for path in tree.rglob("*.py")
        if ".git" not in path.parts and (path.name == "conftest.py" or is_r2e_test_path(path.relative_to(tree).as_posix()))
    ]


def reads_source(texts: Iterable[bytes]) -> bool:
    """Whether any of these files reads source text or line numbers (``READS_SOURCE``)."""
    return any(READS_SOURCE.search(text) for text in texts)


def _defs(tree: ast.Module) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """(key suffix ``qualname#n``, node) of every function defined in the module's or a class's body
    (at any depth of classes), never one inside a function; ``n`` counts earlier definitions of the
    same qualified name (a property's getter and setter)."""
    seen: dict[str, int] = {}
    todo: list[tuple[str, list[ast.stmt]]] = [("", tree.body)]
    while todo:
        prefix, body = todo.pop(0)
        for node in body:
            if isinstance(node, ast.ClassDef):
                todo.append((f"{prefix}{node.name}.", node.body))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = f"{prefix}{node.name}"
                seen[name] = seen.get(name, -1) + 1
                yield f"{name}#{seen[name]}", node


@functools.lru_cache(maxsize=16)
def _functions(text: str) -> tuple[tuple[str, int, int, int], ...] | None:
    """(key suffix, the ``def`` line, the body's start, its end) of every function of gold's file
    (0-based lines, end exclusive) whose body, after the docstring, starts on a line of its own."""
    try:
        tree = parse(text)
    except (SyntaxError, ValueError):
        return None
    lines = text.splitlines(keepends=True)
    out = []
    for key, node in _defs(tree):
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            body = body[1:]
        if body and not lines[body[0].lineno - 1][: body[0].col_offset].strip():
            out.append((key, node.lineno - 1, body[0].lineno - 1, body[-1].end_lineno))
    return tuple(out)


def site(path: str, gold: str, probe: str) -> Site | None:
    """The one function of ``path`` whose body alone the probe rewrote; None for any other change.
    The lines the probe changed are those between the texts' common first and last lines: all of
    them must lie in one function's body (after its docstring); the probe's text is then gold's with
    that body replaced, by construction."""
    functions = _functions(gold)
    old, new = gold.splitlines(keepends=True), probe.splitlines(keepends=True)
    if functions is None or old == new:
        return None
    shortest = min(len(old), len(new))
    first = next((i for i in range(shortest) if old[i] != new[i]), shortest)
    last = 0  # lines equal at the end, not overlapping the start
    while last < shortest - first and old[-1 - last] == new[-1 - last]:
        last += 1
    for key, line, start, end in functions:
        if start <= first and len(old) - last <= end:
            body = new[start : end + len(new) - len(old)]
            header = old[line:start]
            if not body or _indent(old[start]) != _indent(body[0]):
                return None
            ours, theirs = _function(header, old[start:end]), _function(header, body)
            if ours is None or theirs is None or is_generator(ours) != is_generator(theirs):
                return None
            return Site(path, f"{path}:{key}", start, end, tuple(header), tuple(body))
    return None


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _snippet(header: Sequence[str], body: Sequence[str]) -> str | None:
    """The function's text on its own, moved to column 0; None where a line is not indented as its
    ``def`` is (a string that spans lines), a line is indented with a tab or a string spans lines in
    the body (moving the body one level in would change it)."""
    indent = _indent(header[0])
    lines = []
    for text in [*header, *body]:
        if text.strip() and (not text.startswith(indent) or "\t" in _indent(text)):
            return None
        lines.append(text[len(indent) :] if text.strip() else text)
    snippet = "".join(lines)
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(snippet).readline))
    except (tokenize.TokenError, SyntaxError):
        return None
    if any(t.type == tokenize.STRING and t.start[0] != t.end[0] and t.end[0] > len(header) for t in tokens):
        return None
    return snippet


@functools.lru_cache(maxsize=256)
def _parsed(snippet: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    try:
        tree = parse(snippet)
    except (SyntaxError, ValueError):
        return None
    if len(tree.body) != 1 or not isinstance(tree.body[0], (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    return tree.body[0]


def _function(header: Sequence[str], body: Sequence[str]) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The function the header and body make, alone; None where it is not one function."""
    snippet = _snippet(header, body)
    return None if snippet is None else _parsed(snippet)


@functools.lru_cache(maxsize=256)
def _scopes(snippet: str) -> dict[str, str] | None:
    """How the function alone in ``snippet`` binds each name it or a scope inside it uses. A method
    alone binds as in its class, whose names a method never sees."""
    try:
        (function,) = symtable.symtable(snippet, "<schema>", "exec").get_children()
    except (SyntaxError, ValueError):
        return None
    names = set(function.get_identifiers())
    todo = list(function.get_children())
    while todo:
        inner = todo.pop()
        names |= {s.get_name() for s in inner.get_symbols() if s.is_free() or s.is_global()}
        todo.extend(inner.get_children())
    return {n: _binding(function, n) for n in names}


def _binding(function: symtable.SymbolTable, name: str) -> str:
    if name not in function.get_identifiers():
        return "global"  # not bound here: found in the module or the builtins, as an undeclared global is
    symbol = function.lookup(name)
    if symbol.is_parameter() or symbol.is_local():
        return "local"
    if symbol.is_declared_global():
        return "declared-global"
    if symbol.is_nonlocal():
        return "nonlocal"
    return "free" if symbol.is_free() else "global"


def _same_scopes(variant: dict[str, str] | None, schema: dict[str, str]) -> bool:
    """Every name the variant uses is bound in the schema as in the variant (names only other variants
    use may be bound any way)."""
    return variant is not None and all(schema.get(name, "global") == how for name, how in variant.items())


@dataclass
class Schema:
    """Gold's files with the bodies of the probes that joined switched in (``files``); ``numbers``:
    each joined probe's number -> its site's key."""

    gold: Files
    sites: dict[str, list[tuple[int, Site]]] = field(default_factory=dict)
    numbers: dict[int, str] = field(default_factory=dict)

    def add(self, number: int, files: Files) -> bool:
        """Join probe ``number`` (its files as a session writes them) when it rewrites one function's
        body of gold's files and nothing else, and the schema stays transparent with it: it compiles,
        and binds every name each variant of the function uses as that variant does."""
        if set(files) != set(self.gold):
            return False
        differs = [p for p in files if files[p] != self.gold[p]]
        if len(differs) != 1 or not differs[0].endswith(".py"):
            return False
        path = differs[0]
        ours, theirs = self.gold[path], files[path]
        if ours is None or theirs is None or ours[0] != theirs[0]:
            return False
        try:
            found = site(path, ours[1].decode(), theirs[1].decode())
        except UnicodeDecodeError:
            return False
        if found is None:
            return False
        joined = [*self.sites.get(found.key, []), (number, found)]
        gold_body = self._gold_body(found)
        switched = _snippet(found.header, _switch(found.key, joined, gold_body))
        schema = None if switched is None else _scopes(switched)
        variants = [gold_body, *(one.body for _, one in joined)]
        if schema is None or _parsed(switched) is None:
            return False
        if not all(_same_scopes(_scopes(_snippet(found.header, body) or ""), schema) for body in variants):
            return False
        self.sites[found.key] = joined
        self.numbers[number] = found.key
        return True

    def _gold_body(self, one: Site) -> list[str]:
        return self.gold[one.path][1].decode().splitlines(keepends=True)[one.start : one.end]

    def files(self) -> Files:
        out = dict(self.gold)
        for path in {one.path for joined in self.sites.values() for _, one in joined}:
            lines = self.gold[path][1].decode().splitlines(keepends=True)
            here = [(key, joined) for key, joined in self.sites.items() if joined[0][1].path == path]
            for key, joined in sorted(here, key=lambda kv: -kv[1][0][1].start):  # bottom up: lines above keep their place
                one = joined[0][1]
                lines[one.start : one.end] = _switch(key, joined, lines[one.start : one.end])
            out[path] = (self.gold[path][0], "".join(lines).encode())
        return out


def _switch(key: str, joined: list[tuple[int, Site]], gold: list[str]) -> list[str]:
    """The body that runs probe ``n``'s body while ``n`` is switched on, else gold's."""
    indent = _indent(gold[0])
    out = []
    for i, (number, one) in enumerate(joined):
        out.append(f"{indent}{'if' if i == 0 else 'elif'} {SWITCH}({key!r}) == {number}:\n")
        out += _inward(one.body)
    return [*out, f"{indent}else:\n", *_inward(gold)]


def _inward(lines: list[str] | tuple[str, ...]) -> list[str]:
    out = [f"    {line}" if line.strip() else line for line in lines]
    if out and not out[-1].endswith("\n"):
        out[-1] += "\n"
    return out
