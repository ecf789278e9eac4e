"""mdtable: render (and parse) GitHub-flavoured Markdown tables."""

from .align import parse_align
from .cells import display_width, escape_cell, unescape_cell
from .parse import parse_table, split_row
from .render import render_records, render_table

__version__ = "1.0.2"

__all__ = [
    "display_width",
    "escape_cell",
    "parse_align",
    "parse_table",
    "render_records",
    "render_table",
    "split_row",
    "unescape_cell",
]
