"""``special_case``: gold's new code guarded by ``if str(<name>) in (<literals of the FAIL_TO_PASS
tests>):`` with the buggy code in the ``else`` branch, i.e. a patch that only fixes the exact inputs the
tests use. Each change block is guarded alone, and a hunk of several blocks also as a whole (its
blocks may need each other: a name bound in one and read in the next).

Limits: literals are read statically from the FAIL_TO_PASS test functions (and their decorators); the
guard compares ``str(name)`` of each parameter of the enclosing function and of each local gold's new
code reads, so it only "special-cases" an input whose string form equals a test literal (a str or
number argument, or an object whose ``__str__`` is such a literal, e.g. a currency code). Inputs the
tests build indirectly (computed values, objects with a verbose ``__str__``) are never matched, and the
guard then always falls back to the buggy code.
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Iterator, Mapping, Sequence

from harness.pyast import parse
from probes.pycst import PyFile
from probes.workspace import change_blocks, file_lines, hunk_groups, parses

MAX_LITERALS = 64  # literals in one special_case guard

def test_literals(sources: Mapping[str, str], test_ids: Sequence[str]) -> list[str]:
    """String forms of the constants in the FAIL_TO_PASS test functions (and their decorators),
    plus the whitespace/comma separated words of each string constant, in order of appearance."""
    out: dict[str, None] = {}
    for test_id in test_ids:
        file, _, rest = test_id.partition("::")
        if not rest or file not in sources:
            continue
        parts = [p.split("[", 1)[0] for p in rest.split("::")]
        try:
            tree = parse(sources[file])
        except SyntaxError:
            continue
        fn = find_def(tree, parts)
        if fn is None:
            continue
        docstring = ast.get_docstring(fn, clean=False)
        for node in ast.walk(fn):
            if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
                if isinstance(node.operand.value, (int, float)) and not isinstance(node.operand.value, bool):
                    out[str(-node.operand.value)] = None
            if not isinstance(node, ast.Constant) or isinstance(node.value, bool) or node.value is None:
                continue
            if isinstance(node.value, str):
                if node.value == docstring or len(node.value) > 200:
                    continue
                out[node.value] = None
                for word in re.split(r"[\s,]+", node.value):
                    if word:
                        out[word] = None
            elif isinstance(node.value, (int, float)):
                out[str(node.value)] = None
    return list(out)[:MAX_LITERALS]


def find_def(tree: ast.AST, parts: Sequence[str]) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    scope: list[ast.stmt] = list(getattr(tree, "body", []))
    for i, name in enumerate(parts):
        match = next((n for n in scope if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name), None)
        if match is None:
            return None
        if i == len(parts) - 1:
            return match if isinstance(match, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
        scope = match.body
    return None


def _segment_ok(lines: list[str]) -> tuple[str, str] | None:
    """(base indentation, dedented text) when ``lines`` are complete statements at one indentation."""
    body = [line for line in lines if line.strip()]
    if not body:
        return None
    base = body[0][: len(body[0]) - len(body[0].lstrip())]
    if any(not line.startswith(base) for line in body):
        return None
    text = textwrap.dedent("".join(lines))
    try:
        tree = parse(text)
    except (SyntaxError, ValueError):
        return None
    if not tree.body or any(isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) for s in tree.body):
        return None
    for node in ast.walk(tree):  # re-indenting a multi-line string would change its value
        if isinstance(node, (ast.Constant, ast.JoinedStr)) and getattr(node, "end_lineno", node.lineno) != node.lineno:
            return None
    return base, text


def special_cases(py: PyFile, literals: Sequence[str]) -> Iterator[tuple[str, str, str]]:
    if not literals:
        return
    old_l, new_l = file_lines(py.old), file_lines(py.new)
    try:
        new_tree = parse(py.new)
    except SyntaxError:
        return
    guard_values = "(" + ", ".join(repr(v) for v in literals) + ("," if len(literals) == 1 else "") + ")"
    guarded: set[tuple[int, int, int, int]] = set()
    # a hunk none of whose blocks could be guarded alone (a name one binds, the next reads) is guarded
    # whole; the hunks come after every block, so the blocks see the same guarded set
    hunks = [h for h in hunk_groups(old_l, new_l) if len(h) > 1]
    for block, what in [*((b, "change") for b in change_blocks(old_l, new_l)), *((h, "hunk") for h in hunks)]:
        if what == "hunk":
            if block & guarded:
                continue
            block = (min(b[0] for b in block), max(b[1] for b in block), min(b[2] for b in block), max(b[3] for b in block))
        i1, i2, j1, j2 = block
        if j2 == j1:
            continue  # a pure deletion has no new logic to guard
        found = _expand(old_l, new_l, i1, i2, j1, j2)
        if found is None:
            continue
        i1, i2, j1, j2, base, new_text = found
        fn = py.innermost_function(j1 + 1)
        if fn is None:
            continue
        names = _guard_names(new_tree, py.start(fn), j1 + 1, new_text, attributes=what == "hunk")
        unit = "\t" if "\t" in base else "    "
        for name in names[:3]:
            guard = f"{base}if str({name}) in {guard_values}:\n"
            then = [unit + line if line.strip() else line for line in new_l[j1:j2]]
            orelse = [unit + line if line.strip() else line for line in old_l[i1:i2]] if i2 > i1 else [f"{base}{unit}pass\n"]
            if not any(line.strip() for line in orelse):
                orelse = [f"{base}{unit}pass\n"]
            lines = [*new_l[:j1], guard, *then, f"{base}else:\n", *orelse, *new_l[j2:]]
            code = "".join(lines)
            if parses(code):
                guarded.add(block)
                yield "special_case", f"gold's {what} at {py.path}:{j1 + 1} only when str({name}) is a literal of the tests, else the old code", code


def _expand(old: list[str], new: list[str], i1: int, i2: int, j1: int, j2: int) -> tuple[int, int, int, int, str, str] | None:
    """Grow a change block by equal context on both sides until old and new are whole statements."""
    for before in range(4):
        for after in range(4):
            a1, b1, a2, b2 = i1 - before, j1 - before, i2 + after, j2 + after
            if min(a1, b1) < 0 or a2 > len(old) or b2 > len(new):
                continue
            if old[a1:i1] != new[b1:j1] or old[i2:a2] != new[j2:b2]:
                continue
            n = _segment_ok(new[b1:b2])
            if n is None or _opens_block(new, b2, n[0]):
                continue
            if a2 > a1:
                o = _segment_ok(old[a1:a2])
                if o is None or o[0] != n[0] or _opens_block(old, a2, o[0]):
                    continue
            return a1, a2, b1, b2, n[0], n[1]
    return None


def _opens_block(lines: list[str], end: int, base: str) -> bool:
    """The code after a segment is indented deeper than it: the segment ends inside a block it
    opened (a statement cut in the middle of its body), so wrapping it would move that body."""
    for line in lines[end:]:
        if line.strip():
            return len(line) - len(line.lstrip()) > len(base)
    return False


def _guard_names(tree: ast.Module, fn_line: int, seg_line: int, seg_text: str, attributes: bool = False) -> list[str]:
    """Names a guard may test: locals of the enclosing function that gold's new code reads (and that
    are bound before it), then the function's parameters; with ``attributes``, where there are none
    (a method of ``self`` alone), the attributes of ``self`` the new code reads and does not call."""
    fn = next(
        (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
         and min([n.lineno, *(d.lineno for d in n.decorator_list)]) == fn_line),
        None,
    )  # fmt: skip
    if fn is None:
        return []
    a = fn.args
    params = [p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs, *(x for x in (a.vararg, a.kwarg) if x)]]
    params = [p for p in params if p not in ("self", "cls")]
    earlier = {
        n.id for n in ast.walk(fn)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.lineno < seg_line
    }  # fmt: skip
    read = [n.id for n in ast.walk(parse(seg_text)) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]
    ordered = [n for n in dict.fromkeys(read) if n in earlier or n in params] + params
    names = [n for n in dict.fromkeys(ordered) if n not in ("self", "cls")]
    if names or not attributes:
        return names
    seg = parse(seg_text)
    called = {id(n.func) for n in ast.walk(seg) if isinstance(n, ast.Call)}
    return list(dict.fromkeys(
        f"self.{n.attr}" for n in ast.walk(seg)
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self"
        and isinstance(n.ctx, ast.Load) and id(n) not in called
    ))  # fmt: skip
