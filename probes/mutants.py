"""Plausible-but-wrong operators on the lines gold added (SWE-smith / mutmut / Kali-style): comparison,
arithmetic, boolean and constant swaps, a negated ``if``, an early ``return None`` at the start of a
block gold added, deletion of a statement gold added, and three partial fixes that pass a suite whose
inputs are all of one shape: a recursive call gold added that stops one level down (``shallow_recursion``:
the call is skipped where its argument meets the ``if`` that led to it, so nested input one level deeper
than the tests' is left as it was), a conversion gold added skipped for a value already of a similar type
(``skip_conversion``: ``list(x)`` returns a tuple or the caller's own list as it is) and an argument of an
abstract mapping or sequence type copied into a plain one before use (``concrete_argument``: a
``defaultdict``'s default or an iterator's laziness is lost)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import libcst as cst

from probes.pycst import PyFile, code_of, line_of, negate, short, spread, walk

_COMPARE_SWAP: dict[type, Callable[[cst.BaseCompOp], cst.BaseCompOp]] = {
    cst.LessThan: lambda o: cst.LessThanEqual(whitespace_before=o.whitespace_before, whitespace_after=o.whitespace_after),
    cst.LessThanEqual: lambda o: cst.LessThan(whitespace_before=o.whitespace_before, whitespace_after=o.whitespace_after),
    cst.GreaterThan: lambda o: cst.GreaterThanEqual(whitespace_before=o.whitespace_before, whitespace_after=o.whitespace_after),
    cst.GreaterThanEqual: lambda o: cst.GreaterThan(whitespace_before=o.whitespace_before, whitespace_after=o.whitespace_after),
    cst.Equal: lambda o: cst.NotEqual(whitespace_before=o.whitespace_before, whitespace_after=o.whitespace_after),
    cst.NotEqual: lambda o: cst.Equal(whitespace_before=o.whitespace_before, whitespace_after=o.whitespace_after),
    cst.In: lambda o: cst.NotIn(whitespace_before=o.whitespace_before, whitespace_after=o.whitespace_after),
    cst.NotIn: lambda o: cst.In(whitespace_before=o.whitespace_before, whitespace_after=o.whitespace_after),
    cst.Is: lambda o: cst.IsNot(whitespace_before=o.whitespace_before, whitespace_after=o.whitespace_after),
    cst.IsNot: lambda o: cst.Is(whitespace_before=o.whitespace_before, whitespace_after=o.whitespace_after),
}  # fmt: skip
_ARITH_SWAP: dict[type, type] = {
    cst.Add: cst.Subtract, cst.Subtract: cst.Add, cst.Multiply: cst.FloorDivide, cst.Divide: cst.Multiply,
    cst.FloorDivide: cst.Divide, cst.Modulo: cst.FloorDivide, cst.Power: cst.Multiply,
    cst.LeftShift: cst.RightShift, cst.RightShift: cst.LeftShift, cst.BitAnd: cst.BitOr, cst.BitOr: cst.BitAnd,
}  # fmt: skip
_AUG_SWAP: dict[type, type] = {
    cst.AddAssign: cst.SubtractAssign, cst.SubtractAssign: cst.AddAssign, cst.MultiplyAssign: cst.FloorDivideAssign,
    cst.DivideAssign: cst.MultiplyAssign, cst.FloorDivideAssign: cst.DivideAssign,
}  # fmt: skip


# a conversion gold added, and the types a wrong fix would let through unconverted
_SIMILAR_TYPES: dict[str, tuple[str, ...]] = {
    "list": ("list", "tuple"), "tuple": ("list", "tuple"), "set": ("set", "frozenset"), "frozenset": ("set", "frozenset"),
    "dict": ("dict",),
}  # fmt: skip
# an abstract parameter annotation, and the plain type a wrong fix copies the argument into
_CONCRETE: dict[str, str] = {
    "Mapping": "dict", "MutableMapping": "dict", "Iterable": "list", "Iterator": "list", "Sequence": "list",
    "Collection": "list",
}  # fmt: skip


def _types(names: tuple[str, ...]) -> str:
    return names[0] if len(names) == 1 else f"({', '.join(names)})"


def _last_name(expr: cst.BaseExpression) -> str:
    """``t.Mapping[str, t.Any]`` -> ``Mapping``."""
    if isinstance(expr, cst.Subscript):
        expr = expr.value
    if isinstance(expr, cst.Attribute):
        return expr.attr.value
    return expr.value if isinstance(expr, cst.Name) else ""


class _Substitute(cst.CSTTransformer):
    def __init__(self, name: str, value: cst.BaseExpression) -> None:
        super().__init__()
        self.name, self.value = name, value

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
        return self.value if original_node.value == self.name else updated_node

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute) -> cst.Attribute:
        return updated_node.with_changes(attr=original_node.attr)  # ``x.name`` is no use of ``name``


def _op(cls: type, old: cst.CSTNode) -> cst.CSTNode:
    return cls(whitespace_before=old.whitespace_before, whitespace_after=old.whitespace_after)  # type: ignore[attr-defined]


_Site = tuple[str, str, cst.CSTNode, Callable[[cst.CSTNode], object]]  # operator, description, node, rewrite


class _MutationSites(cst.CSTVisitor):
    """Where the operator mutants apply: only on lines gold added."""

    def __init__(self, py: PyFile) -> None:
        super().__init__()
        self.py = py
        self.sites: list[_Site] = []
        self.depth = 0  # function nesting
        self.annotations = 0  # inside a type annotation: never mutated
        self.functions: list[cst.FunctionDef] = []
        self.ifs: list[cst.If] = []

    def _on_added(self, node: cst.CSTNode) -> bool:
        return not self.annotations and self.py.pos.get(node) is not None and self.py.start(node) in self.py.added

    def visit_Annotation(self, node: cst.Annotation) -> None:
        self.annotations += 1

    def leave_Annotation(self, original_node: cst.Annotation) -> None:
        self.annotations -= 1

    def _add(self, operator: str, node: cst.CSTNode, what: str, fn: Callable[[cst.CSTNode], object]) -> None:
        self.sites.append((operator, f"{what} at {line_of(self.py, node)}", node, fn))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if self._on_added(node) and isinstance(node.body, cst.IndentedBlock):
            self._early_return(node, f"def {node.name.value}")
        self.depth += 1
        self.functions.append(node)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.depth -= 1
        self.functions.pop()

    def leave_If(self, original_node: cst.If) -> None:
        self.ifs.pop()

    def visit_Call(self, node: cst.Call) -> None:
        if not self.depth or not self._on_added(node):
            return
        self._shallow_recursion(node)
        self._skip_conversion(node)
        self._concrete_arguments(node)

    def _shallow_recursion(self, node: cst.Call) -> None:
        fn = self.functions[-1]
        func = node.func
        recursive = (isinstance(func, cst.Name) and func.value == fn.name.value) or (
            isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)
            and func.value.value in ("self", "cls") and func.attr.value == fn.name.value
        )  # fmt: skip
        params = [p.name.value for p in fn.params.params if p.name.value not in ("self", "cls")]
        if not recursive or not params or not node.args or node.args[0].star or node.args[0].keyword:
            return
        line = self.py.start(node)
        guard = next((i for i in reversed(self.ifs) if self.py.start(i.body) <= line <= self.py.lines(i.body)[1]
                      and self.py.start(i) >= self.py.start(fn)), None)  # fmt: skip
        if guard is None or params[0] not in {n.value for n in walk(guard.test) if isinstance(n, cst.Name)}:
            return
        arg = node.args[0].value
        test = cst.Module([]).code_for_node(guard.test.visit(_Substitute(params[0], arg)))
        call, value = code_of(self.py, node), cst.Module([]).code_for_node(arg)
        self._add("shallow_recursion", node, f"`{short(call, 40)}` skipped where `{short(test, 40)}`",
                  lambda n, value=value, test=test: cst.parse_expression(
                      f"({value} if {test} else {cst.Module([]).code_for_node(n)})"))  # fmt: skip

    def _skip_conversion(self, node: cst.Call) -> None:
        func = node.func
        similar = _SIMILAR_TYPES.get(func.value) if isinstance(func, cst.Name) else None
        if similar is None or len(node.args) != 1 or node.args[0].star or node.args[0].keyword:
            return
        if not isinstance(node.args[0].value, (cst.Name, cst.Attribute)):
            return  # a value computed right there (sorted(...), d.values()) is never of the type already
        value = cst.Module([]).code_for_node(node.args[0].value)
        self._add("skip_conversion", node, f"`{short(code_of(self.py, node), 40)}` kept as it is for a {' or '.join(similar)}",
                  lambda n, value=value, similar=similar: cst.parse_expression(
                      f"({value} if isinstance({value}, {_types(similar)}) else {cst.Module([]).code_for_node(n)})"))  # fmt: skip

    def _concrete_arguments(self, node: cst.Call) -> None:
        fn = self.functions[-1]
        abstract = {p.name.value: _CONCRETE[_last_name(p.annotation.annotation)] for p in fn.params.params
                    if p.annotation is not None and _last_name(p.annotation.annotation) in _CONCRETE}  # fmt: skip
        for k, arg in enumerate(node.args):
            if isinstance(arg.value, cst.Name) and arg.value.value in abstract and arg.star != "*":
                concrete = abstract[arg.value.value]
                self._add("concrete_argument", node, f"`{arg.value.value}` passed as {concrete}({arg.value.value})",
                          lambda n, k=k, concrete=concrete: n.with_changes(args=[
                              a.with_changes(value=cst.Call(cst.Name(concrete), [cst.Arg(a.value)])) if i == k else a
                              for i, a in enumerate(n.args)]))  # fmt: skip

    def visit_ComparisonTarget(self, node: cst.ComparisonTarget) -> None:
        swap = _COMPARE_SWAP.get(type(node.operator))
        if swap and self._on_added(node.operator):
            before, after = code_of(self.py, node.operator).strip(), code_of(self.py, swap(node.operator)).strip()
            self._add("mutate_compare", node, f"`{before}` -> `{after}`",
                      lambda n, swap=swap: n.with_changes(operator=swap(n.operator)))  # fmt: skip

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        new = _ARITH_SWAP.get(type(node.operator))
        if not new or not self._on_added(node.operator):
            return
        if isinstance(node.left, cst.BaseString) or isinstance(node.right, cst.BaseString):
            return  # string concatenation or %-formatting: the mutant is a TypeError, not a plausible fix
        self._add("mutate_arith", node, f"`{code_of(self.py, node.operator).strip()}` -> `{code_of(self.py, _op(new, node.operator)).strip()}`",
                  lambda n, new=new: n.with_changes(operator=_op(new, n.operator)))  # fmt: skip

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        new = _AUG_SWAP.get(type(node.operator))
        if new and self._on_added(node.operator):
            self._add("mutate_arith", node, f"`{code_of(self.py, node.operator).strip()}` -> `{code_of(self.py, _op(new, node.operator)).strip()}`",
                      lambda n, new=new: n.with_changes(operator=_op(new, n.operator)))  # fmt: skip

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        if self._on_added(node.operator):
            new = cst.Or if isinstance(node.operator, cst.And) else cst.And
            self._add("mutate_logic", node, f"`{code_of(self.py, node.operator).strip()}` -> `{new.__name__.lower()}`",
                      lambda n, new=new: n.with_changes(operator=_op(new, n.operator)))  # fmt: skip

    def visit_Integer(self, node: cst.Integer) -> None:
        if not self._on_added(node):
            return
        try:
            value = int(node.value, 0)
        except ValueError:
            return
        for delta in (1, -1):
            if value + delta >= 0:
                self._add("mutate_constant", node, f"{node.value} -> {value + delta}",
                          lambda n, v=value + delta: n.with_changes(value=str(v)))  # fmt: skip

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in ("True", "False") and self._on_added(node):
            flipped = "False" if node.value == "True" else "True"
            self._add("mutate_constant", node, f"{node.value} -> {flipped}", lambda n, f=flipped: n.with_changes(value=f))

    def visit_If(self, node: cst.If) -> None:
        self.ifs.append(node)
        if self._on_added(node.test):
            self._add("negate_if", node, f"`if {short(code_of(self.py, node.test))}` negated",
                      lambda n: n.with_changes(test=negate(n.test)))  # fmt: skip
        if self.depth and self._on_added(node):
            self._early_return(node, "if")

    def visit_For(self, node: cst.For) -> None:
        if self.depth and self._on_added(node):
            self._early_return(node, "for")

    def visit_While(self, node: cst.While) -> None:
        if self.depth and self._on_added(node):
            self._early_return(node, "while")

    def visit_With(self, node: cst.With) -> None:
        if self.depth and self._on_added(node):
            self._early_return(node, "with")

    def _early_return(self, node: cst.CSTNode, what: str) -> None:
        body = node.body  # type: ignore[attr-defined]
        stmts = list(body.body)
        skip = 1 if isinstance(node, cst.FunctionDef) and is_docstring(stmts[0] if stmts else None) else 0
        if len(stmts) > skip and _is_return(stmts[skip]):
            return
        ret = cst.Return(value=cst.Name("None"))

        def rewrite(n: cst.CSTNode, skip: int = skip) -> cst.CSTNode:
            b = n.body  # type: ignore[attr-defined]
            inner = list(b.body)
            stmt = cst.SimpleStatementLine([ret]) if isinstance(b, cst.IndentedBlock) else ret
            return n.with_changes(body=b.with_changes(body=[*inner[:skip], stmt, *inner[skip:]]))

        self._add("early_return", node, f"`return None` at the start of the `{what}` block", rewrite)

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        if not self.depth:
            return
        for i, stmt in enumerate(node.body):
            if not self.py.all_added(stmt) or is_docstring(stmt) or not _deletable(stmt):
                continue
            alone = len(node.body) == 1 or (len(node.body) == 2 and i == 1 and is_docstring(node.body[0]))
            text = code_of(self.py, stmt.with_changes(leading_lines=[])).strip()
            what = short(text.splitlines()[0] if text else "")

            def rewrite(n: cst.CSTNode, alone: bool = alone) -> object:
                if alone:
                    return cst.SimpleStatementLine([cst.Pass()], leading_lines=n.leading_lines)  # type: ignore[attr-defined]
                return cst.RemovalSentinel.REMOVE

            self._add("delete_statement", stmt, f"deleted `{what}`", rewrite)


def is_docstring(stmt: cst.CSTNode | None) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _is_return(stmt: cst.CSTNode) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and any(isinstance(s, cst.Return) for s in stmt.body)


def _deletable(stmt: cst.CSTNode) -> bool:
    if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
        return False
    if isinstance(stmt, cst.SimpleStatementLine):
        return not all(isinstance(s, (cst.Pass, cst.Import, cst.ImportFrom, cst.Global, cst.Nonlocal)) for s in stmt.body)
    return True


def mutants(py: PyFile) -> Iterator[tuple[str, str, Callable[[], str | None]]]:
    """Each site with its rewrite, unevaluated: only the first few per operator are ever built, so each
    operator's sites come spread over the lines they sit on."""
    finder = _MutationSites(py)
    py.wrapper.visit(finder)
    for operator, description, node, fn in spread(finder.sites, lambda site: (site[0], py.start(site[2]))):
        yield operator, description, lambda node=node, fn=fn: py.replace(node, fn)
