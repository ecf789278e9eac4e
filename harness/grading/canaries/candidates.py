"""The canaries a hidden test file offers: renamed copies of its tests, some with one expected value changed."""

from __future__ import annotations

import ast
import functools
import random
import re
from dataclasses import dataclass

from harness.grading.canaries.sources import read_module, start_line, test_functions

_EQUALITY = {"assertEqual", "assertEquals"}


@dataclass(frozen=True)
class Candidate:
    """A copy of one hidden test that a grade may plant: ``source`` holds ``{name}`` where the copy's
    name goes, and keeps the original's indentation."""

    key: str  # path::scope::test:pass|fail, stable for the same file
    path: str
    scope: str  # the owning class, "" at module level
    test: str  # the real test copied
    must_fail: bool
    source: str
    earliest: int  # the first line a copy may go before: after the original when its decorators bind names


def candidates(files: dict[str, bytes]) -> list[Candidate]:
    """Every canary the hidden test files offer: a copy of each test, and of each test with a
    top-level equality against a literal, one changed copy (the same one every time for the same
    file, so a validated key names the same source). A copy costs what its test costs, so a test
    with a loop is copied only where the copy stops before it: a changed assert ahead of the loop."""
    return [candidate for path, blob in sorted(files.items()) for candidate in _file_candidates(path, blob)]


@functools.lru_cache(maxsize=32)
def _file_candidates(path: str, blob: bytes) -> tuple[Candidate, ...]:
    """One file's candidates, found once per process and content (see ``_module``)."""
    found: list[Candidate] = []
    parsed = read_module(path, blob)
    if parsed is not None:
        module, lines = parsed
        for scope, test in test_functions(module):
            key = f"{path}::{scope}::{test.name}"
            start, end = start_line(test), test.end_lineno or test.lineno
            segment = "".join(lines[start:end])
            if not segment.endswith("\n"):
                segment += "\n"
            named = _rename(segment, test, start)
            binds = bool(test.decorator_list) or bool(test.args.defaults or test.args.kw_defaults)
            earliest = end if binds else 0
            if not _loops(test):
                found.append(Candidate(f"{key}:pass", path, scope, test.name, False, named, earliest))
            edit = _edit(test, lines, start, random.Random(key))
            if edit is not None:
                begin, stop, text = edit
                changed = _rename(segment[:begin] + text + segment[stop:], test, start)
                found.append(Candidate(f"{key}:fail", path, scope, test.name, True, changed, earliest))
    return tuple(found)


def _rename(segment: str, test: ast.FunctionDef | ast.AsyncFunctionDef, start: int) -> str:
    """The segment with ``{name}`` for the test's name on its ``def`` line, every other brace doubled
    so ``str.format`` gives the source back."""
    rows = segment.replace("{", "{{").replace("}", "}}").splitlines(keepends=True)
    row = test.lineno - 1 - start
    rows[row] = re.sub(rf"\bdef(\s+){re.escape(test.name)}\b", r"def\1{name}", rows[row], count=1)
    return "".join(rows)


def _edit(test: ast.FunctionDef | ast.AsyncFunctionDef, lines: list[str], start: int, rng: random.Random) -> tuple[int, int, str] | None:
    """One literal of one top-level equality assert, changed: (begin, end, replacement) as character
    offsets into the test's segment; None when the test has no such assert."""
    leaves = []
    for statement in test.body:
        literal = _expected(statement)
        if literal is not None:
            leaves.append([leaf for leaf in ast.walk(literal) if _editable(leaf)])
        if _loops(statement):  # a copy that fails after it would run it
            break
    rng.shuffle(leaves)
    for group in leaves:
        rng.shuffle(group)
        for leaf in group:
            text = _segment(lines, leaf)
            changed = _changed(leaf.value, text, rng)  # type: ignore[attr-defined]
            if changed is not None:
                begin = _offset(lines, start, leaf.lineno, leaf.col_offset)
                stop = _offset(lines, start, leaf.end_lineno or leaf.lineno, leaf.end_col_offset or 0)
                return begin, stop, changed
    return None


def _loops(node: ast.AST) -> bool:
    return any(isinstance(n, (ast.For, ast.AsyncFor, ast.While, ast.comprehension)) for n in ast.walk(node))


def _expected(statement: ast.stmt) -> ast.expr | None:
    """The literal side of ``assert x == L`` / ``self.assertEqual(x, L)`` when the other side is not a
    literal (it is what the package computed)."""
    if isinstance(statement, ast.Assert) and isinstance(statement.test, ast.Compare):
        compare = statement.test
        if len(compare.ops) == 1 and isinstance(compare.ops[0], ast.Eq):
            sides = [compare.left, compare.comparators[0]]
        else:
            return None
    elif (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Call)
        and isinstance(statement.value.func, ast.Attribute)
        and statement.value.func.attr in _EQUALITY
        and len(statement.value.args) >= 2
    ):
        sides = statement.value.args[:2]
    else:
        return None
    literal = [side for side in sides if _is_literal(side)]
    return literal[0] if len(literal) == 1 else None


def _is_literal(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return isinstance(node.operand, ast.Constant)
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return all(_is_literal(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(k is not None and _is_literal(k) for k in node.keys) and all(_is_literal(v) for v in node.values)
    return False


def _editable(node: ast.AST) -> bool:
    # booleans and None: a buggy tree returns the flipped value itself
    return isinstance(node, ast.Constant) and type(node.value) in (int, float, str, bytes)


def _segment(lines: list[str], node: ast.expr) -> str:
    first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
    raw = "".join(lines[first : last + 1]).encode()
    begin = node.col_offset
    stop = len("".join(lines[first:last]).encode()) + (node.end_col_offset or 0)
    return raw[begin:stop].decode()


def _offset(lines: list[str], start: int, lineno: int, col: int) -> int:
    """Character offset into the segment starting at line ``start`` of (1-based line, byte column)."""
    before = sum(len(line) for line in lines[start : lineno - 1])
    return before + len(lines[lineno - 1].encode()[:col].decode())


def _changed(value: object, text: str, rng: random.Random) -> str | None:
    """``text`` (the literal as written) for a different value, in the same notation."""
    if isinstance(value, int):
        step = rng.choice([2, 3, 4, 5, 7, 10, 12])
        return str(value + step if value - step < 0 or rng.random() < 0.5 else value - step)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")) or "e" in text.lower():
            return None
        decimals = len(text.split(".")[1]) if "." in text else 0
        step = rng.choice([2, 3, 5, 7]) * 10.0**-decimals
        changed = round(value + step if value - step < 0 or rng.random() < 0.5 else value - step, decimals)
        return repr(changed) if changed != value else None
    prefix = re.match(r"[a-zA-Z]*", text).group()  # type: ignore[union-attr]
    body = text[len(prefix) :]
    if "f" in prefix.lower() or "\\" in body or len(body) < 2 or body[:3] in ('"""', "'''") or body[0] != body[-1]:
        return None
    content = body[1:-1]
    if body[0] in content:  # implicit concatenation of several literals
        return None
    letters = sorted({c for c in content if c.isalnum()}) or list("eanrst")
    at = rng.randint(0, len(content))
    near = [c for c in content[max(0, at - 1) : at + 1] if c.isalnum()]
    if content[at:at + 1].isalnum() and len(letters) > 1 and rng.random() < 0.4:  # one letter for another
        other = rng.choice([c for c in letters if c != content[at]])
        return prefix + body[0] + content[:at] + other + content[at + 1 :] + body[0]
    letter = rng.choice(near if near and rng.random() < 0.5 else letters)  # a letter repeated or added
    return prefix + body[0] + content[:at] + letter + content[at:] + body[0]
