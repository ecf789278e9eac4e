"""FAIL_TO_PASS tests read as programs: their statements to run and the assert operands to observe."""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence

from harness.pyast import parse
from probes.replay import BUILTINS, Program, Step
from probes.special_case import find_def

ASSERT_METHODS = {
    "assertEqual", "assertEquals", "assertNotEqual", "assertTrue", "assertFalse", "assertIs", "assertIsNot",
    "assertIsNone", "assertIsNotNone", "assertIn", "assertNotIn", "assertAlmostEqual", "assertGreater",
    "assertGreaterEqual", "assertLess", "assertLessEqual", "assertCountEqual", "assertListEqual",
    "assertDictEqual", "assertSetEqual", "assertTupleEqual", "assertSequenceEqual", "assertMultiLineEqual",
    "assertRegex",
}  # fmt: skip
RAISES = {"raises", "assertRaises", "assertRaisesRegex", "warns", "assertWarns"}


def _calls_something(node: ast.AST) -> bool:
    """The expression calls a non-builtin (an expected value like ``frozenset(range(3))`` does not)."""
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            func = n.func
            if not (isinstance(func, ast.Name) and func.id in BUILTINS):
                return True
        if isinstance(n, (ast.Attribute, ast.Subscript)) and not isinstance(n.ctx, ast.Store):
            return True
    return False


def _strip_asserts(stmt: ast.stmt) -> ast.stmt:
    """A compound statement run as setup: its asserts keep their side effects, not their verdicts."""

    class Strip(ast.NodeTransformer):
        def visit_Assert(self, node: ast.Assert) -> ast.AST:
            return ast.copy_location(ast.Expr(node.test), node)

    return ast.fix_missing_locations(Strip().visit(parse(ast.unparse(stmt)).body[0]))


def _observed(node: ast.AST) -> list[ast.AST]:
    """The operands of an assert expression worth observing."""
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        return [n for n in (node.left, node.comparators[0]) if _calls_something(n)]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return _observed(node.operand)
    return [node] if _calls_something(node) else []


def _assert_call(stmt: ast.stmt) -> ast.Call | None:
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        func = stmt.value.func
        if isinstance(func, ast.Attribute) and func.attr in ASSERT_METHODS:
            return stmt.value
    return None


def _callable_arg(call: ast.Call) -> int:
    """Position of the callable in a call-form raises: after the regex for ``assertRaisesRegex``."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return 2 if name.endswith("Regex") else 1


def _raises_call(stmt: ast.stmt) -> ast.expr | None:
    """What a call-form raises statement invokes: ``self.assertRaises(E, lambda: f(x))`` observes
    ``f(x)`` and ``pytest.raises(E, f, x)`` observes ``f(x)``, so gold's own behaviour there (a value,
    or which exception) is compared, not whether the assertion machinery passed."""
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        return None
    call = stmt.value
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    at = _callable_arg(call)
    if name not in RAISES or len(call.args) <= at or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    target, args = call.args[at], call.args[at + 1 :]
    keywords = [k for k in call.keywords if k.arg not in ("match", "msg")]
    if isinstance(target, ast.Lambda) and not (args or keywords):
        lam = target.args
        if lam.posonlyargs or lam.args or lam.kwonlyargs or lam.vararg or lam.kwarg:
            return None
        return target.body
    return ast.Call(func=target, args=args, keywords=keywords)


def _raises_block(stmt: ast.stmt) -> bool:
    if not isinstance(stmt, ast.With):
        return False
    for item in stmt.items:
        call = item.context_expr
        if isinstance(call, ast.Call):
            func = call.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name in RAISES:
                return True
    return False


def steps_of(body: Sequence[ast.stmt]) -> list[Step]:
    out: list[Step] = []
    for i, stmt in enumerate(body):
        if i == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
            continue  # docstring
        if isinstance(stmt, ast.Assert):
            out += [Step("observe", ast.unparse(n), True) for n in _observed(stmt.test)]
        elif (call := _assert_call(stmt)) is not None:
            out += [Step("observe", ast.unparse(a), True) for a in call.args[:2] if _calls_something(a)]
        elif (invoked := _raises_call(stmt)) is not None:
            out.append(Step("observe", ast.unparse(invoked), True))
        elif _raises_block(stmt):  # its observations raised in the test: never setup for a later input
            out += [Step(s.kind, s.src, s.kind == "observe") for s in steps_of(stmt.body)]  # type: ignore[attr-defined]
        elif isinstance(stmt, ast.Expr):
            out.append(Step("observe", ast.unparse(stmt.value)))
        else:
            out.append(Step("exec", ast.unparse(_strip_asserts(stmt))))
    return out


# decorators that call the test with arguments of their own, or many times (Hypothesis's)
INJECTING = {"given", "example", "settings", "seed", "reproduce_failure"}


def injects(name: str) -> bool:
    """Whether the decorator of that dotted name hands the test arguments of its own (a patch's mock,
    Hypothesis's draws) or calls it more than once."""
    parts = name.split(".")
    return "patch" in parts or parts[-1] in INJECTING


def _is_mark(node: ast.expr) -> bool:
    """A pytest mark (``@pytest.mark.slow``, ``parametrize``): pytest reads it, the call is the test's own."""
    text = ast.unparse(node.func if isinstance(node, ast.Call) else node)
    return text.startswith("pytest.mark.") or text.startswith("mark.")


def programs(sources: Mapping[str, str], test_ids: Sequence[str]) -> list[Program]:
    """One program per replayable FAIL_TO_PASS test (see the module docstring)."""
    out = []
    for test_id in test_ids:
        file, _, rest = test_id.partition("::")
        if not rest or file not in sources:
            continue
        parts = rest.partition("[")[0].split("::")
        try:
            fn = find_def(parse(sources[file]), parts)
        except SyntaxError:
            continue
        if fn is None or isinstance(fn, ast.AsyncFunctionDef):
            continue
        params = [a.arg for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]]
        names = [ast.unparse(d.func if isinstance(d, ast.Call) else d) for d in fn.decorator_list]
        if fn.args.vararg or fn.args.kwarg or any(injects(n) and "patch" not in n.split(".") for n in names):
            continue  # a property test: its inputs are Hypothesis's, each call its own program
        cls = parts[-2] if len(parts) > 1 else None
        steps = steps_of(fn.body)
        if any(s.kind == "observe" for s in steps):
            fixtures = [a for a in params if a != "self"]
            wrapping = [ast.unparse(d) for d in fn.decorator_list if not _is_mark(d)]  # re-applied around the steps
            out.append(Program(key=test_id, test_id=test_id, test_file=file, cls=cls, method=parts[-1], steps=steps, fixtures=fixtures,
                               decorators=wrapping))  # fmt: skip
    return out
