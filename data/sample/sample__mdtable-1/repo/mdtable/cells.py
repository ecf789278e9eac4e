"""Cell text: converting values, escaping Markdown table syntax and measuring display width."""

from __future__ import annotations

import unicodedata
from typing import Any

__all__ = ["cell_text", "escape_cell", "unescape_cell", "display_width"]


def cell_text(value: Any, none: str = "") -> str:
    """Convert a cell value to text: ``None`` becomes ``none``, floats lose a trailing ``.0``."""
    if value is None:
        return none
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def escape_cell(text: str) -> str:
    """Make ``text`` safe inside a table cell.

    ``|`` would end the cell, so it becomes ``\\|``; line breaks are not allowed inside a row and
    become ``<br>``. Surrounding whitespace is stripped.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n").strip()
    text = text.replace("|", "\\|")
    return text.replace("\n", "<br>")


def unescape_cell(text: str) -> str:
    """Inverse of :func:`escape_cell`."""
    return text.strip().replace("<br>", "\n").replace("\\|", "|")


def display_width(text: str) -> int:
    """Number of terminal columns ``text`` takes: East Asian wide characters count twice and
    combining marks count zero, so that columns line up in monospace fonts."""
    width = 0
    for ch in text:
        if unicodedata.combining(ch):
            continue
        width += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return width
