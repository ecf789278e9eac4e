"""swedeck_assertions' source index: the assertion-like nodes of a file, and the one that stands on a line.

PYTEST_DONT_REWRITE (pytest rewrites the modules a ``python_files`` pattern matches unless their docstring says this)
"""

from __future__ import annotations

import ast
import re

from swedeck_assertions_log import _STATE, normalise

# Frames of this module are hidden from unittest's and pytest's failure reports.
__unittest = True

# One entry per assertion-like node of a file: (start line, end line, kind, callee name, source).
# kind is "assert" for an assert statement and "call" for an assert*/fail* call.


def _callee(node: ast.Call) -> tuple[str, bool]:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id, False
    if isinstance(func, ast.Attribute):
        on_self = isinstance(func.value, ast.Name) and func.value.id == "self"
        return func.attr, on_self
    return "", False


def _source_lines(text: str) -> list[str]:
    """``text`` split as ``ast.get_source_segment`` splits it (on \\r\\n, \\r and \\n only), line ends kept."""
    lines, start = [], 0
    for match in re.finditer(r"\r\n|\r|\n", text):
        lines.append(text[start : match.end()])
        start = match.end()
    if start < len(text):
        lines.append(text[start:])
    return lines


def _segment(lines: list[str], node: ast.AST) -> str:
    """``ast.get_source_segment`` over lines split once: that function splits the whole file for every
    node, quadratic in a large test file (more-itertools' 7,000-line test_more.py took minutes)."""
    try:
        first, last = node.lineno - 1, node.end_lineno - 1
        start, end = node.col_offset, node.end_col_offset
        if first == last:
            return lines[first].encode()[start:end].decode()
        head = lines[first].encode()[start:].decode()
        tail = lines[last].encode()[:end].decode()
        return head + "".join(lines[first + 1 : last]) + tail
    except (AttributeError, IndexError, TypeError, UnicodeDecodeError):
        return ""


def _index(filename: str) -> list[tuple[int, int, str, str, str]]:
    """The assertion-like nodes of ``filename``, parsed once per process (test files do not change
    while they run)."""
    cached = _STATE.index.get(filename)
    if cached is not None:
        return cached
    entries: list[tuple[int, int, str, str, str]] = []
    try:
        with open(filename, "rb") as handle:
            raw = handle.read()
        text = raw.decode("utf-8", errors="replace")
        lines = _source_lines(text)
        tree = ast.parse(raw, filename)
        for node in ast.walk(tree):
            if isinstance(node, ast.Assert):
                kind, name = "assert", ""
            elif isinstance(node, ast.Call):
                name, on_self = _callee(node)
                if not (name.startswith("assert") or name == "raises" or (on_self and name.startswith("fail"))):
                    continue
                kind = "call"
            else:
                continue
            segment = _segment(lines, node)
            end = getattr(node, "end_lineno", None) or node.lineno
            entries.append((node.lineno, end, kind, name, normalise(segment)))
    except Exception:
        entries = []
    entries.sort()
    _STATE.index[filename] = entries
    return entries


def _find(
    filename: str,
    line: int,
    kind: str | None = None,
    name: str | None = None,
    start_only: bool = False,
    prefix: str = "",
) -> tuple[int, str] | None:
    """The innermost indexed node of ``filename`` covering ``line`` (start line, source), if any;
    among nodes starting on the same line, the first whose source starts with ``prefix``."""
    best: tuple[int, int, str, str, str] | None = None
    for entry in _index(filename):
        start, end, ekind, ename, source = entry
        if start > line:
            break
        if end < line or (start_only and start != line):
            continue
        if (kind is not None and ekind != kind) or (name is not None and ename != name):
            continue
        if best is None or (end - start, -start) < (best[1] - best[0], -best[0]):
            best = entry
        elif prefix and start == best[0] and source.startswith(prefix) and not best[4].startswith(prefix):
            best = entry
    if best is None:
        return None
    return best[0], best[4]
