"""Rendering rows as a GitHub-flavoured Markdown table."""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from .align import pad, parse_align, separator
from .cells import cell_text, display_width, escape_cell

__all__ = ["render_table", "render_records"]


def _normalise_rows(rows: Iterable[Sequence[Any]], n_columns: int, none: str) -> list[list[str]]:
    out = []
    for i, row in enumerate(rows):
        row = list(row)
        if len(row) > n_columns:
            raise ValueError(f"row {i} has {len(row)} cells, but the table has {n_columns} columns")
        row += [None] * (n_columns - len(row))
        out.append([escape_cell(cell_text(v, none)) for v in row])
    return out


def render_table(rows: Iterable[Sequence[Any]], headers: Sequence[Any], *,
                 align=None, compact: bool = False, none: str = "") -> str:
    """Render ``rows`` under ``headers`` as a Markdown table.

    :param rows: sequences of cell values; short rows are padded with empty cells.
    :param headers: the column titles (this also fixes the number of columns).
    :param align: per-column alignment, e.g. ``"lrc"`` or ``["left", None, "right"]``.
    :param compact: do not pad cells to a common width.
    :param none: text for ``None`` cells.

    Cell text is escaped (``|`` -> ``\\|``, newlines -> ``<br>``) and columns are padded by
    display width, so CJK text lines up too.

    >>> print(render_table([["apple", 3]], ["fruit", "qty"], align="lr"))
    | fruit | qty |
    |:------|----:|
    | apple |   3 |
    """
    header_cells = [cell_text(h) for h in headers]
    if not header_cells:
        raise ValueError("a table needs at least one column")
    n = len(header_cells)
    body = _normalise_rows(rows, n, none)
    aligns = parse_align(align, n)

    if compact:
        widths = [0] * n
    else:
        widths = [max([3, display_width(header_cells[c])] + [display_width(r[c]) for r in body])
                  for c in range(n)]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(pad(cell, widths[c], aligns[c]) for c, cell in enumerate(cells)) + " |"

    out = [line(header_cells)]
    out.append("|" + "|".join(separator(widths[c] + 2 if not compact else 3, aligns[c])
                              for c in range(n)) + "|")
    out.extend(line(r) for r in body)
    return "\n".join(out)


def render_records(records: Iterable[Mapping[str, Any]], columns: Sequence[str] | None = None,
                   **options) -> str:
    """Render dictionaries: ``columns`` (default: keys in first-seen order) become the headers."""
    records = list(records)
    if columns is None:
        seen: dict[str, None] = {}
        for rec in records:
            for key in rec:
                seen.setdefault(key, None)
        columns = list(seen)
    rows = [[rec.get(col) for col in columns] for rec in records]
    return render_table(rows, columns, **options)
