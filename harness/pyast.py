"""``ast.parse`` that is safe to call from several threads at once.

CPython 3.11 keeps the AST constructor's recursion counter in interpreter-wide state. When a thread
switch lands inside a parse (a finaliser run by the garbage collector is enough), two parses share
the counter and one fails with ``SystemError: AST constructor recursion depth mismatch``. Pipeline 2
generates probes for several tasks in threads, so every parse goes through one lock.
"""

from __future__ import annotations

import ast
import threading

_LOCK = threading.Lock()


def parse(source: str, filename: str = "<unknown>") -> ast.Module:
    with _LOCK:
        return ast.parse(source, filename)
