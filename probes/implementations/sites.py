"""Gold's edit put in the wrong place: applied at only one of several similar change blocks
(``one_similar_site``: the same fix at every call site, made at one), and a statement block gold inserts
moved past its neighbouring statement (``adjacent_edit``: the check placed after the line it should
guard, or before the one it needs).

A suite that reaches the fix through one call site cannot tell gold from the fix made there alone; a
suite whose inputs do not depend on the order of two statements cannot tell them swapped.
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Callable, Iterator

from harness.pyast import parse
from probes.data_ops.added import Mutant
from probes.pycst import PyFile, spread
from probes.workspace import Contents, Workspace, change_blocks, file_lines, importable, parses, revert_blocks

Block = tuple[int, int, int, int]
SIMILAR = 0.8  # two change blocks whose (old -> new) texts match this closely make the same edit
MAX_BLOCKS = 40  # change blocks compared pairwise


def _edit_text(old: list[str], new: list[str], block: Block) -> str:
    i1, i2, j1, j2 = block
    return " ".join("".join(old[i1:i2]).split()) + " -> " + " ".join("".join(new[j1:j2]).split())


def similar_groups(ws: Workspace) -> list[list[tuple[str, Block]]]:
    """Gold's change blocks (each adding something) grouped by the edit they make, groups of two or more."""
    blocks = [(p, b) for p in ws.paths if ws.old[p] is not None and ws.new[p] is not None and importable(p, ws.root)
              for b in change_blocks(file_lines(ws.old[p]), file_lines(ws.new[p])) if b[3] > b[2]][:MAX_BLOCKS]  # fmt: skip
    texts = [_edit_text(file_lines(ws.old[p]), file_lines(ws.new[p]), b) for p, b in blocks]
    group = list(range(len(blocks)))
    for a in range(len(blocks)):
        for b in range(a + 1, len(blocks)):
            if group[b] == b and difflib.SequenceMatcher(None, texts[a], texts[b], autojunk=False).ratio() >= SIMILAR:
                group[b] = group[a]
    out: dict[int, list[tuple[str, Block]]] = {}
    for k, g in enumerate(group):
        out.setdefault(g, []).append(blocks[k])
    return [members for members in out.values() if len(members) > 1]


def one_similar_site(ws: Workspace) -> Iterator[tuple[str, str, Callable[[], Contents | None]]]:
    """For each group of similar change blocks, gold with every block of the group but one put back."""
    for members in similar_groups(ws):
        for path, (i1, i2, j1, j2) in members:
            others: dict[str, set[Block]] = {}
            for p, b in members:
                if (p, b) != (path, (i1, i2, j1, j2)):
                    others.setdefault(p, set()).add(b)

            def build(others: dict[str, set[Block]] = others) -> Contents:
                return {p: revert_blocks(file_lines(ws.old[p]), file_lines(ws.new[p]), bs) for p, bs in others.items()}

            yield "one_similar_site", f"gold's change at {path}:{j1 + 1} only, not at its {len(members) - 1} similar site(s)", build


_ENDS_FLOW = (ast.Return, ast.Raise, ast.Break, ast.Continue)


def _bodies(tree: ast.AST) -> Iterator[list[ast.stmt]]:
    for node in ast.walk(tree):
        for name in ("body", "orelse", "finalbody"):
            body = getattr(node, name, None)
            if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
                yield body


def _span(stmt: ast.stmt) -> tuple[int, int]:
    """1-based first and last line of ``stmt``, decorators included."""
    first = min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", []))])
    return first, stmt.end_lineno or stmt.lineno


def adjacent_edit(py: PyFile) -> Iterator[Mutant]:
    """Each run of whole statements gold inserted in a function, moved past the next statement of its
    block (or before the previous one) when that statement does not end the block's flow."""
    old, new = file_lines(py.old), file_lines(py.new)
    try:
        tree = parse(py.new)
    except SyntaxError:
        return
    inserted = [(j1 + 1, j2) for i1, i2, j1, j2 in change_blocks(old, new) if i1 == i2 and j2 > j1]
    moves = []
    for body in _bodies(tree):
        for a, b in inserted:
            run = [k for k, s in enumerate(body) if a <= _span(s)[0] and _span(s)[1] <= b]
            if not run or run != list(range(run[0], run[-1] + 1)) or py.innermost_function(a) is None:
                continue
            first, last = _span(body[run[0]])[0], _span(body[run[-1]])[1]
            if any(line.strip() and not line.strip().startswith("#") for line in new[a - 1 : first - 1] + new[last:b]):
                continue  # the block holds more than these statements
            after = body[run[-1] + 1] if run[-1] + 1 < len(body) else None
            if after is not None and not isinstance(after, _ENDS_FLOW):
                moves.append((first, last, _span(after)[1], "after"))
            before = body[run[0] - 1] if run[0] > 0 else None
            docstring = isinstance(before, ast.Expr) and isinstance(before.value, ast.Constant) and isinstance(before.value.value, str)
            if before is not None and not docstring:
                moves.append((first, last, _span(before)[0] - 1, "before"))
    for first, last, to, where in spread(moves, lambda m: m[0]):
        what = f"gold's statements at {py.path}:{first}-{last} moved {where} the next statement ({'below' if where == 'after' else 'above'} line {to if where == 'after' else to + 1})"

        def build(first: int = first, last: int = last, to: int = to) -> str | None:
            moved, rest = new[first - 1 : last], new[: first - 1] + new[last:]
            at = to - (last - first + 1) if to >= last else to
            code = "".join(rest[:at] + moved + rest[at:])
            return code if parses(code) else None

        yield "adjacent_edit", what, build
