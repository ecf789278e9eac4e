"""Behaviour-preserving rewrites (libcst) of the gold-patched code, restricted to the functions gold
touched: the ``correct_alternative`` probes, and STING's guard that a strengthening test does not pin
gold's form.

Renamed locals gold introduced, a renamed private helper gold introduced, negated-and-swapped if/else
branches, an expression extracted into a local, loop <-> list comprehension, two independent adjacent
assignments reordered, and a reworded error message (only for a raise gold added whose message the
issue text does not quote). A failure (reward 0) is evidence of an over-restrictive suite: the tests
pin an incidental detail of gold.
"""

from __future__ import annotations

import itertools
import textwrap
from collections.abc import Iterable, Iterator, Mapping

import libcst as cst
from libcst.metadata import ScopeProvider

from harness.pyast import literal_eval
from probes.pycst import PyFile, code_of, fresh_name, line_of, negate, short, walk
from probes.rewrites.renames import _rename_locals, _rename_private_helpers
from probes.workspace import MAX_PER_OPERATOR, Workspace

PER_OPERATOR_SCAN = 3 * MAX_PER_OPERATOR  # rewrites tried per operator and file (some dedupe away)


def rewrites(py: PyFile, issue: str, ws: Workspace) -> Iterator[tuple[str, str, str]]:
    functions = py.touched_functions()
    if not functions:
        return
    scopes = py.wrapper.resolve(ScopeProvider)
    for operator in (
        _rename_locals(py, functions, scopes),
        _rename_private_helpers(py, scopes, ws),
        _swap_branches(py, functions),
        _extract_variable(py, functions),
        _loop_comprehension(py, functions, scopes),
        _reorder(py, functions),
        _reword_messages(py, functions, issue),
    ):
        yield from itertools.islice(operator, PER_OPERATOR_SCAN)  # later sites are never built


def _prioritised(py: PyFile, nodes: Iterable[cst.CSTNode]) -> list[cst.CSTNode]:
    """Nodes on lines gold added first, then the rest, each in source order."""
    nodes = list(dict.fromkeys(nodes))
    added = [n for n in nodes if any(line in py.added for line in range(*_span(py, n)))]
    return added + [n for n in nodes if n not in added]


def _span(py: PyFile, node: cst.CSTNode) -> tuple[int, int]:
    a, b = py.lines(node)
    return a, b + 1


def _swap_branches(py: PyFile, functions: list[cst.FunctionDef]) -> Iterator[tuple[str, str, str]]:
    ifs = [n for fn in functions for n in walk(fn) if isinstance(n, cst.If) and isinstance(n.orelse, cst.Else)]
    for node in _prioritised(py, ifs):

        def swap(n: cst.CSTNode) -> cst.CSTNode:
            return n.with_changes(test=negate(n.test), body=n.orelse.body, orelse=n.orelse.with_changes(body=n.body))

        code = py.replace(node, swap)
        if code is not None:
            yield "swap_branches", f"`if {short(code_of(py, node.test))}` negated with its branches swapped at {line_of(py, node)}", code


def _trivial(expr: cst.BaseExpression | None) -> bool:
    if expr is None or isinstance(expr, (cst.Name, cst.BaseNumber, cst.SimpleString)):
        return True
    if isinstance(expr, cst.Tuple):
        return all(_trivial(e.value) for e in expr.elements)
    return isinstance(expr, cst.UnaryOperation) and isinstance(expr.expression, cst.BaseNumber)


def _blocks(functions: list[cst.FunctionDef]) -> list[cst.IndentedBlock]:
    seen: dict[int, cst.IndentedBlock] = {}
    for fn in functions:
        for n in walk(fn):
            if isinstance(n, cst.IndentedBlock):
                seen.setdefault(id(n), n)
    return list(seen.values())


def _extract_variable(py: PyFile, functions: list[cst.FunctionDef]) -> Iterator[tuple[str, str, str]]:
    """``return <expr>`` -> ``result = <expr>; return result``; ``if <expr>:`` -> ``condition =
    <expr>; if condition:`` (not for elif, whose test must stay lazy)."""
    taken = py.names()
    sites: list[tuple[cst.IndentedBlock, int]] = []
    for block in _blocks(functions):
        for i, stmt in enumerate(block.body):
            if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Return):
                if not _trivial(stmt.body[0].value):
                    sites.append((block, i))
            elif isinstance(stmt, cst.If) and not _trivial(stmt.test):
                sites.append((block, i))
    ordered = _prioritised(py, [block.body[i] for block, i in sites])
    index = {id(block.body[i]): (block, i) for block, i in sites}
    for stmt in ordered:
        block, i = index[id(stmt)]
        if isinstance(stmt, cst.If):
            name = fresh_name("condition", set(taken))
            expr = stmt.test
            replacement = stmt.with_changes(test=cst.Name(name), leading_lines=[])
        else:
            name = fresh_name("result", set(taken))
            expr = stmt.body[0].value
            replacement = stmt.with_changes(body=[stmt.body[0].with_changes(value=cst.Name(name))], leading_lines=[])
        assign = cst.SimpleStatementLine(
            [cst.Assign(targets=[cst.AssignTarget(cst.Name(name))], value=expr.with_changes(lpar=[], rpar=[]) if _unwrap_ok(expr) else expr)],
            leading_lines=stmt.leading_lines,
        )

        def rewrite(b: cst.CSTNode, i: int = i, assign: cst.CSTNode = assign, replacement: cst.CSTNode = replacement) -> cst.CSTNode:
            body = list(b.body)  # type: ignore[attr-defined]
            return b.with_changes(body=[*body[:i], assign, replacement, *body[i + 1 :]])

        code = py.replace(block, rewrite)
        if code is not None:
            yield "extract_variable", f"`{short(code_of(py, expr))}` extracted into local `{name}` at {line_of(py, stmt)}", code


def _unwrap_ok(expr: cst.BaseExpression) -> bool:
    return bool(expr.lpar) and not isinstance(expr, (cst.Tuple, cst.GeneratorExp, cst.Yield))


def _target_names(target: cst.BaseExpression) -> set[str] | None:
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        out: set[str] = set()
        for el in target.elements:
            inner = _target_names(el.value)
            if inner is None:
                return None
            out |= inner
        return out
    return None


def _names(node: cst.CSTNode | None) -> set[str]:
    return set() if node is None else {n.value for n in walk(node) if isinstance(n, cst.Name)}


def _read_outside(scopes: Mapping, loop: cst.For, names: set[str]) -> bool:
    """A name the loop binds is read in the function's scope (or a scope nested in it that resolves
    to it) somewhere outside the loop."""
    scope = scopes.get(loop)
    if scope is None:
        return True
    inside = {id(n) for n in walk(loop)}
    for name in names:
        for assignment in scope.assignments[name]:
            if any(id(ref.node) not in inside for ref in assignment.references):
                return True
        if any(id(access.node) not in inside for access in scope.accesses[name]):
            return True
    return False


def _used_in_scope(scopes: Mapping, stmt: cst.CSTNode, names: set[str]) -> bool:
    """A name is assigned or read in the scope of ``stmt`` (the comprehension's own scope excluded)."""
    scope = scopes.get(stmt)
    if scope is None:
        return True
    return any(scope.assignments[name] or scope.accesses[name] for name in names)


def _append_call(stmt: cst.CSTNode, target: str) -> cst.BaseExpression | None:
    """E when ``stmt`` is exactly ``<target>.append(E)``."""
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr)):
        return None
    call = stmt.body[0].value
    if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "append"):
        return None
    if not (isinstance(call.func.value, cst.Name) and call.func.value.value == target):
        return None
    if len(call.args) != 1 or call.args[0].keyword is not None or call.args[0].star:
        return None
    return call.args[0].value


def _single_assign(stmt: cst.CSTNode) -> tuple[str, cst.BaseExpression] | None:
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Assign)):
        return None
    assign = stmt.body[0]
    if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
        return None
    return assign.targets[0].target.value, assign.value


def _wrap_iter(py: PyFile, expr: cst.BaseExpression) -> str:
    text = code_of(py, expr)
    return f"({text})" if isinstance(expr, (cst.IfExp, cst.Lambda, cst.NamedExpr, cst.Yield)) and not expr.lpar else text


def _loop_comprehension(py: PyFile, functions: list[cst.FunctionDef], scopes: Mapping) -> Iterator[tuple[str, str, str]]:
    sites: list[tuple[cst.FunctionDef, cst.IndentedBlock, int, str]] = []
    for fn in functions:
        for block in _blocks([fn]):
            for i, stmt in enumerate(block.body):
                one = _single_assign(stmt)
                if one is None:
                    continue
                target, value = one
                nxt = block.body[i + 1] if i + 1 < len(block.body) else None
                if isinstance(value, cst.List) and not value.elements and isinstance(nxt, cst.For):
                    sites.append((fn, block, i, "to_comprehension"))
                elif isinstance(value, cst.ListComp) and not value.for_in.inner_for_in and value.for_in.asynchronous is None:
                    if len(value.for_in.ifs) <= 1:
                        sites.append((fn, block, i, "to_loop"))
    for _, block, i, direction in sites:
        stmt = block.body[i]
        target, value = _single_assign(stmt)  # type: ignore[misc]
        if direction == "to_comprehension":
            loop = block.body[i + 1]
            assert isinstance(loop, cst.For)
            if loop.orelse is not None or loop.asynchronous is not None or not isinstance(loop.body, cst.IndentedBlock):
                continue
            if len(loop.body.body) != 1:
                continue
            inner = loop.body.body[0]
            cond = None
            if isinstance(inner, cst.If) and inner.orelse is None and isinstance(inner.body, cst.IndentedBlock) and len(inner.body.body) == 1:
                cond, inner = inner.test, inner.body.body[0]
            elt = _append_call(inner, target)
            bound = _target_names(loop.target)
            if elt is None or bound is None or target in _names(elt) | _names(loop.iter) | _names(cond):
                continue
            if _read_outside(scopes, loop, bound):
                continue  # the loop variable is read outside the loop; a comprehension would not bind it
            text = f"[{code_of(py, elt)} for {code_of(py, loop.target)} in {_wrap_iter(py, loop.iter)}"
            text += f" if {_wrap_iter(py, cond)}]" if cond is not None else "]"
            try:
                comp = cst.parse_expression(text)
            except Exception:  # noqa: BLE001
                continue
            new_stmt = stmt.with_changes(body=[stmt.body[0].with_changes(value=comp)])

            def rewrite(b: cst.CSTNode, i: int = i, new_stmt: cst.CSTNode = new_stmt) -> cst.CSTNode:
                body = list(b.body)  # type: ignore[attr-defined]
                return b.with_changes(body=[*body[:i], new_stmt, *body[i + 2 :]])

            what = f"loop filling `{target}` -> list comprehension"
        else:
            comp = value
            assert isinstance(comp, cst.ListComp)
            bound = _target_names(comp.for_in.target)
            if bound is None or target in _names(comp) or bound & {target} or _used_in_scope(scopes, stmt, bound):
                continue  # a loop would bind its variable in the function, where that name is in use
            cond = comp.for_in.ifs[0].test if comp.for_in.ifs else None
            elt = comp.elt
            inner = f"{target}.append({code_of(py, elt)})"
            body = f"if {code_of(py, cond)}:\n    {inner}" if cond is not None else inner
            src = f"{target} = []\nfor {code_of(py, comp.for_in.target)} in {code_of(py, comp.for_in.iter)}:\n" + textwrap.indent(body, "    ") + "\n"
            try:
                new_stmts = list(cst.parse_module(src).body)
            except Exception:  # noqa: BLE001
                continue
            new_stmts[0] = new_stmts[0].with_changes(leading_lines=stmt.leading_lines)

            def rewrite(b: cst.CSTNode, i: int = i, new_stmts: list = new_stmts) -> cst.CSTNode:
                body = list(b.body)  # type: ignore[attr-defined]
                return b.with_changes(body=[*body[:i], *new_stmts, *body[i + 1 :]])

            what = f"list comprehension `{target} = [...]` -> for loop with append"
        code = py.replace(block, rewrite)
        if code is not None:
            yield "loop_comprehension", f"{what} at {line_of(py, stmt)}", code


_IMPURE = (cst.Call, cst.Await, cst.Yield, cst.NamedExpr)


def _reorder(py: PyFile, functions: list[cst.FunctionDef]) -> Iterator[tuple[str, str, str]]:
    pairs: list[tuple[cst.IndentedBlock, int]] = []
    for block in _blocks(functions):
        for i in range(len(block.body) - 1):
            a, b = _single_assign(block.body[i]), _single_assign(block.body[i + 1])
            if a is None or b is None:
                continue
            if any(isinstance(n, _IMPURE) for v in (a[1], b[1]) for n in walk(v)):
                continue
            names_a, names_b = {a[0]} | _names(a[1]), {b[0]} | _names(b[1])
            if names_a & names_b:
                continue
            pairs.append((block, i))
    firsts = _prioritised(py, [block.body[i] for block, i in pairs])
    index = {id(block.body[i]): (block, i) for block, i in pairs}
    for first in firsts:
        block, i = index[id(first)]

        def rewrite(b: cst.CSTNode, i: int = i) -> cst.CSTNode:
            body = list(b.body)  # type: ignore[attr-defined]
            one, two = body[i], body[i + 1]
            body[i] = two.with_changes(leading_lines=one.leading_lines)
            body[i + 1] = one.with_changes(leading_lines=two.leading_lines)
            return b.with_changes(body=body)

        code = py.replace(block, rewrite)
        if code is not None:
            yield "reorder_statements", f"independent assignments at {line_of(py, first)} and the next line swapped", code


def _reword(text: str) -> str:
    if not text:
        return text
    first = text[0]
    if first.islower():
        text = first.upper() + text[1:]
    elif first.isupper() and text[1:2].islower():
        text = first.lower() + text[1:]
    return text if text.rstrip().endswith((".", "!", "?", ":")) else text + "."


def _reword_messages(py: PyFile, functions: list[cst.FunctionDef], issue: str) -> Iterator[tuple[str, str, str]]:
    """An error message gold added, reworded, when the issue does not quote it (so its wording is not
    a requirement): first letter's case flipped and a full stop added."""
    issue_l = issue.lower()
    raises = [n for fn in functions for n in walk(fn) if isinstance(n, cst.Raise) and py.start(n) in py.added]
    for node in dict.fromkeys(raises):
        exc = node.exc
        if not (isinstance(exc, cst.Call) and exc.args and exc.args[0].keyword is None and not exc.args[0].star):
            continue
        arg = exc.args[0].value
        if isinstance(arg, cst.SimpleString):
            if "b" in arg.prefix.lower():
                continue
            try:
                text = literal_eval(arg.value)
            except (ValueError, SyntaxError):
                continue
            static = [text]
            new_arg: cst.BaseExpression = cst.SimpleString(repr(_reword(text)))
            if _reword(text) == text:
                continue
        elif isinstance(arg, cst.FormattedString):
            parts = list(arg.parts)
            static = [p.value for p in parts if isinstance(p, cst.FormattedStringText)]
            if not static:
                continue
            if isinstance(parts[0], cst.FormattedStringText):
                head = parts[0].value
                parts[0] = parts[0].with_changes(value=_reword(head)[: len(head)] if head else head)
            tail = parts[-1]
            if not (isinstance(tail, cst.FormattedStringText) and tail.value.rstrip().endswith((".", "!", "?", ":"))):
                parts.append(cst.FormattedStringText("."))
            new_arg = arg.with_changes(parts=parts)
        else:
            continue
        joined = " ".join(s.strip() for s in static if s.strip()).lower()
        if not joined or joined in issue_l or any(len(s.strip()) >= 12 and s.strip().lower() in issue_l for s in static):
            continue  # the issue states the message: its wording is a requirement

        def rewrite(n: cst.CSTNode, new_arg: cst.BaseExpression = new_arg) -> cst.CSTNode:
            args = list(n.exc.args)  # type: ignore[attr-defined]
            args[0] = args[0].with_changes(value=new_arg)
            return n.with_changes(exc=n.exc.with_changes(args=args))  # type: ignore[attr-defined]

        code = py.replace(node, rewrite)
        if code is not None:
            yield "reword_message", f"message of the raise at {line_of(py, node)} reworded (the issue does not quote it)", code
