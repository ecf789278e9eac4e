"""What gold added to a file: the old text of its change blocks, added parts, added characters of a string."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable

import libcst as cst

from probes.pycst import PyFile, code_of
from probes.workspace import change_blocks, file_lines

SIMILAR = 0.5  # an old string that keeps at least this share of its text in a new one is its earlier version
_STRING = re.compile(r"""(?i)(?<!\w)[rbu]{0,2}("{3}|'{3}|"|')((?:\\.|(?!\1).)*?)\1""", re.DOTALL)
Mutant = tuple[str, str, Callable[[], "str | None"]]  # operator, description, build


class _Old:
    """The old text of each change block, by the new lines it covers."""

    def __init__(self, py: PyFile) -> None:
        old, new = file_lines(py.old), file_lines(py.new)
        self.blocks = [("".join(old[i1:i2]), j1 + 1, j2) for i1, i2, j1, j2 in change_blocks(old, new) if j2 > j1]

    def block(self, line: int) -> str | None:
        """The old text replaced by the block that holds new ``line``; None when gold did not add the line."""
        return next((text for text, first, last in self.blocks if first <= line <= last), None)


def _squash(text: str) -> str:
    return "".join(text.split())


def added_part(py: PyFile, old: _Old, node: cst.CSTNode) -> bool:
    """Every line of ``node`` was added by gold and its code is not in the old block (not merely moved
    or re-indented)."""
    if not py.all_added(node):
        return False
    before = old.block(py.start(node))
    return before is not None and _squash(code_of(py, node).strip().rstrip(",")) not in _squash(before)


def added_chars(body: str, old_block: str | None) -> set[int]:
    """Indexes of ``body`` (a string literal's text between its quotes) that gold added: those the
    string literal of the old block that survives best in it does not match (the largest share of its
    text kept, then the most characters); all of them when no old literal keeps half its text."""
    if old_block is None:
        return set()
    best: tuple[float, int] = (SIMILAR, 0)
    kept_best: set[int] = set()
    for found in _STRING.finditer(old_block):
        old = found.group(2)
        blocks = difflib.SequenceMatcher(None, old, body, autojunk=False).get_matching_blocks()
        kept = {b + k for _, b, size in blocks for k in range(size)}
        score = (len(kept) / len(old), len(kept)) if old else (0.0, 0)
        if score > best:
            best, kept_best = score, kept
    return set(range(len(body))) - kept_best
