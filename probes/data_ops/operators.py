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

import re
from collections.abc import Iterator, Sequence

import libcst as cst

from probes.data_ops.added import Mutant, _Old, added_chars, added_part
from probes.data_ops.regexes import _parts, _regex_mutants, regex_literals
from probes.mutants import is_docstring
from probes.pycst import PyFile, code_of, line_of, short

DATA_OPERATORS = ("regex_alternative", "regex_class", "regex_quantifier", "drop_entry", "drop_decorator", "string_constant",
                  "string_number")


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
