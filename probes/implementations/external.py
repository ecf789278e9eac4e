"""mutmut 3's mutation operators (``mutmut.mutation.mutators``, used as a library: its operator table,
not its runner) on the code a wrong fix would touch: first the lines gold added or changed, then the
lines of callers that call a function gold changed (how the tests reach the fix), then the rest of the
functions gold changed. Within each tier the sites are spread over the lines (the first mutant of every
line before a second of any), so a line with many tokens does not take the whole budget.

mutmut's own runner copies the tree and switches mutants through trampolines; here each mutant is one
plain file rewrite, graded like every other probe. Like mutmut's visitor, type annotations, decorators
and non-trivial parameter defaults are never mutated, nor the arguments of ``len`` and ``isinstance``;
nor is a ``raise`` statement (its message is all a mutant there could change that the grader sees).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator

import libcst as cst
from mutmut.mutation.mutators import mutation_operators

from probes.pycst import PyFile, code_of, line_of, short, spread, walk

Probe = tuple[str, str, Callable[[], "str | None"]]
NEVER_CALLS = ("len", "isinstance")


def _call_name(node: cst.Call) -> str:
    func = node.func
    return func.value if isinstance(func, cst.Name) else func.attr.value if isinstance(func, cst.Attribute) else ""


def changed_function_names(py: PyFile) -> set[str]:
    return {fn.name.value for fn in py.touched_functions()}


def caller_lines(py: PyFile, changed: Collection[str]) -> set[int]:
    """Lines of the calls, inside this file's functions, to a function named in ``changed``."""
    out: set[int] = set()
    for _, _, fn in py.functions:
        for node in walk(fn.body):
            if isinstance(node, cst.Call) and _call_name(node) in changed and py.pos.get(node) is not None:
                first, last = py.lines(node)
                out |= set(range(first, last + 1))
    return out


class _Sites(cst.CSTVisitor):
    def __init__(self, py: PyFile, tiers: list[set[int]]) -> None:
        super().__init__()
        self.py, self.tiers = py, tiers
        self.sites: list[tuple[int, int, str, cst.CSTNode, cst.CSTNode]] = []  # tier, line, operator, node, mutant

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
        tier = next((k for k, lines in enumerate(self.tiers) if line in lines), None)
        if tier is None:
            return True
        for kind, operator in mutation_operators:
            if isinstance(node, kind):
                for mutant in operator(node):
                    self.sites.append((tier, line, operator.__name__.removeprefix("operator_"), node, mutant))
        return True


def mutmut_mutants(py: PyFile, changed: Collection[str]) -> Iterator[Probe]:
    """mutmut's mutants of ``py`` on gold's added lines, then on calls to the ``changed`` functions (of
    every file gold touched), then on the rest of the functions gold changed in this file."""
    in_functions = {line for a, b, _ in py.functions for line in range(a, b + 1)}
    added = py.added & in_functions
    callers = caller_lines(py, changed) - added
    rest = {line for fn in py.touched_functions() for line in range(*_body_lines(py, fn))} - added - callers
    finder = _Sites(py, [added, callers, rest])
    wanted = added | callers | rest
    for stmt in py.module.body:  # only the statements that hold a site are visited
        first, last = py.lines(stmt)
        if any(first <= line <= last for line in wanted):
            stmt.visit(finder)
    ordered = spread([site for tier in range(3) for site in spread([s for s in finder.sites if s[0] == tier], lambda s: s[1])],
                     lambda s: s[0])  # the tiers taken in turn, so callers get mutants within a small budget
    for _, _, name, node, mutant in ordered:
        what = f"mutmut {name} at {line_of(py, node)}: `{short(code_of(py, node).strip(), 30)}` -> `{short(code_of(py, mutant).strip(), 30)}`"
        yield "mutmut", what, lambda node=node, mutant=mutant: py.replace(node, lambda n: mutant)


def _body_lines(py: PyFile, fn: cst.FunctionDef) -> tuple[int, int]:
    """The half-open line range of ``fn``'s body (its ``def`` line, signature and decorators left out)."""
    first, last = py.lines(fn.body)
    return first, last + 1
