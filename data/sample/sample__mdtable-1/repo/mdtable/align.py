"""Column alignment: parsing alignment specs, padding cells and building the separator row."""

from __future__ import annotations

from typing import Sequence

from .cells import display_width

__all__ = ["Align", "parse_align", "pad", "separator"]

LEFT, RIGHT, CENTER, NONE = "left", "right", "center", None
Align = str | None

_ALIASES = {
    "l": LEFT, "left": LEFT, "<": LEFT,
    "r": RIGHT, "right": RIGHT, ">": RIGHT,
    "c": CENTER, "center": CENTER, "centre": CENTER, "^": CENTER,
    "": NONE, "-": NONE, "none": NONE,
}


def parse_align(spec: str | Sequence[str | None] | None, n_columns: int) -> list[Align]:
    """Normalise an alignment spec to one entry per column.

    ``spec`` may be ``None`` (no alignment), a string of one-letter codes like ``"lrc"``, or a
    sequence with one name per column (``["left", None, "right"]``). Missing trailing entries
    mean "no alignment".
    """
    if spec is None:
        return [NONE] * n_columns
    items = list(spec) if isinstance(spec, str) else list(spec)
    if len(items) > n_columns:
        raise ValueError(f"{len(items)} alignments given for {n_columns} columns")
    out: list[Align] = []
    for item in items:
        key = "" if item is None else str(item).strip().lower()
        if key not in _ALIASES:
            raise ValueError(f"unknown alignment {item!r}")
        out.append(_ALIASES[key])
    return out + [NONE] * (n_columns - len(out))


def pad(text: str, width: int, align: Align) -> str:
    """Pad ``text`` to ``width`` display columns according to ``align`` (left by default)."""
    gap = width - display_width(text)
    if gap <= 0:
        return text
    if align == RIGHT:
        return " " * gap + text
    if align == CENTER:
        left = gap // 2
        return " " * left + text + " " * (gap - left)
    return text + " " * gap


def separator(width: int, align: Align) -> str:
    """The cell of the ``|---|`` row for a column ``width`` wide (at least 3 characters)."""
    width = max(width, 3)
    if align == LEFT:
        return ":" + "-" * (width - 1)
    if align == RIGHT:
        return "-" * (width - 1) + ":"
    if align == CENTER:
        return ":" + "-" * (width - 2) + ":"
    return "-" * width
