"""Plausible-but-wrong operators on the data gold added: the parts of a regular expression gold added
(drop an alternative, drop a member of a character class, change a quantifier), an entry gold added
to a dict / list / tuple / set literal (dropped), a decorator gold added (dropped) and a string
constant gold added (changed, emptied, a number in it one more or one less).

Many fixes are data, not control flow: a regex that learns a new case, a keyword table that gains an
entry. The operators of ``probes.mutants`` leave such fixes untouched (there is no operator or branch
to flip), so a suite that checks one of the new cases and not the others looks sound to them.

"Gold added" is finer than a line here: a line gold changed holds old parts too. A part counts as
added when it is not in the old text of the change block that holds the line: an element or decorator
whose code the old block does not contain; a character of a string literal that the character-level
diff against the most similar string of the old block does not match (so in ``[BKM]`` -> ``[BKMGT]``
only ``G`` and ``T`` are added).

Limits: a regex is recognised only as a string literal passed to a ``re``/``regex`` function (or a
name imported from ``re``), directly or through a module-level name bound to it; escaped (non-raw)
strings with backslashes and f-strings are not rewritten; a rewritten regex must still compile.
"""

from __future__ import annotations

import ast
import difflib
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import libcst as cst

from harness.pyast import parse
from probes.mutants import is_docstring
from probes.pycst import PyFile, code_of, line_of, short
from probes.workspace import change_blocks, file_lines

REGEX_MODULES = ("re", "regex")
REGEX_FUNCTIONS = {"compile", "match", "fullmatch", "search", "findall", "finditer", "sub", "subn", "split"}
SIMILAR = 0.5  # an old string that keeps at least this share of its text in a new one is its earlier version
_STRING = re.compile(r"""(?i)(?<!\w)[rbu]{0,2}("{3}|'{3}|"|')((?:\\.|(?!\1).)*?)\1""", re.DOTALL)

DATA_OPERATORS = ("regex_alternative", "regex_class", "regex_quantifier", "drop_entry", "drop_decorator", "string_constant",
                  "string_number")
Mutant = tuple[str, str, Callable[[], "str | None"]]  # operator, description, build


# ============================================================================================ what gold added


class _Old:
    """The old text of each change block, by the new lines it covers."""

    def __init__(self, py: PyFile) -> None:
        old, new = file_lines(py.old), file_lines(py.new)
        self.blocks = [("".join(old[i1:i2]), j1 + 1, j2) for i1, i2, j1, j2 in change_blocks(old, new) if j2 > j1]

    def block(self, line: int) -> str | None:
        """The old text replaced by the block that holds new ``line``; None when gold did not add the line."""
        return next((text for text, first, last in self.blocks if first <= line <= last), None)


def _squash(text: str) -> str:
    return "".join(text.split())


def added_part(py: PyFile, old: _Old, node: cst.CSTNode) -> bool:
    """Every line of ``node`` was added by gold and its code is not in the old block (not merely moved
    or re-indented)."""
    if not py.all_added(node):
        return False
    before = old.block(py.start(node))
    return before is not None and _squash(code_of(py, node).strip().rstrip(",")) not in _squash(before)


def added_chars(body: str, old_block: str | None) -> set[int]:
    """Indexes of ``body`` (a string literal's text between its quotes) that gold added: those the
    string literal of the old block that survives best in it does not match (the largest share of its
    text kept, then the most characters); all of them when no old literal keeps half its text."""
    if old_block is None:
        return set()
    best: tuple[float, int] = (SIMILAR, 0)
    kept_best: set[int] = set()
    for found in _STRING.finditer(old_block):
        old = found.group(2)
        blocks = difflib.SequenceMatcher(None, old, body, autojunk=False).get_matching_blocks()
        kept = {b + k for _, b, size in blocks for k in range(size)}
        score = (len(kept) / len(old), len(kept)) if old else (0.0, 0)
        if score > best:
            best, kept_best = score, kept
    return set(range(len(body))) - kept_best


# ============================================================================================ regexes


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


# ============================================================================================ data literals


def _drop_element(container: cst.CSTNode, k: int) -> cst.CSTNode:
    elements = list(container.elements)  # type: ignore[attr-defined]
    dropped = elements.pop(k)
    if elements and k == len(elements):  # the last one went: its comma (or none) ends the literal
        elements[-1] = elements[-1].with_changes(comma=dropped.comma)
    if isinstance(container, cst.Tuple) and len(elements) == 1:
        elements[0] = elements[0].with_changes(comma=cst.Comma())
    return container.with_changes(elements=elements)


class _DataSites(cst.CSTVisitor):
    """Entries, decorators and string constants gold added (never in annotations, docstrings, raise
    statements or ``__all__``)."""

    def __init__(self, py: PyFile, old: _Old, regexes: Sequence[cst.BaseExpression]) -> None:
        super().__init__()
        self.py, self.old = py, old
        self.skip = 0  # inside an annotation, a raise (messages are reworded freely) or __all__
        self.regex_parts = {id(p) for r in regexes for p in (_parts(r) or [])}
        self.targets: set[int] = set()  # tuples that are assignment or loop targets
        self.entries: list[Mutant] = []
        self.decorators: list[Mutant] = []
        self.changed: list[Mutant] = []
        self.numbers: list[Mutant] = []
        self.emptied: list[Mutant] = []

    def _enter(self) -> None:
        self.skip += 1

    def _leave(self) -> None:
        self.skip -= 1

    def visit_Annotation(self, node: cst.Annotation) -> None:
        self._enter()

    def leave_Annotation(self, original_node: cst.Annotation) -> None:
        self._leave()

    def visit_Raise(self, node: cst.Raise) -> None:
        self._enter()

    def leave_Raise(self, original_node: cst.Raise) -> None:
        self._leave()

    def visit_Assign(self, node: cst.Assign) -> None:
        self.targets |= {id(t.target) for t in node.targets}
        if any(isinstance(t.target, cst.Name) and t.target.value == "__all__" for t in node.targets):
            self._enter()

    def leave_Assign(self, original_node: cst.Assign) -> None:
        if any(isinstance(t.target, cst.Name) and t.target.value == "__all__" for t in original_node.targets):
            self._leave()

    def visit_For(self, node: cst.For) -> None:
        self.targets.add(id(node.target))

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self.targets.add(id(node.target))

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> bool:
        return not is_docstring(node)

    def _container(self, node: cst.CSTNode, kind: str) -> None:
        if self.skip:
            return
        elements = list(node.elements)  # type: ignore[attr-defined]
        if isinstance(node, cst.Set) and len(elements) < 2:
            return  # an empty set literal is a dict
        for k, element in enumerate(elements):
            if isinstance(element, (cst.StarredElement, cst.StarredDictElement)) or not added_part(self.py, self.old, element):
                continue
            what = short(code_of(self.py, element.with_changes(comma=cst.MaybeSentinel.DEFAULT)).strip(), 40)
            self.entries.append((
                "drop_entry", f"`{what}` dropped from a {kind} at {line_of(self.py, element)}",
                lambda node=node, k=k: self.py.replace(node, lambda n, k=k: _drop_element(n, k)),
            ))  # fmt: skip

    def visit_Dict(self, node: cst.Dict) -> None:
        self._container(node, "dict")

    def visit_List(self, node: cst.List) -> None:
        self._container(node, "list")

    def visit_Set(self, node: cst.Set) -> None:
        self._container(node, "set")

    def visit_Tuple(self, node: cst.Tuple) -> None:
        if node.lpar and id(node) not in self.targets:
            self._container(node, "tuple")

    def _decorated(self, node: cst.FunctionDef | cst.ClassDef) -> None:
        for k, decorator in enumerate(node.decorators):
            if not added_part(self.py, self.old, decorator):
                continue
            name = short(code_of(self.py, decorator.decorator).strip(), 40)

            def drop(n: cst.CSTNode, k: int = k) -> cst.CSTNode:
                kept = list(n.decorators)  # type: ignore[attr-defined]
                gone = kept.pop(k)
                if k == 0 and kept:  # blank lines and comments above the dropped decorator stay
                    kept[0] = kept[0].with_changes(leading_lines=gone.leading_lines)
                return n.with_changes(decorators=kept)

            self.decorators.append((
                "drop_decorator", f"decorator `@{name}` dropped from `{node.name.value}` at {line_of(self.py, decorator)}",
                lambda node=node, drop=drop: self.py.replace(node, drop),
            ))  # fmt: skip

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._decorated(node)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._decorated(node)

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if self.skip or id(node) in self.regex_parts or "f" in node.prefix.lower() or not node.raw_value:
            return
        added = added_chars(node.raw_value, self.old.block(self.py.start(node)))
        if not added or not self.py.all_added(node):
            return
        where = line_of(self.py, node)
        body = node.raw_value
        for shifted in number_shifts(body, added):
            self.numbers.append((
                "string_number", f"string {short(node.value, 30)} -> {short(node.prefix + node.quote + shifted + node.quote, 30)} at {where}",
                lambda node=node, s=shifted: self.py.replace(node, lambda n: n.with_changes(value=n.prefix + n.quote + s + n.quote)),
            ))  # fmt: skip
        units = re.findall(r"\\.|.", body, re.DOTALL)
        if len(units) > 1:
            shorter = "".join(units[:-1])
            self.changed.append((
                "string_constant", f"string {short(node.value, 30)} -> {short(node.prefix + node.quote + shorter + node.quote, 30)} at {where}",
                lambda node=node, s=shorter: self.py.replace(node, lambda n: n.with_changes(value=n.prefix + n.quote + s + n.quote)),
            ))  # fmt: skip
        self.emptied.append((
            "string_constant", f"string {short(node.value, 30)} emptied at {where}",
            lambda node=node: self.py.replace(node, lambda n: n.with_changes(value=n.prefix + n.quote + n.quote)),
        ))  # fmt: skip


def number_shifts(body: str, added: set[int]) -> list[str]:
    """``body`` with one of its numbers one more or one less (never below 0, width kept), the numbers
    nearest to what gold added first: a bound written inside a string (``"[0-9]{1,6}"``, a width in a
    format, a version) that is off by one is a fix that passes tests whose inputs stay inside it."""
    runs = sorted(re.finditer(r"\d+", body), key=lambda m: min(abs(k - i) for k in added for i in range(m.start(), m.end())))
    out = []
    for m in runs:
        value = int(m.group())
        for v in (value + 1, value - 1):
            if v >= 0:
                out.append(body[: m.start()] + str(v).zfill(len(m.group()) if m.group().startswith("0") else 0) + body[m.end() :])
    return out


def data_mutants(py: PyFile) -> Iterator[Mutant]:
    """The data-level operators on one post-gold file, unevaluated (only the first few per operator
    are ever built): regex edits, dropped entries, dropped decorators, changed then emptied strings."""
    old = _Old(py)
    regexes = regex_literals(py)
    for literal in regexes:
        yield from _regex_mutants(py, old, literal)
    sites = _DataSites(py, old, regexes)
    py.module.visit(sites)
    yield from sites.entries
    yield from sites.decorators
    yield from sites.changed
    yield from sites.numbers
    yield from sites.emptied
