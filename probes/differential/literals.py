"""Variant programs: one literal of a test's program replaced by values worth trying."""

from __future__ import annotations

import ast
import dataclasses
import itertools
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence

from harness.pyast import literal_eval, parse
from probes.replay import Program, Step, draw

PER_LITERAL = 10  # values tried in place of one literal
HYPOTHESIS_EXAMPLES = 4
_CODE_SPAN = re.compile(r"`([^`\n]{1,40})`")
_CODE_BLOCK = re.compile(r"```[a-z]*\n(.*?)```", re.DOTALL)
_TOKEN = re.compile(r"\b(?:[A-Z]{2,6}|\d+(?:\.\d+)?)\b")


def pool(issue: str, sources: Iterable[str]) -> list[object]:
    """Values a literal may take: constants of the hidden tests, and values the issue text states (code
    spans, constants of its code blocks, short upper-case tokens and numbers)."""
    found: dict[tuple[type, object], None] = {}

    def add(value: object) -> None:
        if isinstance(value, (str, int, float)) and not isinstance(value, bool):
            if not isinstance(value, str) or len(value) <= 60:
                found[(type(value), value)] = None

    for text in [*sources, *_CODE_BLOCK.findall(issue)]:
        try:
            tree = parse(text)
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant):
                add(node.value)
    for span in _CODE_SPAN.findall(issue):
        add(span)
        try:
            add(literal_eval(span))
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            pass
    for token in _TOKEN.findall(issue):
        add(token)
        if token[0].isdigit():
            add(float(token) if "." in token else int(token))
    return [value for _, value in found]


def _shape(text: str) -> str:
    return re.sub(r"[a-z]", "a", re.sub(r"[A-Z]", "A", re.sub(r"\d", "9", text)))


def _digit_neighbours(text: str) -> list[str]:
    out = []
    for m in re.finditer(r"\d+", text):
        n = int(m.group())
        for v in (n + 1, n - 1):
            if v >= 0:
                out.append(text[: m.start()] + str(v) + text[m.end() :])
    return out


def _hypothesis(value: object) -> list[object]:
    """A few Hypothesis-generated values of the literal's type."""
    from hypothesis import strategies as st

    if isinstance(value, str):
        alphabet = "".join(sorted(set(value))) or "a"
        strategy = st.text(alphabet=st.sampled_from(alphabet + "0123456789"), min_size=0, max_size=len(value) + 3)
    elif isinstance(value, int):
        strategy = st.integers(min_value=-2 * abs(value) - 10, max_value=2 * abs(value) + 10)
    else:
        strategy = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e6, max_value=1e6)
    return draw(strategy, HYPOTHESIS_EXAMPLES * 3)


def alternatives_for(value: object, values: Sequence[object]) -> list[tuple[object, str]]:
    """Values tried in place of a literal, each with where it came from, best first."""
    out: list[tuple[object, str]] = []
    same_type = [v for v in values if type(v) is type(value)]
    if isinstance(value, str):
        out += [(v, "neighbour") for v in _digit_neighbours(value)]
        out += [(v, "issue or tests, same shape") for v in same_type if _shape(v) == _shape(value)]  # type: ignore[arg-type]
        out += [(value.swapcase(), "case"), ("", "boundary")]
        out += [(v, "issue or tests") for v in same_type]
    elif isinstance(value, int):
        out += [(v, "neighbour") for v in (value + 1, value - 1)]
        out += [(v, "boundary") for v in (0, 1, -1, -value, 2 * value + 1)]
        out += [(v, "issue or tests") for v in same_type]
    else:
        out += [(v, "neighbour") for v in (value + 1, value - 1, value + 0.5)]
        out += [(v, "boundary") for v in (0.0, -value)]
        out += [(v, "issue or tests") for v in same_type]

    def drawn() -> Iterator[tuple[object, str]]:  # last, and drawn only when the others leave room
        for v in _hypothesis(value):
            yield v, "hypothesis"

    seen, unique = {(type(value), value)}, []
    for v, how in itertools.chain(out, drawn()):
        if len(unique) >= PER_LITERAL:
            break
        if (type(v), v) not in seen:
            seen.add((type(v), v))
            unique.append((v, how))
    return unique


def _number(node: ast.AST) -> ast.Constant | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node
    return None


def _negative(node: ast.AST) -> bool:
    """``-1`` is one literal, so its neighbours are 0 and -2, not ``-0`` and ``-2``."""
    return isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and _number(node.operand) is not None


def literal_value(node: ast.AST) -> object:
    if _negative(node):
        return -node.operand.value  # type: ignore[attr-defined]
    return node.value  # type: ignore[attr-defined]


def constant(value: object) -> ast.expr:
    """The literal for ``value``; a negative number as a unary minus so it unparses in parentheses
    where it needs them (``(-2).bit_length()``)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
        return ast.UnaryOp(ast.USub(), ast.Constant(-value))
    return ast.Constant(value)


def _literal_nodes(tree: ast.AST, names: Mapping[str, object]) -> list[ast.AST]:
    out: list[ast.AST] = []
    signed = set()
    for node in ast.walk(tree):  # breadth first: a unary minus comes before its operand
        if _negative(node):
            signed.add(id(node.operand))  # type: ignore[attr-defined]
            out.append(node)
        elif isinstance(node, ast.Constant) and isinstance(node.value, (str, int, float)) and not isinstance(node.value, bool):
            if id(node) not in signed and not (isinstance(node.value, str) and len(node.value) > 200):
                out.append(node)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in names:
            out.append(node)
        elif isinstance(node, (ast.List, ast.Tuple)) and node.elts and isinstance(node.ctx, ast.Load):
            out.append(node)
    return out


def resized(node: ast.List | ast.Tuple) -> list[tuple[ast.expr, str]]:
    """A container literal one element shorter (its last, its first), one longer (its last again) and
    empty: where the code compares lengths (two lists that must match), the sizes the tests never pair."""
    kind, elts = type(node), list(node.elts)
    sizes = [(elts[:-1], "its last element dropped"), (elts[1:], "its first element dropped"), ([*elts, elts[-1]], "its last element twice"),
             ([], "empty")]  # fmt: skip
    seen, out = set(), []
    for new, how in sizes:
        text = ast.unparse(kind(new, ast.Load()))
        if text not in seen and text != ast.unparse(node):
            seen.add(text)
            out.append((kind(new, ast.Load()), how))
    return out


def _replace(src: str, index: int, names: Mapping[str, object], new: ast.expr) -> str:
    tree = parse(src)
    target = _literal_nodes(tree, names)[index]

    class Swap(ast.NodeTransformer):
        def generic_visit(self, node: ast.AST) -> ast.AST:
            return new if node is target else super().generic_visit(node)

    return ast.unparse(Swap().visit(tree))


def variants(
    base: Program, reached: Sequence[bool], values: Sequence[object], alternatives: Mapping[str, list[list[str]]], budget: int
) -> list[Program]:
    """Programs that each replace one literal of ``base`` in a step up to the last one that reached
    gold's changed code; steps that reached it first, then the setup before them."""
    reaching = [i for i, r in enumerate(reached) if r]
    if not reaching:
        return []
    last = max(reaching)
    order = [i for i in reaching] + [i for i in range(last + 1) if i not in reaching and base.steps[i].kind == "exec"]
    sites: list[list[Program]] = []
    for i in order:
        step = base.steps[i]
        nodes = _literal_nodes(parse(step.src), alternatives)
        for k, node in enumerate(nodes):
            tries: list[Program] = []
            if isinstance(node, ast.Name):
                for module, attr in alternatives[node.id]:
                    tries.append(_variant(base, i, step, k, alternatives, ast.Name(attr), f"{node.id} -> {attr} (same type, {module})",
                                          [f"from {module} import {attr}"]))  # fmt: skip
            elif isinstance(node, (ast.List, ast.Tuple)):
                for new, how in resized(node):
                    tries.append(_variant(base, i, step, k, alternatives, new, f"{ast.unparse(node)[:40]} -> {ast.unparse(new)[:40]} ({how})", []))
            else:
                old = literal_value(node)
                for value, how in alternatives_for(old, values):
                    variant = _variant(base, i, step, k, alternatives, constant(value), f"{old!r} -> {value!r} ({how})", [])
                    if isinstance(old, str) and isinstance(value, str):
                        variant.renamed = (old, value)
                    tries.append(variant)
            sites.append(tries)
    return round_robin(sites, budget)


def round_robin(sites: list[list[Program]], budget: int) -> list[Program]:
    """Up to ``budget`` programs, one of each site's in turn: every literal gets its best values first."""
    out: list[Program] = []
    while any(sites) and len(out) < budget:
        for tries in sites:
            if tries and len(out) < budget:
                out.append(tries.pop(0))
        sites = [t for t in sites if t]
    return out


def _variant(base: Program, i: int, step: Step, k: int, names: Mapping[str, object], new: ast.expr, how: str, imports: list[str]) -> Program:
    steps = list(base.steps)
    steps[i] = Step(step.kind, _replace(step.src, k, names, new), step.assertion)
    key = f"{base.test_id}#{i}.{k}:{how}"
    return dataclasses.replace(base, key=key, steps=steps, how=how, imports=[*base.imports, *imports], base_key=base.key)


def case_variants(base: Program, params: Mapping[str, str], values: Sequence[object], budget: int) -> list[Program]:
    """Programs of a parametrized case with one of its parameters (``params``: each as source, as the
    driver read it) bound to a value worth trying before the test's statements run: the inputs of a
    parametrized test are its parameters, not the literals of its body."""
    sites: list[list[Program]] = []
    for name, src in params.items():
        try:
            old = literal_eval(src) if src else None
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if not isinstance(old, (str, int, float)) or isinstance(old, bool):
            continue
        tries = []
        for value, how in alternatives_for(old, values):
            variant = dataclasses.replace(base, key=f"{base.test_id}#{name}:{value!r}", how=f"{name}={old!r} -> {value!r} ({how})",
                                          binding=(name, ast.unparse(constant(value))), base_key=base.key)  # fmt: skip
            if isinstance(old, str) and isinstance(value, str):
                variant.renamed = (old, value)
            tries.append(variant)
        sites.append(tries)
    return round_robin(sites, budget)
