"""Guards gold adds, written narrower: a numeric comparison that holds only on the tests' values
(``narrow_guard``), and a compound condition with one of its operands dropped (``drop_conjunct``).

A suite that tries ``n = -1`` only cannot tell ``if n < 0`` from ``if n == -1``, and a suite whose every
input meets both halves of ``if a and b`` cannot tell it from ``if a``. Only guards on lines gold added
are rewritten: the tests of an ``if``, ``elif``, ``while`` or conditional expression.
"""

from __future__ import annotations

import operator as op
import re
from collections.abc import Callable, Iterator, Sequence

import libcst as cst

from probes.data_ops.added import Mutant, _Old, added_part
from probes.pycst import PyFile, code_of, keep_parens, line_of, parens, short, spread

MAX_VALUES = 3  # test values one narrowed guard admits
_HOLDS: dict[type, Callable[[float, float], bool]] = {
    cst.LessThan: op.lt, cst.LessThanEqual: op.le, cst.GreaterThan: op.gt, cst.GreaterThanEqual: op.ge,
}  # fmt: skip
_MIRROR: dict[type, type] = {
    cst.LessThan: cst.GreaterThan, cst.GreaterThan: cst.LessThan,
    cst.LessThanEqual: cst.GreaterThanEqual, cst.GreaterThanEqual: cst.LessThanEqual,
}  # fmt: skip
_NUMBER = re.compile(r"-?\d+(\.\d+)?")


def numbers_in_tests(literals: Sequence[str]) -> list[float]:
    """The numbers among the tests' literals, in order of appearance."""
    found: dict[float, None] = {}
    for text in literals:
        if _NUMBER.fullmatch(text):
            found[float(text) if "." in text else int(text)] = None
    return list(found)


def _number(expr: cst.BaseExpression) -> float | None:
    if isinstance(expr, (cst.Integer, cst.Float)):
        return expr.evaluated_value
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        inner = _number(expr.expression)
        return None if inner is None else -inner
    return None


class _Guards(cst.CSTVisitor):
    """The tests of the guards on lines gold added."""

    def __init__(self, py: PyFile) -> None:
        super().__init__()
        self.py, self.old = py, _Old(py)
        self.tests: list[cst.BaseExpression] = []

    def _guard(self, test: cst.BaseExpression) -> None:
        if self.py.pos.get(test) is not None and added_part(self.py, self.old, test):  # not a guard gold re-indented
            self.tests.append(test)

    def visit_If(self, node: cst.If) -> None:
        self._guard(node.test)

    def visit_While(self, node: cst.While) -> None:
        self._guard(node.test)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._guard(node.test)


def _guard_tests(py: PyFile) -> list[cst.BaseExpression]:
    finder = _Guards(py)
    py.module.visit(finder)
    return finder.tests


def _inside(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    yield node
    for child in node.children:
        yield from _inside(child)


def narrow_guard(py: PyFile, literals: Sequence[str]) -> Iterator[Mutant]:
    """Each numeric comparison ``x < c`` in a guard gold added, as ``x == v`` (or ``x in (...)``) for the
    tests' numbers ``v`` it holds on; where none does, for the one value next to the bound it holds on
    (``n < 0`` -> ``n == -1``, ``n >= 5`` -> ``n == 5``)."""
    numbers = numbers_in_tests(literals)
    sites = []
    for test in _guard_tests(py):
        for node in _inside(test):
            if not isinstance(node, cst.Comparison) or len(node.comparisons) != 1:
                continue
            target = node.comparisons[0]
            kind = type(target.operator)
            if kind not in _HOLDS:
                continue
            left, right = node.left, target.comparator
            if _number(right) is None:
                if _number(left) is None:
                    continue
                left, right, kind = right, left, _MIRROR[kind]  # c < x is x > c
            bound = _number(right)
            values = [v for v in numbers if _HOLDS[kind](v, bound)][:MAX_VALUES]  # type: ignore[arg-type]
            if not values and isinstance(bound, int):
                values = [{cst.LessThan: bound - 1, cst.GreaterThan: bound + 1}.get(kind, bound)]
            if not values:
                continue
            subject = code_of(py, parens(left.with_changes(lpar=[], rpar=[]) if left.lpar else left)).strip()
            narrowed = f"{subject} == {values[0]!r}" if len(values) == 1 else f"{subject} in ({', '.join(map(repr, values))})"
            sites.append((node, narrowed))
    for node, narrowed in spread(sites, lambda site: py.start(site[0])):
        before = short(code_of(py, node).strip(), 40)
        yield "narrow_guard", f"guard `{before}` narrowed to `{short(narrowed, 40)}` at {line_of(py, node)}", (
            lambda node=node, narrowed=narrowed: py.replace(node, lambda n: keep_parens(n, cst.parse_expression(narrowed)))
        )


def _operands(node: cst.BaseExpression, kind: type) -> list[cst.BaseExpression]:
    """``a and b and c`` -> [a, b, c] (a parenthesised operand stays whole)."""
    if isinstance(node, cst.BooleanOperation) and isinstance(node.operator, kind) and not node.lpar:
        return [*_operands(node.left, kind), *_operands(node.right, kind)]
    return [node]


def drop_conjunct(py: PyFile) -> Iterator[Mutant]:
    """Each operand of an ``and`` / ``or`` chain in a guard gold added, dropped (the others kept)."""
    sites = []
    for test in _guard_tests(py):
        inner: set[int] = set()
        for node in _inside(test):
            if not isinstance(node, cst.BooleanOperation) or id(node) in inner:
                continue
            kind = type(node.operator)
            operands = _operands(node.with_changes(lpar=[], rpar=[]), kind)
            inner |= {id(n) for n in _inside(node) if isinstance(n, cst.BooleanOperation) and isinstance(n.operator, kind)
                      and not n.lpar}  # fmt: skip
            word = "and" if kind is cst.And else "or"
            for k, dropped in enumerate(operands):
                kept = f" {word} ".join(code_of(py, o).strip() for i, o in enumerate(operands) if i != k)
                sites.append((node, dropped, word, kept))
    for node, dropped, word, kept in spread(sites, lambda site: py.start(site[0])):
        what = f"`{word} {short(code_of(py, dropped).strip(), 40)}` dropped from the guard at {line_of(py, node)}"
        yield "drop_conjunct", what, (
            lambda node=node, kept=kept: py.replace(node, lambda n: keep_parens(n, cst.parse_expression(kept)))
        )
