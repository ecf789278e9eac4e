"""Renaming rewrites: the locals gold introduced, and a private helper gold introduced, renamed."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator, Mapping

import libcst as cst
from libcst.metadata import Assignment, FunctionScope

from harness.pyast import parse
from probes.pycst import PyFile, fresh_name, walk
from probes.workspace import Workspace

def _old_locals(py: PyFile, fn: cst.FunctionDef) -> set[str] | None:
    """Locals of the same function before gold (matched by qualified name); None if it is new."""
    if py.old is None:
        return None
    try:
        tree = parse(py.old)
    except SyntaxError:
        return None
    target = _qualname(py, fn)
    for qual, node in _ast_functions(tree):
        if qual == target:
            names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
            return names | {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)}
    return None


def _ast_functions(tree: ast.AST, prefix: str = "") -> Iterator[tuple[str, ast.AST]]:
    for node in getattr(tree, "body", []):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield prefix + node.name, node
            yield from _ast_functions(node, prefix + node.name + ".")
        elif isinstance(node, ast.ClassDef):
            yield from _ast_functions(node, prefix + node.name + ".")


def _qualname(py: PyFile, fn: cst.FunctionDef) -> str:
    for qual, node in _cst_functions(py.module):
        if node is fn:
            return qual
    return fn.name.value


def _cst_functions(node: cst.CSTNode, prefix: str = "") -> Iterator[tuple[str, cst.FunctionDef]]:
    body = getattr(node, "body", None)
    stmts = body if isinstance(body, (list, tuple)) else getattr(body, "body", [])
    for stmt in stmts if isinstance(stmts, (list, tuple)) else []:
        if isinstance(stmt, cst.FunctionDef):
            yield prefix + stmt.name.value, stmt
            yield from _cst_functions(stmt, prefix + stmt.name.value + ".")
        elif isinstance(stmt, cst.ClassDef):
            yield from _cst_functions(stmt, prefix + stmt.name.value + ".")


_DYNAMIC = {"locals", "vars", "eval", "exec", "globals"}


def _rename_locals(py: PyFile, functions: list[cst.FunctionDef], scopes: Mapping) -> Iterator[tuple[str, str, str]]:
    taken = py.names()
    for fn in functions:
        if not isinstance(fn.body, cst.IndentedBlock) or not fn.body.body:
            continue
        names_in_fn = {n.value for n in walk(fn) if isinstance(n, cst.Name)}
        if names_in_fn & _DYNAMIC:
            continue
        scope = scopes.get(fn.body.body[0])
        if not isinstance(scope, FunctionScope):
            continue
        declared = {
            n.value for s in walk(fn) if isinstance(s, (cst.Global, cst.Nonlocal)) for item in s.names for n in [item.name]
        }
        params = {p.name.value for p in walk(fn.params) if isinstance(p, cst.Param)}
        before = _old_locals(py, fn) or set()
        fns: dict[int, Callable[[cst.CSTNode], object]] = {}
        renamed = []
        for name in sorted({a.name for a in scope.assignments}):
            if name in params or name in before or name in declared or name.startswith("__"):
                continue
            assignments = [a for a in scope.assignments[name] if isinstance(a, Assignment)]
            if not assignments or any(not isinstance(a.node, cst.Name) for a in assignments):
                continue
            refs = [r.node for a in assignments for r in a.references]
            if any(not isinstance(r, cst.Name) for r in refs):
                continue
            new = fresh_name(f"{name}_value" if not name.startswith("_") else f"{name}_v", taken)
            for node in [*(a.node for a in assignments), *refs]:
                fns[id(node)] = lambda n, new=new: n.with_changes(value=new)
            renamed.append(f"{name}->{new}")
        if fns:
            code = py.replace_many(fns)
            if code is not None:
                yield "rename_locals", f"in {fn.name.value}() renamed gold's locals {', '.join(renamed)}", code


def _rename_private_helpers(py: PyFile, scopes: Mapping, ws: Workspace) -> Iterator[tuple[str, str, str]]:
    """A module-level private function or class that gold introduced, renamed with every reference
    in the file: the public behaviour is unchanged, only a test that imports the helper can tell."""
    old_names = set()
    if py.old is not None:
        try:
            old_names = {n.name for n in parse(py.old).body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
        except SyntaxError:
            return
    global_scope = scopes.get(py.module.body[0]) if py.module.body else None
    if global_scope is None:
        return
    taken = py.names()
    strings = " ".join(n.value for n in walk(py.module) if isinstance(n, cst.SimpleString))
    for stmt in py.module.body:
        if not isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            continue
        name = stmt.name.value
        if not name.startswith("_") or name.startswith("__") or name in old_names or name in strings:
            continue
        others = [p for p in ws.paths if p != py.path and ws.new[p] and re.search(rf"\b{re.escape(name)}\b", ws.new[p] or "")]
        if others:
            continue  # used from another file gold touched: a one-file rename would break it
        assignments = [a for a in global_scope.assignments[name] if isinstance(a, Assignment)]
        if [a.node for a in assignments] != [stmt]:
            continue
        refs = [r.node for a in assignments for r in a.references]
        if any(not isinstance(r, cst.Name) for r in refs):
            continue
        new = fresh_name(f"{name}_impl", taken)
        fns: dict[int, Callable[[cst.CSTNode], object]] = {
            id(stmt): lambda n, new=new: n.with_changes(name=n.name.with_changes(value=new))
        }
        for node in refs:
            fns[id(node)] = lambda n, new=new: n.with_changes(value=new)
        code = py.replace_many(fns)
        if code is not None:
            yield "rename_private_helper", f"private helper {name} (introduced by gold) renamed to {new}", code
