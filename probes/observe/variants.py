"""Calls varied from the seeds: one argument at a time, and arguments retyped, renested, rebuilt or missing keys."""

from __future__ import annotations

import ast
from collections.abc import Collection, Mapping, Sequence

from harness.pyast import parse
from probes.observe.calls import _NO, Call, _literal, slot_name
from probes.observe.values import alternatives

REBUILT = 3  # variations of one literal inside an argument written as a call


def variations(seeds: Sequence[Call], extra_values: Sequence[object], none_ok: Mapping[str, set[str]], budget: int,
               first: Collection[str] = (), endings: Sequence[str] = ()) -> list[Call]:  # fmt: skip
    """Calls that each change one argument of one seed (see ``alternatives``): every variation of the
    seeds from the tests in ``first`` (the FAIL_TO_PASS tests: the issue's own cases), then
    round-robin over the other seeds' arguments so each gets its best values first. ``none_ok``:
    target -> names or positions (as strings) whose default is ``None``."""
    seen_by_site: dict[tuple[str, str], list[object]] = {}
    for seed in seeds:
        for i, src in enumerate(seed.args):
            if (v := _literal(src)) is not _NO:
                seen_by_site.setdefault((seed.target, str(i)), []).append(v)
        for k, src in seed.kwargs:
            if (v := _literal(src)) is not _NO:
                seen_by_site.setdefault((seed.target, k), []).append(v)
    sites: list[list[Call]] = []
    for seed in seeds:
        slots = [(str(i), src) for i, src in enumerate(seed.args)] + list(seed.kwargs)
        for slot, src in slots:
            value = _literal(src)
            if value is _NO:
                continue
            at_site = seen_by_site.get((seed.target, slot), [])
            seen = [*at_site, *extra_values]
            # None where the signature's default is None, or where the tests pass values of several
            # types (markupsafe's ``Markup % arg``: a str, an int, a tuple; None takes another branch)
            nullable = slot in none_ok.get(seed.target.partition(":")[2], set()) or len({type(v) for v in at_site if v is not None}) > 1
            tries = []
            for new, how in alternatives(value, seen, nullable, endings):
                text = repr(new)
                if _literal(text) is _NO:
                    continue
                args = tuple(text if str(i) == slot else a for i, a in enumerate(seed.args))
                kwargs = tuple((k, text if k == slot else v) for k, v in seed.kwargs)
                tries.append(Call(seed.target, seed.func, args, kwargs, seed.imports, seed.test_id, "variant",
                                  f"{seed.src} with {slot_name(slot)} {src} -> {text} ({how})", seed.consume))  # fmt: skip
            sites.append(tries)
        sites.append(retyped(seed) + renested(seed) + missing_keys(seed) + rebuilt(seed))
    out: list[Call] = []
    known = {s.src for s in seeds}
    for tries in [t for t in sites if t and t[0].test_id in first]:
        for call in tries:
            if call.src not in known and len(out) < budget:
                known.add(call.src)
                out.append(call)
    sites = [t for t in sites if t and t[0].test_id not in first]
    while any(sites) and len(out) < budget:
        for tries in sites:
            while tries and len(out) < budget:
                call = tries.pop(0)
                if call.src not in known:
                    known.add(call.src)
                    out.append(call)
                    break
        sites = [t for t in sites if t]
    return out


def _outer(src: str) -> str:
    """The callable of an argument written as a call (``complement`` of ``complement({'a'})``), else ''."""
    try:
        node = parse(src, mode="eval").body
    except (SyntaxError, ValueError):
        return ""
    return ast.unparse(node.func) if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)) else ""


def renested(seed: Call) -> list[Call]:
    """Arguments built by a call (an object no literal can write) nested once more in that call: each
    alone, then all together (``a >= b`` of two complement sets -> of two complements of complements:
    the branch where both are the other kind)."""
    slots = [(str(i), src) for i, src in enumerate(seed.args)] + list(seed.kwargs)
    built = {slot: f"{outer}({src})" for slot, src in slots if (outer := _outer(src)) and _literal(src) is _NO}
    choices = [{slot: new} for slot, new in built.items()] + ([built] if len(built) > 1 else [])
    out = []
    for change in choices:
        args = tuple(change.get(str(i), a) for i, a in enumerate(seed.args))
        kwargs = tuple((k, change.get(k, v)) for k, v in seed.kwargs)
        which = ", ".join(slot_name(slot) for slot in change)
        out.append(Call(seed.target, seed.func, args, kwargs, seed.imports, seed.test_id, "variant",
                        f"{seed.src} with {which} nested in its own call", seed.consume))  # fmt: skip
    return out


def rebuilt(seed: Call) -> list[Call]:
    """Arguments built by a call from literals (``numeric_range(0, 0)``, an object's repr or the call
    that built it) with one of those literals varied (``numeric_range(1, 0)``): the object in another
    state of the same shape (an empty range that does not start at 0), which no variation of the
    seed's own literal arguments reaches."""
    out = []
    slots = [(str(i), src) for i, src in enumerate(seed.args)] + list(seed.kwargs)
    for slot, src in slots:
        if _literal(src) is not _NO or not _outer(src):
            continue
        node = parse(src, mode="eval").body
        for k, inner in enumerate(node.args):
            value = _literal(ast.unparse(inner))
            if value is _NO or isinstance(value, (dict, list, tuple, set)):
                continue
            for new, how in alternatives(value, [], False)[:REBUILT]:
                changed = ast.Call(node.func, [parse(repr(new), mode="eval").body if j == k else a for j, a in enumerate(node.args)], node.keywords)
                text = ast.unparse(changed)
                args = tuple(text if str(i) == slot else a for i, a in enumerate(seed.args))
                kwargs = tuple((name, text if name == slot else v) for name, v in seed.kwargs)
                out.append(Call(seed.target, seed.func, args, kwargs, seed.imports, seed.test_id, "variant",
                                f"{seed.src} with {slot_name(slot)} {src} -> {text} ({how}, inside its building call)", seed.consume))  # fmt: skip
    return out


def _other_type(value: object) -> object:
    """An equal value of another type (``0`` -> ``0.0``, a list -> a tuple), or ``_NO``."""
    if isinstance(value, bool):
        return _NO
    if isinstance(value, int):
        return float(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, (list, tuple)):
        return (tuple if isinstance(value, list) else list)(value)
    return _NO


def retyped(seed: Call) -> list[Call]:
    """The seed with every literal argument an equal value of another type at once: a rule keyed on
    an argument's type or its text (``str(maxsplit) in ('0', ...)``) next to code that converts it
    (``int(maxsplit)``, ``list(src)``) behaves otherwise only where several arguments change together."""
    def other(src: str) -> str:
        value = _literal(src)
        new = _other_type(value) if value is not _NO else _NO
        return repr(new) if new is not _NO else src

    args = tuple(other(a) for a in seed.args)
    kwargs = tuple((k, other(v)) for k, v in seed.kwargs)
    if args == seed.args and kwargs == seed.kwargs:
        return []
    return [Call(seed.target, seed.func, args, kwargs, seed.imports, seed.test_id, "variant",
                 f"{seed.src} with every argument an equal value of another type", seed.consume)]  # fmt: skip


def missing_keys(seed: Call) -> list[Call]:
    """Each dict argument as a ``defaultdict(str)``, with its items and without its first one: a
    mapping that answers missing keys itself, which code that copies it into a plain dict (``**map``)
    loses (markupsafe's ``format_map``)."""
    out = []
    slots = [(str(i), src) for i, src in enumerate(seed.args)] + list(seed.kwargs)
    for slot, src in slots:
        value = _literal(src)
        if not isinstance(value, dict) or not value:
            continue
        for items, how in ((value, "as a defaultdict(str)"), (dict(list(value.items())[1:]), "as a defaultdict(str) without its first key")):
            text = f"defaultdict(str, {items!r})"
            args = tuple(text if str(i) == slot else a for i, a in enumerate(seed.args))
            kwargs = tuple((k, text if k == slot else v) for k, v in seed.kwargs)
            out.append(Call(seed.target, seed.func, args, kwargs, (*seed.imports, "from collections import defaultdict"), seed.test_id,
                            "variant", f"{seed.src} with {slot_name(slot)} {how}", seed.consume))  # fmt: skip
    return out
