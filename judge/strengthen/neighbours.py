"""An input's neighbourhood: close variations of its call and of the tests' own cases, replayed on every tree, kept where gold differs."""

from __future__ import annotations

import ast
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.pyast import parse
from harness.records import DistinguishingInput
from judge.strengthen.cases import _char, _same_callee
from judge.strengthen.validation import Context
from judge.strengthen.writing import _NOT_LITERAL, _dotted, _literal_source, implementation_details, model_free_body, split_test_id
from probes.replay import Program, Step, behaviour, run_programs
from probes.observe import alternatives, expected_exceptions, in_contract, slot_name
from probes.special_case import find_def


MAX_NEIGHBOURS = 24  # variations of one distinguishing input replayed on every tree
KEEP_NEIGHBOURS = 8  # of those, asserted beside the input
MAX_SEEDS = 8  # calls of the input's function that its test and the FAIL_TO_PASS tests make, varied too
SEED_NEIGHBOURS = 32  # variations of one such call replayed on every tree (of the arguments the cases vary)
KEEP_SEED_NEIGHBOURS = 16  # of those, asserted beside the input (each kind of variation before a second of a kind)
NEIGHBOUR_TIMEOUT_S = 300.0  # one tree's replay of every variation
# variations too far from the input to be its neighbourhood: what gold does on a string doubled or
# spliced with another (pyiso8601 reads one doubled date as a -08:00 offset) is no behaviour the issue
# states, and a correct fix unlike gold may well reject it
FAR_VARIATIONS = ("doubled", "spliced with another seen value", "nested in another seen value", "Hypothesis, inferred from the values seen")


_WRAPPERS = ("list", "tuple", "sorted", "set", "dict", "str")


def _calls(src: str) -> tuple[ast.Call, ast.Call] | None:
    """(the whole call, the call under test) of an input's expression: the one inside ``list(...)`` or
    ``str(...)`` where the input wraps it, else the same call twice; None for anything but a call."""
    try:
        body = parse(src).body
    except (SyntaxError, ValueError):
        return None
    if len(body) != 1 or not isinstance(body[0], ast.Expr) or not isinstance(body[0].value, ast.Call):
        return None
    outer = body[0].value
    inner = outer.args[0] if len(outer.args) == 1 and not outer.keywords and isinstance(outer.args[0], ast.Call) else None
    return outer, inner if inner is not None and _dotted(outer.func) in _WRAPPERS else outer


def neighbour_calls(d: DistinguishingInput, limit: int = MAX_NEIGHBOURS, endings: Sequence[str] = (),
                    only: Collection[str] = ()) -> list[tuple[str, str]]:  # fmt: skip
    """(how, call) for variations of the distinguishing input's call that each change one literal
    argument of the call under test (inside ``list(...)`` or ``str(...)``, kept around it) to a
    close value: a boundary number, an empty or one-element container, a string one shorter or with a
    longer run of digits, its ending replaced by a short literal of the code gold changed
    (``endings``; ``probes.observe.alternatives`` but ``FAR_VARIATIONS``), then None and another plain
    type (``other_types``), round-robin over the arguments (``only`` these slots, where given) so each
    gets its closest first. A string that differs only in the case of its letters is no neighbour: a
    mixed case the tests never use is gold's accident (boltons 1e61524's correct alternative lowercases
    ``'BOSs'``, gold returns it as it is). A wrong fix unlike the survivor (a guard off by one
    elsewhere, a special case of the same input) tends to differ from gold next to where the survivor
    does."""
    found = _calls(d.call)
    if found is None:
        return []
    call = found[1]
    slots = [(str(i), a) for i, a in enumerate(call.args)] + [(k.arg, k.value) for k in call.keywords if k.arg]
    values = {slot: v for slot, node in slots if (v := _literal_source(ast.unparse(node))) is not _NOT_LITERAL}
    lines = d.call.splitlines(keepends=True)
    sites: list[list[tuple[str, str]]] = []
    for slot, node in slots:
        if slot not in values or (only and slot not in only):
            continue
        start = _char(lines, node.lineno, node.col_offset)
        end = _char(lines, node.end_lineno or node.lineno, node.end_col_offset or 0)
        seen = [v for s, v in values.items() if s != slot]
        tries = []
        value = values[slot]
        for new, how in [*alternatives(value, seen, False, endings), *other_types(value)]:
            text = repr(new)
            if isinstance(new, str) and isinstance(value, str) and new.lower() == value.lower():
                continue
            if how not in FAR_VARIATIONS and _literal_source(text) is not _NOT_LITERAL:
                tries.append((f"{d.call} with {slot_name(slot)} {d.call[start:end]} -> {text} ({how})", d.call[:start] + text + d.call[end:]))
        sites.append(tries)
    out: dict[str, str] = {}
    while any(sites) and len(out) < limit:
        for tries in sites:
            if tries and len(out) < limit:
                how, src = tries.pop(0)
                if src != d.call:
                    out.setdefault(src, how)
        sites = [t for t in sites if t]
    return [(how, src) for src, how in out.items()]


def other_types(value: object) -> list[tuple[object, str]]:
    """None and a value of another plain type in place of ``value``: a fix that handles only the types
    the tests pass (``Markup('<em></em>') % 42`` raises, ``% None`` stays silent) differs there. Gold's
    answer on a type the tests never pass counts only where the issue states it: an exception the
    issue names (``pick_neighbours``); what gold happens to return for ``sub(None)`` or raise for
    ``chunked('ABC', '')`` is no contract, and correct fixes differ there (boltons 435774e, more-itertools
    0e6acdf: their alternatives failed such neighbours)."""
    out: list[tuple[object, str]] = [] if value is None else [(None, OTHER_TYPES[0])]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return [*out, ("", OTHER_TYPES[1])]
    return [*out, (0, OTHER_TYPES[2])]


OTHER_TYPES = ("None in its place", "a string in its place", "a number in its place")


def _program(key: str, d: DistinguishingInput, call: str, how: str, sources: dict[str, str]) -> Program:
    """A standalone call in the namespace of the test the input came from (its module, its class with
    setUp run), after the input's imports: the names the input's call uses are bound as in that test."""
    file, parts = split_test_id(d.test_id)
    in_test = file in sources
    return Program(key=key, test_id=d.test_id, test_file=file if in_test else "", cls=parts[-2] if in_test and len(parts) > 1 else None,
                   method=parts[-1] if in_test else "", steps=[*(Step("exec", line) for line in d.setup), Step("observe", call, True)],
                   how=how)  # fmt: skip


def pick_neighbours(d: DistinguishingInput, gold: Sequence[dict | None], others: Sequence[dict | None], survivors: int,
                    expected: set[str], how: str, call: str, named: Collection[str] = ()) -> tuple[int, DistinguishingInput] | None:  # fmt: skip
    """The neighbour ``call`` as an input to assert, with its rank (0: a survivor behaves otherwise, 1:
    only the buggy tree does), or None: gold answered it differently in its two replays (time,
    randomness; hash order shows in ``gold_stable``, whose pytest runs each draw a hash seed), outside
    the contract (an exception type no test or the issue expects, a value without an evaluable repr,
    a full-precision float; for an argument of another type, anything but an exception the issue
    names, ``named``), or every other tree behaves alike (``others``: buggy first, then the survivors;
    the last ``survivors`` of them)."""
    if any(g is None for g in gold):
        return None
    first = behaviour(gold[0])
    if any(behaviour(g) != first for g in gold[1:]) or not in_contract(first, expected):
        return None
    if how.endswith(tuple(f"({h})" for h in OTHER_TYPES)) and (not first.raised or first.raised.rpartition(".")[2] not in named):
        return None
    literal = (gold[0] or {}).get("literal", "") or ""
    differs = [i for i, o in enumerate(others)
               if o is not None and (behaviour(o).value, behaviour(o).raised) != (first.value, first.raised) and behaviour(o).raised != "timeout"]
    if not differs:
        return None
    rank = 0 if any(i >= len(others) - survivors for i in differs) else 1
    other = behaviour(others[differs[-1] if rank == 0 else differs[0]])
    v = d.model_copy(update={"call": call, "how": how, "gold": first, "other": other, "literal": literal, "source": "variant"})
    statements = model_free_body(v, unittest=False, pytest_imported=True)
    if statements is None or implementation_details("\n".join(statements)):
        return None
    return rank, v


def _replay(ctx: Context, tree: Path, patch: str, progs: Sequence[Program]) -> dict[str, dict | None]:
    """What each standalone call did on the buggy tree with ``patch``, by key (None: not reached)."""
    paths = ["src"] if (tree / "src").is_dir() else []
    got = run_programs(ctx.task, ctx.backend, patch, progs, [], paths=paths, timeout_s=NEIGHBOUR_TIMEOUT_S, program_timeout_s=1.0)
    return {p.key: next((o for o in got.results.get(p.key, []) if o.get("step") == len(p.steps) - 1), None) for p in progs}


def unstated(d: DistinguishingInput) -> bool:
    """Whether gold's value on the input cannot be written as a check: it returned an object whose
    repr does not evaluate (``datetime(..., tzinfo=<iso8601.iso8601.Utc object>)``)."""
    return not d.gold.raised and not d.call_is_statement and model_free_body(d, unittest=False, pytest_imported=True) is None


def restate_as_text(ctx: Context, tree: Path) -> dict[str, DistinguishingInput]:
    """For each survivor whose input is ``unstated``, by probe id: the input compared as ``str(call)``
    (a datetime's text is its ISO form), where gold's text is the same in two replays and the
    survivor's is not, so a check on the text still tells them apart."""
    inputs = [(p, d) for p in ctx.survivors if (d := p.distinguishing) is not None and unstated(d)]
    progs = [_program(f"s{i}", d, f"str({d.call})", d.how, ctx.sources) for i, (_, d) in enumerate(inputs)]
    if not progs:
        return {}
    gold = [_replay(ctx, tree, ctx.task.answer.gold_patch, progs), _replay(ctx, tree, ctx.task.answer.gold_patch, progs)]
    out = {}
    for (probe, d), prog in zip(inputs, progs, strict=True):
        g, again = gold[0][prog.key], gold[1][prog.key]
        o = _replay(ctx, tree, probe.patch, [prog])[prog.key]
        if g is None or o is None or not g.get("literal") or behaviour(g) != behaviour(again) or behaviour(o) == behaviour(g):
            continue
        out[probe.probe_id] = d.model_copy(update={"call": prog.steps[-1].src, "gold": behaviour(g), "other": behaviour(o), "literal": g["literal"],
                                                   "how": f"{d.how}; compared as text (its repr does not evaluate)"})  # fmt: skip
    return out


def seed_calls(d: DistinguishingInput, sources: dict[str, str], tests: Sequence[str], limit: int = MAX_SEEDS) -> list[str]:
    """The calls of the input's function with literal arguments that its own test and the
    FAIL_TO_PASS tests make (``pluralize('box')``, ``parse.parse('Pi = {:+.7f}', ...)``), written as
    the input writes its call: its callee (bound by its setup), inside its ``list(...)`` or
    ``str(...)``. These are the cases the issue's tests state; their neighbours on which gold and the
    buggy tree differ are the class of behaviour gold changes, where a fix that special-cases the
    tests' cases (boltons 8c3fc28's shortcut adds only the endings -ox, -ax, -ix) fails though the
    survivor's input (``pluralize('bch')``) lies elsewhere. A method of a built object is left out:
    the tests' receiver is another object."""
    found = _calls(d.call)
    if found is None or not all(isinstance(n, (ast.Name, ast.Attribute, ast.Load)) for n in ast.walk(found[1].func)):
        return []
    outer, call = found
    out: list[str] = []
    for test_id in dict.fromkeys([d.test_id, *tests]):
        file, parts = split_test_id(test_id)
        try:
            fn = find_def(parse(sources.get(file, "")), parts)
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(fn) if fn is not None else ():
            if not isinstance(node, ast.Call) or not _same_callee(call.func, node.func):
                continue
            if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
                continue
            if any(_literal_source(ast.unparse(a)) is _NOT_LITERAL for a in [*node.args, *(k.value for k in node.keywords)]):
                continue
            src = ast.unparse(ast.Call(func=call.func, args=node.args, keywords=node.keywords))
            src = f"{ast.unparse(outer.func)}({src})" if outer is not call else src
            if src != d.call and src not in out:
                out.append(src)
    return out[:limit]


def varied_slots(seeds: Sequence[str]) -> set[str]:
    """The arguments (positions as strings, keyword names) whose value differs between the tests'
    cases: what the issue's cases are about (parse 0477aa5's four formats, one text), the rest the
    backdrop every case shares."""
    seen: dict[str, set[str]] = {}
    for seed in seeds:
        found = _calls(seed)
        if found is None:
            continue
        call = found[1]
        for slot, node in [*((str(i), a) for i, a in enumerate(call.args)), *((k.arg, k.value) for k in call.keywords if k.arg)]:
            seen.setdefault(slot, set()).add(ast.unparse(node))
    return {slot for slot, values in seen.items() if len(values) > 1}


def _kind(how: str) -> str:
    """The kind of variation a neighbour's ``how`` ends with (``a separator left out``)."""
    return how.rpartition("(")[2].rstrip(")")


def spread(found: Sequence[DistinguishingInput], keep: int) -> list[DistinguishingInput]:
    """Up to ``keep`` of ``found`` (in the order found), each kind of variation before a second of a
    kind: parse 0477aa5's shortcut fails only where a separator is left out (``{:+7f}``), one of many
    neighbours of the tests' cases on which gold fixes the buggy tree."""
    kinds: dict[str, list[DistinguishingInput]] = {}
    for v in found:
        kinds.setdefault(_kind(v.how), []).append(v)
    out: list[DistinguishingInput] = []
    queues = list(kinds.values())
    while queues and len(out) < keep:
        out += [q.pop(0) for q in queues][: keep - len(out)]
        queues = [q for q in queues if q]
    return out


@dataclass
class Neighbourhood:
    """What an input's test asserts beside it: its own neighbours, and neighbours of the tests' own
    cases of its function (``seed_calls``) on which gold fixes the buggy tree."""

    own: list[DistinguishingInput] = field(default_factory=list)
    cases: list[DistinguishingInput] = field(default_factory=list)


def observe_neighbours(ctx: Context, tree: Path, endings: Sequence[str] = ()) -> dict[str, Neighbourhood]:
    """For each confirmed survivor (by probe id): up to ``KEEP_NEIGHBOURS`` variations of its
    distinguishing input (``neighbour_calls``) on which gold behaves the same in two replays and in
    contract while the buggy tree or some survivor behaves otherwise, those a survivor fails first;
    and up to ``KEEP_SEED_NEIGHBOURS`` variations of the tests' own calls of its function
    (``seed_calls``) on which gold behaves so and the buggy tree otherwise (``spread`` over the kinds
    of variation). Every variation runs as a standalone call on each tree (gold twice, buggy, every
    survivor), one sandbox per tree."""
    progs: list[Program] = []
    owners: list[tuple[list[tuple[str, DistinguishingInput]], str, str, bool]] = []  # (probe id, input)s, how, call, a case's
    at: dict[tuple[str, tuple[str, ...], str], int] = {}
    for probe in ctx.survivors:
        d = probe.distinguishing
        if d is None:
            continue
        tried = [(how, call, False) for how, call in neighbour_calls(d, endings=endings)]
        seeds = seed_calls(d, ctx.sources, ctx.p1.fail_to_pass)
        varied = varied_slots(seeds)  # the argument the cases vary is where their class lies
        for seed in seeds:
            tried += [(how, call, True) for how, call in neighbour_calls(d.model_copy(update={"call": seed}), SEED_NEIGHBOURS, endings, varied)]
        for how, call, case in tried:
            key = (d.test_id, tuple(d.setup), call)
            if key in at:  # a neighbour of the input and of a case, or of two survivors' inputs: one replay serves all
                if probe.probe_id not in (pid for pid, _ in owners[at[key]][0]):
                    owners[at[key]][0].append((probe.probe_id, d))
                continue
            at[key] = len(progs)
            progs.append(_program(f"n{len(progs)}", d, call, how, ctx.sources))
            owners.append(([(probe.probe_id, d)], how, call, case))
    if not progs:
        return {}
    gold_patch = ctx.task.answer.gold_patch
    golds = [_replay(ctx, tree, gold_patch, progs), _replay(ctx, tree, gold_patch, progs)]
    others = [_replay(ctx, tree, "", progs), *(_replay(ctx, tree, p.patch, progs) for p in ctx.survivors)]
    expected = expected_exceptions(ctx.sources.values(), ctx.task.problem_statement)
    named = expected_exceptions((), ctx.task.problem_statement)
    ranked: dict[str, list[tuple[int, int, DistinguishingInput]]] = {}
    cases: dict[str, list[DistinguishingInput]] = {}
    for i, (prog, (inputs, how, call, case)) in enumerate(zip(progs, owners, strict=True)):
        gold, other = [g[prog.key] for g in golds], [o[prog.key] for o in others]
        for probe_id, d in inputs:
            # a case's neighbour must be one gold fixes: the buggy tree (first of ``other``) differs
            picked = pick_neighbours(d, gold, other[:1] if case else other, 0 if case else len(ctx.survivors), expected, how, call, named)
            if picked is None:
                continue
            if case:
                cases.setdefault(probe_id, []).append(picked[1])
            else:
                ranked.setdefault(probe_id, []).append((picked[0], i, picked[1]))
    return {pid: Neighbourhood([v for _, _, v in sorted(ranked.get(pid, []), key=lambda r: r[:2])[:KEEP_NEIGHBOURS]],
                               spread(cases.get(pid, []), KEEP_SEED_NEIGHBOURS))
            for pid in {*ranked, *cases}}  # fmt: skip
