"""Gold's side of the observation engine per task (an observed run, replayed calls), compared with each survivor."""

from __future__ import annotations

import ast
import dataclasses
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.grading.grader import run_tests
from harness.pyast import parse
from harness.records import Behaviour, DistinguishingInput, Task
from harness.sandboxes.sandbox import Backend, EnvError
from probes.observe.calls import Call, _unique, documented_calls, iterators, prioritised, seeds_from_records
from probes.observe.variants import variations
from probes.observe.watched import MAX_ENDINGS, changed_functions, changed_literals, import_root, none_defaults, targets
from probes.replay import Differential, Program, Step, behaviour, renamed, run_programs, within_budget
from probes.workspace import workspace

MAX_CALLS = 600  # standalone calls per task; at most half of them the tests' own
CALL_TIMEOUT_S = 1.0
MAX_CONFIRMATIONS = 5  # differences replayed alone per probe before giving up
REPLAY_TIMEOUT_S = 300.0
WALL_BUDGET_S = 900.0  # observation time per task, gold's side included: later survivors get no evidence
_RAISES = re.compile(r"(?:raises|assertRaises\w*)\(\s*\(?\s*([\w.]+(?:\s*,\s*[\w.]+)*)")
_EXCEPT = re.compile(r"except\s+\(?\s*([\w.]+(?:\s*,\s*[\w.]+)*)")
_EXC_WORD = re.compile(r"\b(\w*(?:Error|Exception|Warning))\b")


# ============================================================================================ observation


def identifier_strings(sources: Iterable[str]) -> list[str]:
    """The string literals of calls' sources that could be names (identifiers), in order of first appearance."""
    out: list[str] = []
    for src in sources:
        try:
            tree = parse(src, mode="eval")
        except (SyntaxError, ValueError):
            continue
        out += [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.isidentifier()]
    return list(dict.fromkeys(out))


def renamed_call(call: Call, renaming: Mapping[str, str]) -> Call:
    """``call`` with every string literal ``renaming`` names replaced by its new name."""

    class Rename(ast.NodeTransformer):
        def visit_Constant(self, node: ast.Constant) -> ast.AST:
            return ast.Constant(renaming[node.value]) if isinstance(node.value, str) and node.value in renaming else node

    def rename(src: str) -> str:
        return ast.unparse(Rename().visit(parse(src, mode="eval")))

    return dataclasses.replace(call, args=tuple(rename(a) for a in call.args), kwargs=tuple((k, rename(v)) for k, v in call.kwargs),
                               how=f"{call.how}, renamed {renaming}")  # fmt: skip


def records(jsonl: str) -> list[dict]:
    out = []
    for line in jsonl.splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue  # the last line of a run killed mid-write
        if isinstance(row, dict) and "target" in row:
            out.append(row)
    return out


def listing(watched: Sequence[str], changed: Sequence[str]) -> list[str]:
    """The plugin's targets: the watched functions, and gold's changed functions marked ``changed`` (the
    calls from test code whose execution reaches one are recorded as entries: a facade's)."""
    marked = set(changed)
    return [f"{t} changed" if t in marked else t for t in dict.fromkeys([*watched, *changed])]


def observe(task: Task, backend: Backend, patch: str, watched: Sequence[str], changed: Sequence[str] = ()) -> tuple[list[dict], str]:
    """The plugin's records of one run of the task's tests on the tree with ``patch``, or why there are none."""
    try:
        run = run_tests(task, patch, backend, observe=listing(watched, changed))
    except EnvError as err:
        return [], f"no observation run: {err}"
    if run.outcome != "ok":
        return [], f"the observation run ended {run.outcome}: {run.detail[-300:]}"
    return records(run.observed), ""


# ============================================================================================ contract


def expected_exceptions(test_sources: Iterable[str], issue: str) -> set[str]:
    """Exception types the tests expect (``pytest.raises``, ``assertRaises``, ``except``) or the issue names."""
    out: set[str] = set()
    for text in test_sources:
        for match in [*_RAISES.findall(text), *_EXCEPT.findall(text)]:
            out |= {name.strip().rsplit(".", 1)[-1] for name in match.split(",")}
    out |= set(_EXC_WORD.findall(issue))
    return out - {""}


def in_contract(gold: Behaviour, expected: set[str]) -> bool:
    if gold.raised in ("timeout", "not reached"):
        return False
    return not gold.raised or gold.raised.rsplit(".", 1)[-1] in expected


def differs(gold: Behaviour, other: Behaviour, expected: set[str]) -> bool:
    """Evidence: gold in contract and the other tree behaves otherwise, where one of them returned. Two
    exceptions of different types tell nothing: an input wrong in two ways (semver-0309c63's
    ``VersionInfo(-1, None, 0)``) may fail at either check first in a correct fix."""
    if gold == other or not in_contract(gold, expected) or other.raised == "timeout":
        return False
    return not (gold.raised and other.raised)


@dataclass
class Replay:
    """Standalone calls and what gold did on each."""

    calls: list[Call] = field(default_factory=list)
    gold: dict[str, dict] = field(default_factory=dict)  # key -> the driver's one observation
    observed: int = 0  # calls the tests made
    generated: int = 0  # calls varied or read from documents
    unstable: int = 0  # calls gold answered differently in two replays, left out
    error: str = ""


# ============================================================================================ session


def call_program(call: Call, key: str) -> Program:
    steps = [Step("exec", line) for line in call.imports] + [Step("observe", call.src, True)]
    return Program(key=key, test_id=call.test_id, test_file="", cls=None, method="", steps=steps, how=call.how)


def _outcome(results: Mapping[str, list[dict]], key: str, call: Call) -> dict | None:
    """The driver's observation of the call itself (None when an import before it failed)."""
    at = len(call.imports)
    return next((o for o in results.get(key, []) if o.get("step") == at), None)


@dataclass
class Context:
    """What the observation engine needs from the trees, read once per task."""

    watched: list[str]  # path::qualname
    documents: dict[str, str]  # where -> text: the issue, the changed modules (doctests), READMEs
    none_ok: dict[str, set[str]]
    expected: set[str]  # exception types the tests or the issue expect
    fail_to_pass: list[str]
    endings: list[str] = field(default_factory=list)  # short string literals of the functions gold changed
    changed: list[str] = field(default_factory=list)  # path::qualname of the functions gold changed


def context(task: Task, tree: Path, test_sources: Mapping[str, str], fail_to_pass: Sequence[str]) -> Context:
    watched = targets(task, tree, test_sources, fail_to_pass)
    documents = {"the issue": task.problem_statement}
    changed: dict[str, str] = {}
    endings: list[str] = []
    functions: list[str] = []
    with workspace(task, tree) as ws:
        if ws is not None:
            changed = {p: t for p, t in ws.new.items() if t is not None and p.endswith(".py") and p not in test_sources}
            endings = [e for p in changed for e in changed_literals(p, ws.old.get(p), ws.new.get(p))]
            functions = [f for p in changed for f in changed_functions(p, ws.old.get(p), ws.new.get(p))]
            documents |= {f"{p} (docstrings)": t for p, t in changed.items()}
            for readme in sorted(ws.root.glob("README*"))[:2]:
                documents[readme.name] = readme.read_text(errors="replace")
    expected = expected_exceptions(test_sources.values(), task.problem_statement)
    return Context(watched, documents, none_defaults(changed, watched), expected, list(fail_to_pass), endings[:MAX_ENDINGS], functions)


class ObservationSession:
    """Gold's side for one task (an observed run of the suite and one replay of every call), compared
    with any number of other patches (one replay each, plus two single-call replays to confirm a
    difference)."""

    def __init__(self, task: Task, backend: Backend, ctx: Context, values: Sequence[object], *, budget: int = MAX_CALLS) -> None:
        self.task, self.backend, self.ctx, self.values, self.budget = task, backend, ctx, list(values), budget
        self.rows: list[dict] = []
        self.paths: list[str] = []
        self._gold: Replay | None = None
        self.seconds = 0.0  # spent on this task so far

    def replay(self, patch: str, calls: Sequence[tuple[str, Call]]) -> dict[str, list[dict]]:
        progs = [call_program(call, key) for key, call in calls]
        got = run_programs(self.task, self.backend, patch, progs, [], paths=self.paths, timeout_s=REPLAY_TIMEOUT_S,
                           program_timeout_s=CALL_TIMEOUT_S)  # fmt: skip
        return got.results

    def gold(self) -> Replay:
        if self._gold is None:
            replay = Replay()
            if self.ctx.watched:
                self.rows, replay.error = observe(self.task, self.backend, self.task.answer.gold_patch, self.ctx.watched, self.ctx.changed)
            seeds = prioritised(seeds_from_records(self.rows), self.ctx.fail_to_pass)[: self.budget // 2]
            one_per_target = list({r["target"]: r for r in self.rows if r.get("call")}.values())
            documented = documented_calls(self.ctx.documents, one_per_target, iterators(self.rows))
            room = max(self.budget - len(seeds) - len(documented), 0)
            replay.calls = _unique([*seeds, *documented, *variations([*seeds, *documented], self.values, self.ctx.none_ok, room, self.ctx.fail_to_pass, self.ctx.endings)])[: self.budget]
            replay.observed = sum(c.source == "observed" for c in replay.calls)
            replay.generated = len(replay.calls) - replay.observed
            self.paths = list(dict.fromkeys(import_root(r["file"], r["target"].partition(":")[0]) for r in self.rows))
            if replay.calls:
                first = self.outcomes(self.task.answer.gold_patch, replay.calls)
                again = self.outcomes(self.task.answer.gold_patch, replay.calls)
                # a call gold answers differently twice (random jitter, time, addresses) tells nothing
                replay.gold = {key: o for key, o in first.items() if key in again and behaviour(again[key]) == behaviour(o)}
                replay.unstable = len(first) - len(replay.gold)
            self._gold = replay
        return self._gold

    def outcomes(self, patch: str, calls: Sequence[Call]) -> dict[str, dict]:
        keyed = [(f"call{i}", c) for i, c in enumerate(calls)]
        results = self.replay(patch, keyed)
        return {key: o for key, call in keyed if (o := _outcome(results, key, call)) is not None}

    @within_budget(WALL_BUDGET_S, "observation")
    def distinguish(self, patch: str) -> Differential:
        gold = self.gold()
        counts = {"observed": gold.observed, "generated": gold.generated}
        if not gold.gold:
            why = gold.error or ("no target of gold's patch was watched" if not self.ctx.watched else "the tests made no call with evaluable arguments into gold's changed functions")
            return Differential(None, 0, f"observation: {why}", **counts)
        found, tried = self.first_difference(patch, gold.calls, {k: (behaviour(o), o.get("literal", "") or "") for k, o in gold.gold.items()})
        if found is not None:
            return Differential(found, tried, f"observation: {found.how}", **counts)
        unusable = sum(1 for row in self.rows if not row.get("call"))
        note = f"; {unusable} observed calls have no evaluable arguments" if unusable else ""
        note += f"; {gold.unstable} calls left out, gold answers them differently each time" if gold.unstable else ""
        return Differential(None, tried, f"observation: none of {tried} calls ({gold.observed} observed, {gold.generated} generated) "
                            f"behaves unlike gold in contract{note}", **counts)  # fmt: skip

    def first_difference(self, patch: str, calls: Sequence[Call], gold: Mapping[str, tuple[Behaviour, str]]) -> tuple[DistinguishingInput | None, int]:
        """The first of ``calls`` (gold's behaviour and value as source in ``gold``, keyed as
        ``outcomes`` keys them) the patch answers unlike gold in contract, confirmed alone; and how
        many calls were compared."""
        other = self.outcomes(patch, calls)
        tried, confirmations = 0, 0
        for i, call in enumerate(calls):
            key = f"call{i}"
            if key not in gold or key not in other:
                continue
            tried += 1
            (g, literal), o = gold[key], behaviour(other[key])
            if not differs(g, o, self.ctx.expected):
                continue
            confirmations += 1
            if self._opaque(patch, call, g, calls):
                continue
            if self._confirmed(patch, call, g, o):
                found = DistinguishingInput(
                    test_id=call.test_id, how=call.how, setup=list(call.imports), call=call.src, gold=g, other=o, literal=literal,
                    target=call.target, source=call.source, args=list(call.args), kwargs=dict(call.kwargs),
                )  # fmt: skip
                return found, tried
            if confirmations >= MAX_CONFIRMATIONS:
                break
        return None, tried

    def _opaque(self, patch: str, call: Call, gold: Behaviour, calls: Sequence[Call]) -> bool:
        """The difference is only about names, as the program replay's rule has it
        (``probes.differential.session.equivariant``): the call with its identifier-like strings renamed
        to those of the other calls compared (``toposort``'s ``{'a': ['b', 'b']}`` as ``{'app': ['lib',
        'lib']}``) is answered alike by the patch and gold, and gold's answer is its answer on the call
        itself, renamed. A patch special-casing the tests' names then tells nothing, as it would in the
        program replay; two more single-call replays, only where a difference is found."""
        own = identifier_strings([call.src])
        pool = [name for name in identifier_strings(c.src for c in calls) if name not in own]
        if not own or len(pool) < len(own):
            return False
        renaming = dict(zip(own, pool))
        other = renamed_call(call, renaming)
        seen = [self.outcomes(p, [other]).get("call0") for p in (self.task.answer.gold_patch, patch)]
        if any(o is None for o in seen):
            return False
        g, o = (behaviour(x) for x in seen)
        return g == o and g == renamed(gold, renaming)

    def _confirmed(self, patch: str, call: Call, gold: Behaviour, other: Behaviour) -> bool:
        """The call alone, in a fresh sandbox on each tree, behaves as in the batch: no state left by an
        earlier call, no flake."""
        again = [(patch_side, self.outcomes(p, [call]).get("call0")) for patch_side, p in (("gold", self.task.answer.gold_patch), ("other", patch))]
        seen = {side: behaviour(o) if o is not None else None for side, o in again}
        return seen["gold"] == gold and seen["other"] == other
