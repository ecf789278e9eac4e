"""mutmut 3's mutation operators (``mutmut.mutation.mutators``, used as a library: its operator table,
not its runner) on the lines gold added or changed, the sites spread over those lines (the first mutant
of every line before a second of any), so a line with many tokens does not take the whole budget.

Only gold's own code. A mutant of code gold left alone (the rest of a changed function, a caller's
call of it, a statement gold only re-indented into a new ``try``) breaks behaviour the buggy and gold
trees share: the differential engine then finds an input that tells it from gold on any suite that
does not run the whole library, and an adequate task looks too loose (measured on data/real: tomli's
``out = Output(...)`` -> ``out = None`` three lines below gold's change, and ``"\r\n"`` -> ``"XX\r\nXX"``
in the line gold wrapped in a ``try``, each passed a suite of one test file and was told from gold).

mutmut's own runner copies the tree and switches mutants through trampolines; here each mutant is one
plain file rewrite, graded like every other probe. Like mutmut's visitor, type annotations, decorators
and non-trivial parameter defaults are never mutated, nor the arguments of ``len`` and ``isinstance``;
nor is a ``raise`` statement (its message is all a mutant there could change that the grader sees).
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst
from mutmut.mutation.mutators import mutation_operators

from probes.data_ops.added import Mutant, _Old, added_part
from probes.pycst import PyFile, code_of, line_of, short, spread

NEVER_CALLS = ("len", "isinstance")


class _Sites(cst.CSTVisitor):
    def __init__(self, py: PyFile, lines: set[int]) -> None:
        super().__init__()
        self.py, self.lines, self.old = py, lines, _Old(py)
        self.sites: list[tuple[int, str, cst.CSTNode, cst.CSTNode]] = []  # line, operator, node, mutant

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, (cst.Annotation, cst.Decorator, cst.Raise)):
            return False  # a raise's message and arguments: no input tells them apart but the message
        if isinstance(node, cst.Param) and node.default and not isinstance(node.default, (cst.Name, cst.BaseNumber, cst.BaseString)):
            return False
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in NEVER_CALLS:
            return False
        if self.py.pos.get(node) is None:
            return True
        line = self.py.start(node)
        if line not in self.lines or not added_part(self.py, self.old, node):
            return True  # a part of the buggy tree's code that gold only moved or re-indented is no part of the fix
        for kind, operator in mutation_operators:
            if isinstance(node, kind):
                for mutant in operator(node):
                    self.sites.append((line, operator.__name__.removeprefix("operator_"), node, mutant))
        return True


def mutmut_mutants(py: PyFile) -> Iterator[Mutant]:
    """mutmut's mutants of ``py`` on the lines gold added or changed inside functions."""
    added = {line for a, b, _ in py.functions for line in range(a, b + 1)} & py.added
    finder = _Sites(py, added)
    for stmt in py.module.body:  # only the statements that hold a site are visited
        first, last = py.lines(stmt)
        if any(first <= line <= last for line in added):
            stmt.visit(finder)
    for _, name, node, mutant in spread(finder.sites, lambda s: s[0]):
        what = f"mutmut {name} at {line_of(py, node)}: `{short(code_of(py, node).strip(), 30)}` -> `{short(code_of(py, mutant).strip(), 30)}`"
        yield "mutmut", what, lambda node=node, mutant=mutant: py.replace(node, lambda n: mutant)
