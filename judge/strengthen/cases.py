"""Where a candidate goes in its test file: a new case of its test's literal parametrize list, or a new function."""

from __future__ import annotations

import ast
import builtins
import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

from harness.pyast import literal_eval, parse
from harness.records import DistinguishingInput
from judge.strengthen.writing import Candidate, _dotted, _imports_only
from probes.special_case import find_def


@dataclass(frozen=True)
class Parametrize:
    """A test's one ``parametrize`` decorator, when its argnames and lists are written out literally."""

    argnames: tuple[str, ...]
    values: ast.List | ast.Tuple
    ids: ast.List | ast.Tuple | None
    param: str  # how the file spells ``pytest.param``


def parametrize_of(fn: ast.FunctionDef | ast.AsyncFunctionDef, source: str) -> Parametrize | None:
    """The test's parametrize decorator; None when it has none, several (a product of cases), indirect
    argnames (fixtures), or argnames, argvalues or ids that are not literal."""
    marks = [d for d in fn.decorator_list if isinstance(d, ast.Call) and _dotted(d.func).endswith("mark.parametrize")]
    if len(marks) != 1:
        return None
    (mark,) = marks
    keywords = {k.arg: k.value for k in mark.keywords}
    args = [*mark.args, *(keywords[k] for k in ("argnames", "argvalues") if k in keywords)]
    if len(args) != 2 or "indirect" in keywords or not isinstance(args[1], (ast.List, ast.Tuple)):
        return None
    names, values = args
    if isinstance(names, ast.Constant) and isinstance(names.value, str):
        argnames = tuple(n.strip() for n in names.value.split(",") if n.strip())
    elif isinstance(names, (ast.List, ast.Tuple)) and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in names.elts):
        argnames = tuple(e.value for e in names.elts)  # type: ignore[attr-defined]
    else:
        return None
    ids = keywords.get("ids")
    if ids is not None and not isinstance(ids, (ast.List, ast.Tuple)):
        ids = None  # a function of the values: the case's own id wins over it
    prefix = _dotted(mark.func).removesuffix("mark.parametrize")
    param = f"{prefix}param" if prefix else "pytest.param" if re.search(r"^import pytest\b", source, re.MULTILINE) else ""
    if not param or not argnames:
        return None
    return Parametrize(argnames, values, ids, param)


def _same_callee(pattern: ast.expr, concrete: ast.expr) -> bool:
    """Two spellings of one callee: ``mi.tail`` and ``more_itertools.tail`` both end in ``tail``."""
    last = [n.attr if isinstance(n, ast.Attribute) else n.id if isinstance(n, ast.Name) else None for n in (pattern, concrete)]
    return last[0] is not None and last[0] == last[1]


def unify(pattern: ast.AST, concrete: ast.AST, holes: frozenset[str], bound: dict[str, str]) -> bool:
    """Whether ``concrete`` is ``pattern`` with each hole (a name) filled by one expression, the same
    one wherever the hole occurs; ``bound`` collects each filled hole's source."""
    if isinstance(pattern, ast.Name) and pattern.id in holes:
        text = ast.unparse(concrete)
        return bound.setdefault(pattern.id, text) == text
    if type(pattern) is not type(concrete):
        return False
    if isinstance(pattern, ast.Call) and isinstance(concrete, ast.Call):
        same = _same_callee(pattern.func, concrete.func) or unify(pattern.func, concrete.func, holes, bound)
        if not same or len(pattern.args) != len(concrete.args) or [k.arg for k in pattern.keywords] != [k.arg for k in concrete.keywords]:
            return False
        pairs = [*zip(pattern.args, concrete.args), *((a.value, b.value) for a, b in zip(pattern.keywords, concrete.keywords))]
        return all(unify(a, b, holes, bound) for a, b in pairs)
    for name, value in ast.iter_fields(pattern):
        if name == "ctx":
            continue
        other = getattr(concrete, name, None)
        if isinstance(value, list):
            if not isinstance(other, list) or len(value) != len(other):
                return False
            if not all(unify(a, b, holes, bound) if isinstance(a, ast.AST) else a == b for a, b in zip(value, other)):
                return False
        elif isinstance(value, ast.AST):
            if not isinstance(other, ast.AST) or not unify(value, other, holes, bound):
                return False
        elif value != other:
            return False
    return True


def _compared(fn: ast.AST, node: ast.AST) -> list[ast.expr]:
    """What the test compares ``node`` (or a name assigned from it) with for equality: ``assert node == x``,
    ``self.assertEqual(node, x)``, ``result = node`` then ``assert result == x``."""
    names = {t.id for n in ast.walk(fn) if isinstance(n, ast.Assign) and n.value is node for t in n.targets if isinstance(t, ast.Name)}

    def same(e: ast.expr) -> bool:
        return e is node or (isinstance(e, ast.Name) and e.id in names)

    found: list[ast.expr] = []
    for n in ast.walk(fn):
        if isinstance(n, ast.Compare) and len(n.ops) == 1 and isinstance(n.ops[0], ast.Eq):
            pair = [n.left, n.comparators[0]]
        elif isinstance(n, ast.Call) and _dotted(n.func) in ("self.assertEqual", "self.assertEquals") and len(n.args) >= 2:
            pair = n.args[:2]
        else:
            continue
        found += [b for a, b in (pair, pair[::-1]) if same(a)]
    return found


def _equal_literals(a: str, b: str) -> bool:
    try:
        return bool(literal_eval(a) == literal_eval(b))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False


def _raises_holes(fn: ast.AST, node: ast.AST) -> list[ast.expr]:
    """The exception expressions of the ``pytest.raises`` / ``assertRaises`` blocks ``node`` runs in."""
    found = []
    for n in ast.walk(fn):
        if isinstance(n, (ast.With, ast.AsyncWith)) and any(node in ast.walk(s) for s in n.body):
            for item in n.items:
                call = item.context_expr
                if isinstance(call, ast.Call) and call.args and _dotted(call.func).endswith(("raises", "assertRaises")):
                    found.append(call.args[0])
    return found


def case_values(fn: ast.FunctionDef | ast.AsyncFunctionDef, spec: Parametrize, d: DistinguishingInput, module_names: set[str]) -> list[str] | None:
    """The source of each argname's value in a new case of ``fn`` that runs the distinguishing input:
    the test's call with the argnames as holes must match the input's call; the argname the result is
    compared with gets gold's value, and one naming the expected exception gets gold's exception when
    the module (or builtins) binds that name. None when an argname stays unfilled or the input does not fit."""
    try:
        concrete = parse(d.call).body
    except SyntaxError:
        return None
    if len(concrete) != 1 or not isinstance(concrete[0], ast.Expr) or not _imports_only(d.setup):
        return None  # statements before the call would need a place in the test's body (imports: it has its own)
    holes = frozenset(spec.argnames)
    call = as_operator(concrete[0].value)
    for node in ast.walk(ast.Module(body=fn.body, type_ignores=[])):
        bound: dict[str, str] = {}
        if isinstance(node, ast.Name) or not isinstance(node, ast.expr) or not unify(node, call, holes, bound) or not bound:
            continue  # a bare argname would take the whole call as its value, run at collection
        # the test's own check must state gold's behaviour: a hole takes it, a fixed value must be it
        if d.gold.raised:
            name = d.gold.raised.rpartition(".")[2]
            excs = _raises_holes(fn, node)
            for exc in excs:
                if isinstance(exc, ast.Name) and exc.id in holes and (name in module_names or hasattr(builtins, name)):
                    bound.setdefault(exc.id, name)
            if not any(_dotted(e).rpartition(".")[2] == name or (isinstance(e, ast.Name) and bound.get(e.id) == name) for e in excs):
                continue
        else:
            if _raises_holes(fn, node) or not d.literal or d.gold.value == d.other.value:
                continue  # the test's checks read the value: a difference in print alone escapes them
            checks = _compared(fn, node)
            for other in checks:
                if isinstance(other, ast.Name) and other.id in holes:
                    bound.setdefault(other.id, d.literal)
            if not checks or not all(isinstance(o, ast.Name) and bound.get(o.id) == d.literal or _equal_literals(ast.unparse(o), d.literal)
                                     for o in checks):  # fmt: skip
                continue
        if set(bound) == holes:
            return [bound[n] for n in spec.argnames]
    return None


_DUNDER_OPS = {"__add__": ast.Add, "__sub__": ast.Sub, "__mul__": ast.Mult, "__truediv__": ast.Div, "__floordiv__": ast.FloorDiv,
               "__mod__": ast.Mod, "__pow__": ast.Pow, "__matmul__": ast.MatMult, "__and__": ast.BitAnd, "__or__": ast.BitOr,
               "__xor__": ast.BitXor, "__lshift__": ast.LShift, "__rshift__": ast.RShift}  # fmt: skip


def as_operator(node: ast.expr) -> ast.expr:
    """``Markup.__mod__(x, y)`` (how the engine states a call of an operator) as the test writes it,
    ``x % y``; any other expression as it is."""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _DUNDER_OPS
            and len(node.args) == 2 and not node.keywords):  # fmt: skip
        return ast.BinOp(left=node.args[0], op=_DUNDER_OPS[node.func.attr](), right=node.args[1])
    return node


def _module_names(tree: ast.Module) -> set[str]:
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).partition(".")[0] for a in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return names


def case_code(spec: Parametrize, values: Sequence[str], case: str) -> str:
    return f"{spec.param}({', '.join(values)}, id={case!r})"


def _char(lines: list[str], lineno: int, col: int) -> int:
    """The offset in the whole text of an AST position (``col`` counts UTF-8 bytes)."""
    return sum(len(line) for line in lines[: lineno - 1]) + len(lines[lineno - 1].encode()[:col].decode())


def _append_entry(source: str, seq: ast.List | ast.Tuple, entry: str) -> str:
    """``source`` with ``entry`` as the last element of the list ``seq``, in its layout: one entry a
    line where the closing bracket has a line of its own, else after the last entry on its line."""
    lines = source.splitlines(keepends=True)
    end = _char(lines, seq.end_lineno or 1, seq.end_col_offset or 0) - 1  # the closing bracket
    if not seq.elts:
        return source[:end] + entry + ("," if isinstance(seq, ast.Tuple) else "") + source[end:]
    last = seq.elts[-1]
    at = _char(lines, last.end_lineno or 1, last.end_col_offset or 0)
    while source[at] in " \t":  # a tuple entry's position covers its parentheses
        at += 1
    trailing = source[at] == ","
    if (last.end_lineno or 0) == (seq.end_lineno or 0):
        return source[:at] + f", {entry}" + source[at:]
    first = lines[last.lineno - 1]
    indent = first[: len(first) - len(first.lstrip())]
    if trailing:
        return source[: at + 1] + f"\n{indent}{entry}," + source[at + 1 :]
    return source[:at] + f",\n{indent}{entry}" + source[at:]


def add_case(source: str, parts: Sequence[str], code: str, case: str) -> str:
    """``source`` with ``code`` appended to the parametrize list of the test ``parts`` names (and
    ``case`` to its literal ids list, which pytest wants as long as the cases)."""
    tree = parse(source)
    fn = find_def(tree, parts)
    spec = parametrize_of(fn, source) if fn is not None else None
    if spec is None:
        raise ValueError(f"{'::'.join(parts)} has no literal parametrize list")
    if spec.ids is None:
        return _append_entry(source, spec.values, code)
    # the later list first, so the earlier one's positions still hold
    first, second = sorted([(spec.values, code), (spec.ids, repr(case))], key=lambda p: (p[0].lineno, p[0].col_offset))
    return _append_entry(_append_entry(source, second[0], second[1]), first[0], first[1])


def insert_test(source: str, code: str, cls: str | None) -> str:
    """``source`` with the test function added at the end of the module, or of class ``cls``."""
    if cls is None:
        return source.rstrip("\n") + "\n\n\n" + code
    lines = source.splitlines(keepends=True)
    node = next(n for n in parse(source).body if isinstance(n, ast.ClassDef) and n.name == cls)
    indent = " " * node.body[0].col_offset
    end = node.end_lineno or len(lines)
    block = "\n" + textwrap.indent(code, indent)
    if end and not lines[end - 1].endswith("\n"):
        block = "\n" + block
    return "".join(lines[:end]) + block + "".join(lines[end:])


def place(source: str, cand: Candidate) -> str:
    """``source`` with the candidate in it: a new case of its test, or a new function."""
    if cand.case:
        return add_case(source, [*([cand.cls] if cand.cls else []), cand.name], cand.code, cand.case)
    return insert_test(source, cand.code, cand.cls)
