"""Calls and values gold's new code relies on, left out or pinned: a normalising call gold adds left
out (``drop_normaliser``: ``abs(x)`` -> ``x``, ``name.lower()`` -> ``name``), and a parameter gold's new
code reads replaced by the one literal the FAIL_TO_PASS tests pass for it (``constant_for_variable``).

A suite whose inputs are already normal (positive, lower case, sorted, of the right type) cannot tell
the normalising call from its absence; a suite that calls the changed function with one value of a
parameter cannot tell a fix that hard-codes that value from one that reads it.

Limits: the tests' values are read statically from calls in the FAIL_TO_PASS test functions that name
the changed function (a call through a facade of another name is not seen); a parameter the function
rebinds is never replaced.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping, Sequence

import libcst as cst

from harness.pyast import literal_eval, parse
from probes.data_ops.added import Mutant, _Old, added_part
from probes.pycst import PyFile, code_of, keep_parens, line_of, parens, short, spread, walk
from probes.special_case import find_def

# functions whose one argument a wrong fix would pass on as it is; not ``float``, which mostly widens an
# int to an equal value of another type: leaving it out changes a representation, not what the code does
NORMALISING_FUNCTIONS = {"abs", "str", "int", "bool", "bytes", "list", "tuple", "set", "frozenset", "dict",
                         "sorted", "repr", "round", "normpath", "abspath", "realpath", "normcase", "fspath", "expanduser"}  # fmt: skip
# methods whose receiver a wrong fix would use as it is
NORMALISING_METHODS = {"lower", "upper", "casefold", "strip", "lstrip", "rstrip", "title", "capitalize", "expanduser",
                       "resolve", "absolute", "copy", "normalize"}  # fmt: skip
UNKNOWN = object()  # an argument the tests compute: no literal value


def _normalised(node: cst.Call) -> cst.BaseExpression | None:
    """What ``node`` normalises (its argument, or its receiver), when it is a normalising call."""
    func = node.func
    positional = [a.value for a in node.args if a.keyword is None]
    if any(a.star for a in node.args):
        return None
    one = positional[0] if len(positional) == 1 else None
    if isinstance(func, cst.Name):
        return one if func.value in NORMALISING_FUNCTIONS else None
    if not isinstance(func, cst.Attribute):
        return None
    name = func.attr.value
    if name in NORMALISING_METHODS:  # p.expanduser(), s.strip("x"); but str.lower(s), os.path.expanduser(p)
        by_name = one is not None and (name in NORMALISING_FUNCTIONS or (isinstance(func.value, cst.Name) and func.value.value in ("str", "bytes")))
        return one if by_name else func.value
    return one if name in NORMALISING_FUNCTIONS else None


class _Calls(cst.CSTVisitor):
    def __init__(self, py: PyFile) -> None:
        super().__init__()
        self.py, self.old = py, _Old(py)
        self.found: list[tuple[cst.Call, cst.BaseExpression]] = []

    def visit_Call(self, node: cst.Call) -> None:
        inner = _normalised(node)
        if inner is not None and self.py.pos.get(node) is not None and added_part(self.py, self.old, node):
            self.found.append((node, inner))


def drop_normaliser(py: PyFile) -> Iterator[Mutant]:
    """Each normalising call gold added, replaced by what it normalises."""
    finder = _Calls(py)
    py.module.visit(finder)
    for node, inner in spread(finder.found, lambda site: py.start(site[0])):
        what = f"`{short(code_of(py, node).strip(), 40)}` -> `{short(code_of(py, inner).strip(), 30)}` at {line_of(py, node)}"
        yield "drop_normaliser", what, (
            lambda node=node, inner=inner: py.replace(node, lambda n: keep_parens(n, parens(inner)))
        )


def calls_in_tests(sources: Mapping[str, str], test_ids: Sequence[str]) -> dict[str, list[tuple[list[object], dict[str, object]]]]:
    """Per callee name, the (positional, keyword) argument values of each call the FAIL_TO_PASS test
    functions make to it (UNKNOWN where an argument is not a literal)."""
    out: dict[str, list[tuple[list[object], dict[str, object]]]] = {}
    for test_id in test_ids:
        file, _, rest = test_id.partition("::")
        if not rest or file not in sources:
            continue
        try:
            fn = find_def(parse(sources[file]), [p.split("[", 1)[0] for p in rest.split("::")])
        except SyntaxError:
            continue
        for node in ast.walk(fn) if fn is not None else ():
            if not isinstance(node, ast.Call):
                continue
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            if name and not any(isinstance(a, ast.Starred) for a in node.args) and all(k.arg for k in node.keywords):
                out.setdefault(name, []).append(([_literal(a) for a in node.args], {k.arg: _literal(k.value) for k in node.keywords}))
    return out


def _literal(node: ast.expr) -> object:
    try:
        value = literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return UNKNOWN
    return value if isinstance(value, (int, float, str, bytes)) and len(repr(value)) <= 200 else UNKNOWN


def _tested_value(fn: ast.FunctionDef | ast.AsyncFunctionDef, calls: list[tuple[list[object], dict[str, object]]]) -> dict[str, object]:
    """Each parameter of ``fn`` that every test call passes, and passes the same literal."""
    a = fn.args
    params = [p.arg for p in [*a.posonlyargs, *a.args]]
    method = bool(params) and params[0] in ("self", "cls")
    positional = params[1:] if method else params
    seen: dict[str, set[object]] = {}
    for args, kwargs in calls:
        bound = dict(zip(positional, args))
        bound.update({k: v for k, v in kwargs.items() if k in params})
        for name in dict.fromkeys([*positional, *(p.arg for p in a.kwonlyargs)]):  # in order: generation is deterministic
            seen.setdefault(name, set()).add(bound.get(name, UNKNOWN))
    stored = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    return {name: next(iter(values)) for name, values in seen.items()
            if len(values) == 1 and UNKNOWN not in values and name not in stored}  # fmt: skip


def constant_for_variable(py: PyFile, calls: Mapping[str, list[tuple[list[object], dict[str, object]]]]) -> Iterator[Mutant]:
    """In each function gold changed that the tests call, every read on gold's added lines of a parameter
    the tests always pass as one literal, replaced by that literal."""
    try:
        tree = parse(py.new)
    except SyntaxError:
        return
    defs = {n.lineno: n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for fn in py.touched_functions():
        node = defs.get(py.lines(fn.name)[0])
        if node is None or fn.name.value not in calls:
            continue
        for name, value in _tested_value(node, calls[fn.name.value]).items():
            reads = _reads(py, fn, name)
            if not reads:
                continue
            literal = repr(value)
            yield "constant_for_variable", f"`{name}` read as the tests' {short(literal, 30)} in `{fn.name.value}` at {line_of(py, reads[0])}", (
                lambda reads=reads, literal=literal: py.replace_many({id(r): lambda n, literal=literal: cst.parse_expression(literal)
                                                                      for r in reads})
            )  # fmt: skip


def _reads(py: PyFile, fn: cst.FunctionDef, name: str) -> list[cst.Name]:
    """The loads of ``name`` on lines gold added in ``fn`` (not attribute names, keywords or parameters)."""
    not_reads = set()
    for node in walk(fn.body):
        if isinstance(node, cst.Attribute):
            not_reads.add(id(node.attr))
        elif isinstance(node, cst.Arg) and node.keyword is not None:
            not_reads.add(id(node.keyword))
        elif isinstance(node, (cst.Param, cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return []  # a nested scope may bind the name anew: leave the function alone
    return [n for n in walk(fn.body) if isinstance(n, cst.Name) and n.value == name and id(n) not in not_reads
            and py.pos.get(n) is not None and py.start(n) in py.added]  # fmt: skip
