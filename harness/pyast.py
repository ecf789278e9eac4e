"""``ast.parse`` that is safe to call from several threads at once, and what the probes ask of a
parsed function.

CPython 3.11 keeps the AST constructor's recursion counter in interpreter-wide state. When a thread
switch lands inside a parse (a finaliser run by the garbage collector is enough), two parses share
the counter and one fails with ``SystemError: AST constructor recursion depth mismatch``. Pipeline 2
generates probes for several tasks in threads, so every parse goes through one lock, and the garbage
collector is off while it runs: with no finaliser to run, the parse is C code that never lets another
thread in, so a parse that this lock cannot reach (Hypothesis reading a lambda's source in another
thread) can no longer interleave with ours. The lock alone left the real-code benchmark's Pipeline 2
losing whole tasks (all four more-itertools ones) to that error inside the locked parse.
"""

from __future__ import annotations

import ast
import gc
import threading

_LOCK = threading.Lock()


def parse(source: str, filename: str = "<unknown>", mode: str = "exec") -> ast.Module:
    with _LOCK:
        collecting = gc.isenabled()
        gc.disable()
        try:
            return ast.parse(source, filename, mode)  # type: ignore[return-value]  # an Expression with mode="eval"
        finally:
            if collecting:
                gc.enable()


def literal_eval(source: str | ast.expr) -> object:
    """``ast.literal_eval`` of source text or of a node: text is parsed, so the parse takes the lock
    (evaluating a node builds no AST and needs none)."""
    return ast.literal_eval(source if isinstance(source, ast.AST) else parse(source.lstrip(" \t"), mode="eval"))


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def is_generator(fn: ast.AST) -> bool:
    """Whether ``fn`` itself (not a function nested in it) yields."""
    stack = list(ast.iter_child_nodes(fn))
    while stack:
        child = stack.pop()
        if isinstance(child, (ast.Yield, ast.YieldFrom)):
            return True
        if not isinstance(child, _SCOPES):
            stack.extend(ast.iter_child_nodes(child))
    return False
