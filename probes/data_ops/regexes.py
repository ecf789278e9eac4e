"""Regex operators: drop an alternative or a class member gold added, change a quantifier gold added."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import libcst as cst

from harness.pyast import parse
from probes.data_ops.added import Mutant, _Old, added_chars
from probes.pycst import PyFile, line_of, short

REGEX_MODULES = ("re", "regex")
REGEX_FUNCTIONS = {"compile", "match", "fullmatch", "search", "findall", "finditer", "sub", "subn", "split"}


@dataclass(frozen=True)
class Edit:
    """Replace ``body[start:end]`` with ``text``; ``span`` is what must hold an added character."""

    operator: str
    start: int
    end: int
    text: str
    what: str
    span: tuple[int, int]


_QUANTIFIER = re.compile(r"\{(\d*)(,?)(\d*)\}")


def _quantifier_change(q: str) -> str | None:
    if q == "*":
        return "+"
    if q in ("+", "?"):
        return ""
    m = _QUANTIFIER.fullmatch(q)
    if m is None or not (m.group(1) or m.group(3)):
        return None
    low, comma, high = m.groups()
    if not comma:
        return "{" + str(int(low) + 1) + "}"
    return "{" + (low or high) + "}"


def _class_end(p: str, i: int) -> tuple[int, list[tuple[int, int]]]:
    """The index after the class that opens at ``p[i] == '['`` and its members' spans (a range is one member)."""
    j = i + 1
    if j < len(p) and p[j] == "^":
        j += 1
    units: list[tuple[int, int]] = []
    first = True
    while j < len(p) and (p[j] != "]" or first):
        first = False
        width = 2 if p[j] == "\\" else 1
        units.append((j, j + width))
        j += width
    members: list[tuple[int, int]] = []
    k = 0
    while k < len(units):
        a, b = units[k]
        if k + 2 < len(units) and p[units[k + 1][0]] == "-":
            b = units[k + 2][1]
            k += 3
        else:
            k += 1
        members.append((a, b))
    return min(j + 1, len(p)), members


def _group_prefix(p: str, i: int) -> tuple[int, bool]:
    """After ``(`` at ``i``: where the group's content starts, and whether it is a group at all
    (a backreference, a comment or inline flags is an atom)."""
    if p.startswith("(?", i):
        rest = p[i + 2 :]
        if rest.startswith(("P=", "#")) or re.match(r"[aiLmsux-]*\)", rest):
            return p.find(")", i) + 1 or len(p), False
        if rest.startswith("P<"):
            return (p.find(">", i) + 1) or len(p), True
        if rest.startswith(("<=", "<!")):
            return i + 4, True
        flags = re.match(r"[aiLmsux-]*:", rest)
        if flags:
            return i + 2 + flags.end(), True
        return i + 3, True  # (?= (?! (?>
    return i + 1, True


def regex_edits(p: str) -> list[Edit]:
    """Every drop-an-alternative, drop-a-class-member and quantifier edit of the pattern ``p``."""
    edits: list[Edit] = []
    stack: list[tuple[int, list[int]]] = [(0, [])]  # (content start, bar positions) of each open group
    atom = False  # a quantifier here would apply to an atom

    def alternatives(start: int, end: int, bars: list[int]) -> None:
        if not bars:
            return
        bounds = [start - 1, *bars, end]
        for k in range(len(bounds) - 1):
            a, b = bounds[k] + 1, bounds[k + 1]
            cut = (a - 1, b) if k else (a, b + 1)
            edits.append(Edit("regex_alternative", *cut, "", f"alternative `{short(p[a:b], 40)}` dropped", cut))

    i = 0
    while i < len(p):
        ch = p[i]
        if ch == "\\":
            i, atom = i + 2, True
        elif ch == "[":
            end, members = _class_end(p, i)
            if len(members) > 1:
                for a, b in members:
                    edits.append(Edit("regex_class", a, b, "", f"`{p[a:b]}` dropped from `{short(p[i:end], 40)}`", (a, b)))
            i, atom = end, True
        elif ch == "(":
            start, group = _group_prefix(p, i)
            if group:
                stack.append((start, []))
                atom = False
            else:
                atom = True
            i = start
        elif ch == ")" and len(stack) > 1:
            start, bars = stack.pop()
            alternatives(start, i, bars)
            i, atom = i + 1, True
        elif ch == "|":
            stack[-1][1].append(i)
            i, atom = i + 1, False
        elif ch in "*+?{" and atom:
            m = _QUANTIFIER.match(p, i) if ch == "{" else None
            q = m.group() if m else ch if ch != "{" else ""
            if not q:
                i += 1
                continue
            new = _quantifier_change(q)
            if new is not None:
                edits.append(Edit("regex_quantifier", i, i + len(q), new, f"quantifier `{q}` -> `{new or 'once'}`", (i, i + len(q))))
            i += len(q)
            if i < len(p) and p[i] in "?+":  # lazy or possessive suffix
                i += 1
            atom = False
        else:
            i, atom = i + 1, True
    alternatives(0, len(p), stack[0][1])
    return edits


def _parts(node: cst.BaseExpression) -> list[cst.SimpleString] | None:
    """The literal pieces of a (possibly implicitly concatenated) string; None when not rewritable."""
    if isinstance(node, cst.SimpleString):
        parts = [node]
    elif isinstance(node, cst.ConcatenatedString):
        left, right = _parts(node.left), _parts(node.right)
        parts = None if left is None or right is None else [*left, *right]
    else:
        return None
    if parts is None:
        return None
    for part in parts:
        prefix = part.prefix.lower()
        if "f" in prefix or ("r" not in prefix and "\\" in part.raw_value):
            return None
    return parts


def _compiles(value: object) -> set[int]:
    """The flag sets (none, verbose) under which ``value`` compiles as a regex."""
    ok = set()
    for flags in (0, re.VERBOSE):
        try:
            re.compile(value, flags)  # type: ignore[call-overload]
        except (re.error, TypeError, ValueError, RecursionError, OverflowError):
            continue
        ok.add(flags)
    return ok


class _RegexSites(cst.CSTVisitor):
    """String literals used as regular expressions: the pattern argument of a regex function, or the
    value of a module-level name passed as one."""

    def __init__(self, py: PyFile) -> None:
        super().__init__()
        self.functions = set(_imported_from_re(py.new))
        self.literals: list[cst.BaseExpression] = []
        self.names: set[str] = set()

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        is_regex = (
            isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value in REGEX_MODULES
            and func.attr.value in REGEX_FUNCTIONS
        ) or (isinstance(func, cst.Name) and func.value in self.functions)  # fmt: skip
        if not is_regex or not node.args:
            return
        pattern = next((a.value for a in node.args if a.keyword and a.keyword.value == "pattern"), node.args[0].value)
        if isinstance(pattern, cst.Name):
            self.names.add(pattern.value)
        elif isinstance(pattern, (cst.SimpleString, cst.ConcatenatedString)):
            self.literals.append(pattern)


def _imported_from_re(source: str) -> list[str]:
    try:
        tree = parse(source)
    except (SyntaxError, ValueError):
        return []
    return [
        alias.asname or alias.name for node in tree.body if isinstance(node, ast.ImportFrom) and node.module in REGEX_MODULES
        for alias in node.names if alias.name in REGEX_FUNCTIONS
    ]  # fmt: skip


def regex_literals(py: PyFile) -> list[cst.BaseExpression]:
    sites = _RegexSites(py)
    py.module.visit(sites)
    found = list(sites.literals)
    for stmt in py.module.body:
        if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1 or not isinstance(stmt.body[0], cst.Assign):
            continue
        assign = stmt.body[0]
        targets = [t.target for t in assign.targets]
        named = len(targets) == 1 and isinstance(targets[0], cst.Name) and targets[0].value in sites.names
        if named and isinstance(assign.value, (cst.SimpleString, cst.ConcatenatedString)):
            found.append(assign.value)
    return found


def _regex_mutants(py: PyFile, old: _Old, literal: cst.BaseExpression) -> Iterator[Mutant]:
    parts = _parts(literal)
    if not parts:
        return
    bodies = [part.raw_value for part in parts]
    offsets = [sum(len(b) for b in bodies[:k]) for k in range(len(bodies))]
    added = {offset + k for part, offset in zip(parts, offsets, strict=True)
             for k in added_chars(part.raw_value, old.block(py.start(part)))}  # fmt: skip
    binary = "b" in parts[0].prefix.lower()
    joined = "".join(bodies)  # raw or backslash-free parts: their text is the pattern
    flags = _compiles(joined.encode() if binary else joined)
    if not added or not flags:
        return
    for edit in regex_edits(joined):
        if not any(edit.span[0] <= k < edit.span[1] for k in added):
            continue
        pattern = joined[: edit.start] + edit.text + joined[edit.end :]
        if not _compiles(pattern.encode() if binary else pattern) & flags:
            continue
        new_bodies = _split(bodies, offsets, edit)
        replaced = {id(part): (lambda n, body=body: n.with_changes(value=n.prefix + n.quote + body + n.quote))
                    for part, body in zip(parts, new_bodies, strict=True) if body != part.raw_value}  # fmt: skip
        first = next(p for p, b in zip(parts, new_bodies, strict=True) if b != p.raw_value)
        yield edit.operator, f"regex {edit.what} at {line_of(py, first)}", lambda replaced=replaced: py.replace_many(replaced)


def _split(bodies: Sequence[str], offsets: Sequence[int], edit: Edit) -> list[str]:
    """Each part's text after ``edit`` (given on the joined text): the characters it covers removed, its
    replacement in the part where it starts."""
    out = []
    for body, offset in zip(bodies, offsets, strict=True):
        a, b = max(edit.start, offset) - offset, min(edit.end, offset + len(body)) - offset
        text = edit.text if offset <= edit.start < offset + len(body) else ""
        out.append(body[:a] + text + body[b:] if a <= b else body)
    return out
