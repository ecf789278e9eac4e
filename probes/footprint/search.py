"""The footprint search: inputs where the buggy and gold trees behave differently, drawn by Hypothesis from
gold's diff and the tests' own calls, each shrunk to the simplest one of its kind.

1. Seeds. The suite runs once on gold inside pytest with the observation plugin
   (``probes.observe.observe``), watching gold's changed functions, the public functions the tests
   call in the changed files and, through facades, the project functions the tests import from other
   modules (``facade_targets``), and records every call from test code whose execution reaches a
   function gold changed (an entry: a top-level ``split()`` dispatching to a private method of another
   module's class, a method of an object a factory built). Every recorded call with evaluable
   arguments is a seed, with the calls written in the issue's code blocks, the changed modules'
   doctests and the README (constant-folded).
2. Draws. For each seed and each argument (and each keyword parameter with a literal default the call
   does not pass), Hypothesis draws values of that argument's type from gold's vocabulary
   (``probes.footprint.vocabulary``): derandomised, so two runs draw alike.
3. Comparison. Every call replays standalone (``probes/diff_driver.py``) twice on gold, once on the
   buggy tree; a call gold answers differently twice counts as not differing. Values are compared canonically
   (containers item by item, objects by their repr, items and public plain data, exceptions by type), and a difference
   counts only where gold is in contract (``probes.observe.session.differs``, with the exception types
   gold's diff raises added to the expected ones).
4. Shrinking. Per target and argument, Hypothesis's own shrinker (``hypothesis.find``, the same
   derandomised draws) walks from the first differing value towards simpler ones; its oracle is answered
   from what the sandbox runs said, the values it asks about that no run has seen yet are run as one
   batch on both trees, and ``find`` runs again with those answers (``SHRINK_ROUNDS``).

A differing call that is one of the tests' own is *tested* (the suite pins it already); every other is
the untested footprint, what strengthening turns into tests. Budget: ``MAX_CALLS`` calls a batch.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.pyast import literal_eval, parse
from harness.records import Behaviour, Task
from harness.sandboxes.sandbox import Backend
from probes.differential.literals import pool
from probes.footprint.targets import facade_targets
from probes.footprint.vocabulary import Vocabulary, end_swaps, keyword_strategy, number_sweep, spelled, strategy_for, vocabulary
from probes.observe.calls import Call, _unique, documented_calls, iterators, prioritised, seeds_from_records
from probes.observe.session import ObservationSession, context, differs, in_contract, observe
from probes.observe.watched import import_root
from probes.replay import Differential, behaviour, within_budget
from probes.workspace import workspace

MAX_SEEDS = 40
MAX_CALLS = 400  # calls replayed in one batch
DRAWS = 20  # Hypothesis draws per argument of a FAIL_TO_PASS test's call (the others share what is left)
MIN_DRAWS = 3
MAX_GROUPS = 6  # (target, argument) kinds of difference shrunk per task
SHRINK_ROUNDS = 2
MAX_PENDING = 60  # values a shrink round asks about per group
ASK_BUDGET_S = 240.0  # answering surviving patches per task, the search included
SWEPT = "swept"  # how a swept value says so
MAX_KEPT = 60  # calls where the trees agree, next to where they differ: what the fix keeps


@dataclass(frozen=True)
class Found:
    """One input of the footprint: the call, what gold and the buggy tree did, gold's value as source."""

    call: Call
    gold: Behaviour
    buggy: Behaviour
    literal: str
    tested: bool  # one of the tests' own calls

    @property
    def kind(self) -> tuple[str, str]:
        return self.call.target, self.call.how.partition(" with ")[2].partition(" -> ")[0] or "call"


@dataclass
class Footprint:
    found: list[Found] = field(default_factory=list)
    tried: int = 0
    detail: str = ""
    expected: set[str] = field(default_factory=set)  # exception types in contract
    own: list[str] = field(default_factory=list)  # the tests' own calls, as a test writes them
    kept: list[Found] = field(default_factory=list)  # where the trees agree, next to where they differ: what the fix keeps


# ============================================================================================ draws


def _value(src: str) -> object:
    try:
        return literal_eval(src)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return _NONE


_NONE = object()


def source_of(value: object) -> str | None:
    """``repr(value)`` where it reads back as an equal value of the same type (else None)."""
    text = repr(value)
    again = _value(text)
    try:
        return text if type(again) is type(value) and again == value else None
    except Exception:  # noqa: BLE001
        return None


@dataclass(frozen=True)
class Slot:
    """One argument of one seed that Hypothesis varies: a position, a keyword passed, or a keyword not passed."""

    seed: Call
    name: str  # "0", "1", ... or a keyword
    strategy: object  # a hypothesis SearchStrategy
    added: bool = False  # a keyword parameter the call does not pass
    inner: int = -1  # the argument, written as a constructor call, whose positional literal this is

    @property
    def value(self) -> object:
        """The seed's own value of this argument (``_NONE`` for a keyword it does not pass or a constructor's literal)."""
        if self.added or self.inner >= 0:
            return _NONE
        return _value(dict([*((str(i), a) for i, a in enumerate(self.seed.args)), *self.seed.kwargs])[self.name])

    def call(self, value: object, how: str) -> Call | None:
        text = source_of(value)
        if text is None:
            return None
        s = self.seed
        if self.inner >= 0:  # Money('12.34', 'JPY') -> Money('12.34', 'KWD')
            node = parse(dict([*((str(i), a) for i, a in enumerate(s.args)), *s.kwargs])[self.name], mode="eval").body  # type: ignore[attr-defined]
            node.args[self.inner] = ast.Constant(value)
            text = ast.unparse(node)
        if self.added:
            kwargs = (*s.kwargs, (self.name, text))
        else:
            kwargs = tuple((k, text if k == self.name else v) for k, v in s.kwargs)
        args = tuple(text if str(i) == self.name else a for i, a in enumerate(s.args))
        where = f"{self.name}=" if not self.name.isdigit() else f"argument {int(self.name) + 1}"
        return Call(s.target, s.func, args, kwargs, s.imports, s.test_id, "variant", f"{s.src} with {where} -> {text} ({how})", s.consume)


def slots(seed: Call, vocab: Vocabulary, seen: Mapping[tuple[str, str], list[object]]) -> list[Slot]:
    """The arguments of ``seed`` Hypothesis can draw for, and the keyword parameters it leaves out."""
    out = []
    for name, src in [*((str(i), a) for i, a in enumerate(seed.args)), *seed.kwargs]:
        value = _value(src)
        if value is _NONE:
            out += inner_slots(seed, name, src, vocab)
            continue
        strategy = strategy_for(value, vocab, seen.get((seed.target, name), []))
        if strategy is not None:
            out.append(Slot(seed, name, strategy))
    passed = {k for k, _ in seed.kwargs}
    for param, default in vocab.keywords.get(seed.target.partition(":")[2], ()):
        if param not in passed and (strategy := keyword_strategy(default, vocab)) is not None:
            out.append(Slot(seed, param, strategy, added=True))
    return out


def inner_slots(seed: Call, name: str, src: str, vocab: Vocabulary) -> list[Slot]:
    """The positional literals of an argument written as a constructor call (``Money('12.34', 'JPY')``)."""
    try:
        node = parse(src, mode="eval").body  # type: ignore[attr-defined]
    except (SyntaxError, ValueError):
        return []
    if not isinstance(node, ast.Call) or not isinstance(node.func, (ast.Name, ast.Attribute)):
        return []
    out = []
    for j, arg in enumerate(node.args):
        value = _value(ast.unparse(arg))
        if value is not _NONE and isinstance(value, (str, int, float)) and (strategy := strategy_for(value, vocab)) is not None:
            out.append(Slot(seed, name, strategy, inner=j))
    return out


def _settings(examples: int, shrink: bool):  # noqa: ANN202
    from hypothesis import HealthCheck, Phase, settings

    phases = [Phase.generate, Phase.shrink] if shrink else [Phase.generate]
    return settings(derandomize=True, database=None, max_examples=examples, phases=phases, suppress_health_check=list(HealthCheck),
                    deadline=None)  # fmt: skip


def search(slot: Slot, examples: int, answer: Callable[[Call], bool | None], *, shrink: bool) -> Call | None:
    """``hypothesis.find`` over the slot's values: the simplest call ``answer`` says differs, asking
    about each value drawn (``answer`` returns None for one no run has seen; it counts as not
    differing). Derandomised: every round draws the same values until the first that differs."""
    from hypothesis import find
    from hypothesis.errors import NoSuchExample, Unsatisfiable

    def differing(value: object) -> bool:
        call = slot.call(value, "Hypothesis, from gold's diff")
        return call is not None and bool(answer(call))

    try:
        value = find(slot.strategy, differing, settings=_settings(examples, shrink))  # type: ignore[arg-type]
    except (NoSuchExample, Unsatisfiable):
        return None
    return slot.call(value, "Hypothesis, from gold's diff, shrunk")


# ============================================================================================ the search


class FootprintSearch:
    """One task's footprint: gold's observed run, the draws, and the replays on both trees."""

    def __init__(self, task: Task, backend: Backend, tree: Path, fail_to_pass: Sequence[str], sources: Mapping[str, str]) -> None:
        self.task, self.backend, self.fail_to_pass = task, backend, list(fail_to_pass)
        self.ctx = context(task, tree, sources, fail_to_pass)
        changed: dict[str, str] = {}
        with workspace(task, tree) as ws:
            if ws is not None:
                changed = {p: t for p, t in ws.new.items() if t is not None and p.endswith(".py")}
                files = [t.partition("::")[0] for t in fail_to_pass]
                self.ctx.watched = list(dict.fromkeys([*self.ctx.watched, *facade_targets(ws.root, sources, files)]))
        self.vocab = vocabulary(task.answer.gold_patch, changed, [w.partition("::")[2] for w in self.ctx.watched], pool(task.problem_statement, []))
        self.ctx.expected |= set(self.vocab.raised)
        self.session = ObservationSession(task, backend, self.ctx, [])
        self.known: dict[str, tuple[Behaviour, Behaviour, str]] = {}  # call src -> (gold, buggy, literal)
        self.calls: dict[str, Call] = {}  # call src -> the call, in the order first run
        self.seconds = 0.0  # spent answering other patches (the search included)
        self._footprint: Footprint | None = None

    def run_batch(self, calls: Sequence[Call]) -> None:
        """Each call twice on gold and once on the buggy tree, remembered; a call gold answers
        differently twice (a clock, a random draw: ``gzip_bytes`` writes the time) tells nothing, nor
        does one gold's first run times out on (gold is out of contract there, whatever the others
        do), so it is not run again: 46 of more-itertools edb3346's 314 calls took the 1 s limit
        each, on all three runs."""
        calls = [c for c in _unique(calls) if c.src not in self.known][:MAX_CALLS]
        if not calls:
            return
        gold = self.task.answer.gold_patch
        first = self.session.outcomes(gold, calls)
        for i, call in enumerate(calls):
            if (o := first.get(f"call{i}")) is not None and o.get("raised") == "timeout":
                self.known[call.src] = (behaviour(o), behaviour(o), "")
        live = [c for c in calls if c.src not in self.known]
        again, buggy = self.outcomes(gold, live), self.outcomes("", live)
        for i, call in enumerate(calls):
            key = f"call{i}"
            if key in first and call.src in again and call.src in buggy:
                g = behaviour(first[key])
                self.known[call.src] = (g, behaviour(buggy[call.src]) if behaviour(again[call.src]) == g else g, first[key].get("literal", "") or "")
                self.calls[call.src] = call

    def outcomes(self, patch: str, calls: Sequence[Call]) -> dict[str, dict]:
        """The session's outcomes of ``calls`` by call source."""
        got = self.session.outcomes(patch, calls) if calls else {}
        return {c.src: got[f"call{i}"] for i, c in enumerate(calls) if f"call{i}" in got}

    def differs(self, call: Call) -> bool | None:
        """Whether the call tells the trees apart; None when no run has seen it."""
        seen = self.known.get(call.src)
        return None if seen is None else differs(seen[0], seen[1], self.ctx.expected)

    def footprint(self) -> Footprint:
        """``run``, once."""
        if self._footprint is None:
            self._footprint = self.run()
        return self._footprint

    @within_budget(ASK_BUDGET_S, "footprint")
    def distinguish(self, patch: str) -> Differential:
        """Another patch against gold on the footprint's calls: those where gold changed the buggy
        tree's answer first (where a wrong fix most likely still answers like the buggy tree), then
        every other call drawn, where buggy and gold agree (where a fix wider than gold's breaks what
        the bug left alone). The first the patch answers unlike gold in contract, confirmed alone.
        Within ``ASK_BUDGET_S`` a task, the search included: later survivors get no answer here."""
        found = self.footprint()
        if not self.known:
            return Differential(None, 0, f"footprint: {found.detail}")
        first = [src for src, call in self.calls.items() if self.differs(call)]
        order = [*dict.fromkeys([*first, *self.calls])][:MAX_CALLS]
        calls = [self.calls[src] for src in order]
        gold = {f"call{i}": (self.known[src][0], self.known[src][2]) for i, src in enumerate(order)}
        hit, tried = self.session.first_difference(patch, calls, gold)
        if hit is not None:
            return Differential(hit, tried, f"footprint: {hit.how}")
        return Differential(None, tried, f"footprint: none of {tried} calls drawn from gold's diff behaves unlike gold in contract")

    def run(self) -> Footprint:
        if not self.ctx.watched:
            return Footprint(detail="no function of gold's change or called by the tests to watch")
        rows, error = observe(self.task, self.backend, self.task.answer.gold_patch, self.ctx.watched, self.ctx.changed)
        if not rows:
            return Footprint(detail=error or "the tests made no call into the watched functions")
        self.session.paths = list(dict.fromkeys(import_root(r["file"], r["target"].partition(":")[0]) for r in rows))
        seeds = prioritised(seeds_from_records(rows), self.fail_to_pass)[:MAX_SEEDS]
        one_per_target = list({r["target"]: r for r in rows if r.get("call")}.values())
        documented = documented_calls(self.ctx.documents, one_per_target, iterators(rows))
        seen: dict[tuple[str, str], list[object]] = {}
        for s in seeds:
            for name, src in [*((str(i), a) for i, a in enumerate(s.args)), *s.kwargs]:
                if (v := _value(src)) is not _NONE:
                    seen.setdefault((s.target, name), []).append(v)
        every = [slot for s in [*seeds, *documented] for slot in slots(s, self.vocab, seen)]
        # the FAIL_TO_PASS tests' calls are the issue's own cases: most of the draws go to them
        first = [s for s in every if s.seed.test_id in self.fail_to_pass]
        room = MAX_CALLS - len(seeds) - len(documented)
        draws = {id(s): DRAWS for s in first}
        rest = max(MIN_DRAWS, (room - DRAWS * len(first)) // max(len(every) - len(first), 1))
        drawn: list[Call] = []

        def record(call: Call) -> bool:
            drawn.append(call)
            return False

        # the issue's own cases' strings swept at their ends, then what Hypothesis draws
        swept = [c for slot in first for t, how in self.sweep(slot.value) if (c := slot.call(t, how))]
        swept = _unique(swept)[: room // 2]
        for slot in every:  # generation only: every value find draws, none differing yet
            search(slot, draws.get(id(slot), rest), record, shrink=False)
        self.run_batch([*seeds, *documented, *swept, *drawn[: room - len(swept)]])
        shrunk = self.shrink(every, lambda slot: draws.get(id(slot), rest))
        own = {s.src for s in seeds}
        found = []
        for call in _unique([*seeds, *documented, *swept, *drawn, *shrunk]):
            if self.differs(call) and (seen_ := self.known.get(call.src)) is not None:
                found.append(Found(self.spell(call), seen_[0], seen_[1], seen_[2], call.src in own))
        detail = (f"{len(self.known)} calls on both trees ({len(seeds)} of the tests', {len(documented)} from documents, "
                  f"{len(self.known) - len(seeds) - len(documented)} drawn by Hypothesis from gold's diff); {len(found)} differ")  # fmt: skip
        own_calls = [self.spell(s).src for s in seeds]
        return Footprint(simplest(found, shrunk, own_calls), len(self.known), detail, self.ctx.expected, own_calls, self.kept(own))

    def kept(self, own: set[str]) -> list[Found]:
        """What the fix keeps at the boundary of its change: where a FAIL_TO_PASS input's argument swept
        (``sweep``: one end through its class, a number through the boundaries) gives values on which
        the trees differ (the input's own, as a rule) and others on which they agree, the agreeing ones, no test's call, gold in contract with a value that reads
        back (or an expected exception). A fix wider than gold's (an ending too many) breaks one of
        them though it handles every input gold changed."""
        groups: dict[str, list[tuple[Call, Behaviour, Behaviour, str]]] = {}
        for src, call in self.calls.items():
            if call.how.endswith(f" {SWEPT})"):
                g, b, literal = self.known[src]
                groups.setdefault(call.how.partition(" -> ")[0] + call.how.rpartition(" (")[2], []).append((call, g, b, literal))
        out: list[Found] = []
        for group in groups.values():
            seed = self.known.get(group[0][0].how.partition(" with ")[0])  # the test's own call, where they differ as a rule
            if any(differs(g, b, self.ctx.expected) for _, g, b, _ in [*group, *([(None, *seed)] if seed else [])]):
                out += [Found(self.spell(c), g, b, lit, False) for c, g, b, lit in group
                        if c.src not in own and g == b and in_contract(g, self.ctx.expected) and (lit or g.raised)]  # fmt: skip
        return out[:MAX_KEPT]

    def sweep(self, value: object) -> list[tuple[object, str]]:
        """The values a FAIL_TO_PASS call's argument is swept through, each with how (ending in ``SWEPT``):
        a string's ends through their class, an integer through the boundaries of the diff's constants."""
        if isinstance(value, str):
            return [(t, f"its {end} character {SWEPT}") for t, end in end_swaps(value)]
        if isinstance(value, int) and not isinstance(value, bool):
            return [(n, f"a boundary {SWEPT}") for n in number_sweep(value, self.vocab)]
        return []

    def spell(self, call: Call) -> Call:
        """The call as a test writes it (``vocabulary.spelled``), where the signature is known."""
        got = spelled(call.target.partition(":")[2], call.args, call.kwargs, self.vocab.params)
        return call if got is None else dataclasses.replace(call, args=got[0], kwargs=got[1])

    def shrink(self, every: Sequence[Slot], draws: Callable[[Slot], int]) -> list[Call]:
        """Per (target, argument), the simplest differing call Hypothesis's shrinker reaches in
        ``SHRINK_ROUNDS`` rounds of batched answers."""
        groups: dict[tuple[str, str], Slot] = {}
        for slot in every:
            key = (slot.seed.target, f"{slot.name}.{slot.inner}")
            if key not in groups and len(groups) < MAX_GROUPS and search(slot, draws(slot), self.differs, shrink=False) is not None:
                groups[key] = slot
        best: list[Call] = []
        for round_ in range(SHRINK_ROUNDS):
            pending: list[Call] = []
            best = []
            for slot in groups.values():
                asked: list[Call] = []

                def answer(call: Call, asked: list[Call] = asked) -> bool | None:
                    verdict = self.differs(call)
                    if verdict is None and len(asked) < MAX_PENDING:
                        asked.append(call)
                    return verdict

                if (call := search(slot, draws(slot), answer, shrink=True)) is not None:
                    best.append(call)
                pending += asked
            if not pending or round_ == SHRINK_ROUNDS - 1:
                break
            self.run_batch(pending)
        return best


_WORDS = re.compile(r"[A-Za-z_]\w*")


def simplest(found: Sequence[Found], shrunk: Sequence[Call], own: Sequence[str]) -> list[Found]:
    """The found inputs in the order strengthening tries them: those that bring a word none of the
    tests' own calls (``own``) has (a currency, a keyword, an ending the tests never name: the part of
    the footprint furthest from what they pin), then the shrunk ones, then by how simple the call is
    (shortlex on its source)."""
    first = {c.src for c in shrunk}
    words = {w for src in own for w in _WORDS.findall(src)}

    def new(f: Found) -> bool:
        return bool(set(_WORDS.findall(f.call.src)) - words)

    return sorted(found, key=lambda f: (f.tested, not new(f), f.call.src not in first, len(f.call.src), f.call.src))
