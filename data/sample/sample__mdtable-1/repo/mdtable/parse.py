"""Parsing Markdown tables back into rows."""

from __future__ import annotations

import re

from .cells import unescape_cell

__all__ = ["split_row", "parse_table"]

_SEPARATOR_CELL_RE = re.compile(r"^\s*:?-{3,}:?\s*$")


def split_row(line: str) -> list[str]:
    """Split one table line into raw cell texts, honouring ``\\|`` escapes."""
    line = line.strip()
    if line.startswith("|"):
        line = line[1:]
    if line.endswith("|") and not line.endswith("\\|"):
        line = line[:-1]
    cells, current, i = [], [], 0
    while i < len(line):
        ch = line[i]
        if ch == "\\" and i + 1 < len(line) and line[i + 1] == "|":
            current.append("\\|")
            i += 2
            continue
        if ch == "|":
            cells.append("".join(current))
            current = []
        else:
            current.append(ch)
        i += 1
    cells.append("".join(current))
    return cells


def parse_table(text: str) -> tuple[list[str], list[list[str]]]:
    """Parse a Markdown table into ``(headers, rows)`` with unescaped cell text."""
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    if len(lines) < 2:
        raise ValueError("a table needs a header line and a separator line")
    headers = [unescape_cell(c) for c in split_row(lines[0])]
    seps = split_row(lines[1])
    if len(seps) != len(headers) or not all(_SEPARATOR_CELL_RE.match(c) for c in seps):
        raise ValueError(f"invalid separator line: {lines[1]!r}")
    rows = []
    for ln in lines[2:]:
        cells = [unescape_cell(c) for c in split_row(ln)]
        if len(cells) != len(headers):
            raise ValueError(f"row has {len(cells)} cells, expected {len(headers)}: {ln!r}")
        rows.append(cells)
    return headers, rows
