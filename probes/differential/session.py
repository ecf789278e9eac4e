"""Gold's side of the program replay per task, compared with each surviving probe, and the survivors' answers."""

from __future__ import annotations

import ast
import dataclasses
import re
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from harness.pyast import parse
from harness.records import DistinguishingInput, ProbeResult, Task
from harness.sandboxes.sandbox import Backend
from probes.differential.literals import case_variants, pool, variants
from probes.differential.statements import programs
from probes.observe import ObservationSession, context
from probes.replay import Differential, Engine, Observed, Program, Step, behaviour, free_names, renamed, run_programs
from probes.workspace import test_sources

MAX_VARIANTS = 160  # variant programs per task
TASK_BUDGET_S = 600.0  # telling a task's survivors apart, every engine together
MAX_UNCONFIRMED = 3  # program differences replayed alone without repeating before the replay gives up


# Opaque identifiers. A string the tests use may be a name (a node, a key, a label) whose value gold
# never looks at: renaming it everywhere in the test renames it in gold's behaviour and changes nothing
# else. For gold such a string and its replacement are one equivalence class, so an input that differs
# from the test only in that string is the test's own case under another name, not a case the tests
# leave out; a patch that behaves differently there tells names apart (it memorised the test's
# literals), which every finite suite admits and no added test could rule out. So a variant that
# replaced a string is evidence only when gold is *not* equivariant under the renaming: gold itself
# treats the new value differently (moneyfmt: 'USD' -> 'KWD', a currency with three decimals), i.e. the
# input exercises a behaviour the FAIL_TO_PASS tests' subject depends on.


def renamed_everywhere(base: Program, old: str, new: str) -> Program:
    """``base`` with every string literal equal to ``old`` replaced by ``new`` (a consistent renaming)."""

    class Rename(ast.NodeTransformer):
        def visit_Constant(self, node: ast.Constant) -> ast.AST:
            return ast.Constant(new) if node.value == old else node

    steps = [Step(s.kind, ast.unparse(Rename().visit(parse(s.src))), s.assertion) for s in base.steps]
    binding = (base.binding[0], ast.unparse(Rename().visit(parse(base.binding[1], mode="eval")))) if base.binding else None
    return dataclasses.replace(base, key=f"{base.key}#rename:{old!r}->{new!r}", steps=steps, binding=binding,
                               how=f"{old!r} -> {new!r} everywhere", base_key="", renamed=None)  # fmt: skip


def equivariant(base: Sequence[dict], other: Sequence[dict], old: str, new: str) -> bool:
    """Gold's behaviour on the renamed program (``other``) is its behaviour on the test's own, renamed: ``old`` is opaque."""
    return len(base) == len(other) and all(
        b.get("step") == r.get("step") and renamed(behaviour(b), {old: new}) == behaviour(r) for b, r in zip(base, other)
    )


def tells_nothing(gold: Sequence[dict]) -> bool:
    """A program that timed out or did not load on gold: no other tree's answer to it is evidence."""
    return any(o.get("raised") == "timeout" or o.get("step") == -1 for o in gold)


def first_difference(gold: Sequence[dict], other: Sequence[dict]) -> int | None:
    """Index of the first observation whose behaviour differs; None when they agree, or when the
    program tells nothing on gold."""
    if tells_nothing(gold):
        return None
    for i in range(max(len(gold), len(other))):
        g = gold[i] if i < len(gold) else None
        o = other[i] if i < len(other) else None
        if g is None or o is None or behaviour(g) != behaviour(o) or g.get("step") != o.get("step"):
            return i
    return None


class DifferentialSession:
    """Gold's side for one task, computed once (two sandbox runs: the baseline programs with name
    discovery, then every variant), and compared with any number of other patches (one run each)."""

    def __init__(self, task: Task, backend: Backend, fail_to_pass: Sequence[str], sources: Mapping[str, str],
                 changed: Sequence[str], *, budget: int = MAX_VARIANTS, observer: Engine | None = None,
                 footprint: Engine | None = None) -> None:  # fmt: skip
        self.task, self.backend, self.changed, self.budget = task, backend, list(changed), budget
        self.observer = observer  # the suite observed through pytest, asked when no program tells the patch apart
        self.footprint = footprint  # gold's diff drawn by Hypothesis, asked when neither tells it apart
        self.seconds = 0.0  # spent telling survivors apart, gold's sides included
        self.base = programs(sources, fail_to_pass)
        self.values = pool(task.problem_statement, sources.values())
        self._gold: Observed | None = None
        self.programs: list[Program] = []
        self._opaque: dict[tuple[str, str, str], bool] = {}

    def gold(self) -> Observed:
        if self._gold is None:
            first = run_programs(self.task, self.backend, self.task.answer.gold_patch, self.base, self.changed, discover=True)
            progs = [p for p in self.base if p.key in first.results]
            per_test = max(8, self.budget // max(len(progs), 1))
            extra: list[Program] = []
            for base in progs:
                observed = first.results[base.key]
                reached = [any(o.get("reached") for o in observed if o.get("step") == i) for i in range(len(base.steps))]
                extra += variants(base, reached, self.values, first.alternatives.get(base.key, {}), per_test)
                if any(reached) and base.key in first.params:
                    extra += case_variants(base, first.params[base.key], self.values, per_test)
            extra = extra[: self.budget]
            second = run_programs(self.task, self.backend, self.task.answer.gold_patch, extra, self.changed) if extra else Observed({})
            self.programs = progs + [p for p in extra if p.key in second.results]
            self._gold = Observed({**first.results, **second.results}, first.alternatives, first.error or second.error)
        return self._gold

    def distinguish(self, patch: str) -> Differential:
        """The first engine's input that tells the patch from gold, within the task's ``TASK_BUDGET_S``
        over every survivor (later ones get no answer: no evidence, like an equivalent one)."""
        if self.seconds >= TASK_BUDGET_S:
            return Differential(None, 0, f"the task's budget ({TASK_BUDGET_S:.0f} s) is spent")
        started = time.monotonic()
        answer = self.replay_programs(patch)
        for engine in (self.observer, self.footprint):
            if answer.found is not None or engine is None or time.monotonic() - started + self.seconds >= TASK_BUDGET_S:
                continue
            more = engine.distinguish(patch)
            answer = Differential(more.found, answer.tried + more.tried, f"{answer.detail}; {more.detail}",
                                  answer.observed + more.observed, answer.generated + more.generated)  # fmt: skip
        self.seconds += time.monotonic() - started
        return answer

    def replay_programs(self, patch: str) -> Differential:
        gold = self.gold()
        if not self.programs:
            return Differential(None, 0, gold.error or "no FAIL_TO_PASS test could be replayed")
        # a program that tells nothing on gold is not run on the patch (one that timed out would take
        # its whole limit again, for every survivor); it still counts as compared
        mute = {p.key for p in self.programs if tells_nothing(gold.results[p.key])}
        live = [p for p in self.programs if p.key not in mute]
        other = run_programs(self.task, self.backend, patch, live, self.changed) if live else Observed({})
        if other.error:
            return Differential(None, 0, other.error)
        tried, names, unconfirmed = 0, 0, 0
        for program in self.programs:
            if program.key in mute:
                tried += 1
                continue
            if program.key not in other.results:
                continue
            tried += 1
            g, o = gold.results[program.key], other.results[program.key]
            at = first_difference(g, o)
            if at is None:
                continue
            if self.opaque(program):
                names += 1
                continue
            if not self.confirmed(program, patch, g, o):
                unconfirmed += 1
                if unconfirmed >= MAX_UNCONFIRMED:
                    break
                continue
            return Differential(_distinguishing(program, g, o, at), tried)
        renamings = f"; {names} differ only on renamed opaque identifiers" if names else ""
        renamings += f"; {unconfirmed} differences did not repeat when replayed alone" if unconfirmed else ""
        return Differential(None, tried, f"none found: {tried} programs over {len(self.base)} FAIL_TO_PASS tests behave alike{renamings}")

    def confirmed(self, program: Program, patch: str, gold: Sequence[dict], other: Sequence[dict]) -> bool:
        """The program alone, in a fresh sandbox on each tree, behaves as in the batch (no state left by
        an earlier program, no flake): the rule ``probes.observe`` applies to its calls."""
        g, o = [run_programs(self.task, self.backend, p, [program], self.changed).results.get(program.key)
                for p in (self.task.answer.gold_patch, patch)]  # fmt: skip
        return g is not None and o is not None and [behaviour(x) for x in g] == [behaviour(x) for x in gold] \
            and [behaviour(x) for x in o] == [behaviour(x) for x in other]

    def opaque(self, program: Program) -> bool:
        """The variant only renamed a string that gold treats as a name (see ``renamed_everywhere``);
        one extra gold run per renaming, remembered."""
        if program.renamed is None:
            return False
        old, new = program.renamed
        key = (program.base_key, old, new)
        if key not in self._opaque:
            base = self.gold().results.get(program.base_key)
            # the variant with the rest of the test renamed alike: its own replacement or binding is one of them
            renamed = renamed_everywhere(program, old, new)
            observed = run_programs(self.task, self.backend, self.task.answer.gold_patch, [renamed], self.changed)
            got = observed.results.get(renamed.key)
            self._opaque[key] = base is not None and got is not None and equivariant(base, got, old, new)
        return self._opaque[key]


def _distinguishing(program: Program, gold: Sequence[dict], other: Sequence[dict], at: int) -> DistinguishingInput:
    g = gold[at] if at < len(gold) else None
    o = other[at] if at < len(other) else None
    spec_steps = program.spec()["steps"]
    index = min(max((g or o or {}).get("step", 0), 0), len(spec_steps) - 1)
    prelude = program.prelude()
    # earlier assert operands are pure by convention and dropped; every other earlier statement is setup
    setup = prelude[:index]
    statements = [s.src for s in program.steps[: max(index - len(prelude), 0)] if s.kind == "exec" or not s.assertion]
    call = spec_steps[index]["src"]
    if program.binding and not any(program.binding[0] in free_names([Step("exec", line)]) for line in statements):
        # a parametrized case's parameter read only by the call: the call with the value in its place,
        # which strengthening can write as a new case of the test
        setup.remove(prelude[len(program.imports)])
        call = substituted(call, *program.binding)
    return DistinguishingInput(
        test_id=program.test_id, how=program.how, setup=[*setup, *statements], call=call,
        call_is_statement=spec_steps[index]["kind"] == "exec", gold=behaviour(g), other=behaviour(o),
        literal=(g or {}).get("literal", "") or "",
    )  # fmt: skip


def substituted(src: str, name: str, value: str) -> str:
    """``src`` with every read of ``name`` replaced by the expression ``value``."""

    class Put(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.AST:
            return parse(value, mode="eval").body if node.id == name and isinstance(node.ctx, ast.Load) else node  # type: ignore[attr-defined]

    return ast.unparse(Put().visit(parse(src)))


# ============================================================================================ survivors

_CHANGED = re.compile(r"^\+\+\+ b/(\S+\.py)$", re.MULTILINE)


def changed_python_files(patch: str) -> list[str]:
    return list(dict.fromkeys(_CHANGED.findall(patch)))


def session_for(task: Task, backend: Backend, fail_to_pass: Sequence[str], tree: Path) -> DifferentialSession:
    files = [t.partition("::")[0] for t in fail_to_pass]
    sources = test_sources(task, tree, files)
    hidden = test_sources(task, tree, [*task.answer.hidden_tests.files, *changed_python_files(task.answer.hidden_tests.patch)])
    ctx = context(task, tree, {**hidden, **sources}, fail_to_pass)
    from probes.footprint.search import FootprintSearch  # here: the footprint's vocabulary imports this package's literals

    observer = ObservationSession(task, backend, ctx, pool(task.problem_statement, hidden.values()))
    footprint = FootprintSearch(task, backend, tree, fail_to_pass, sources)
    return DifferentialSession(task, backend, fail_to_pass, sources, changed_python_files(task.answer.gold_patch), observer=observer,
                               footprint=footprint)  # fmt: skip


def with_differential(probe: ProbeResult, answer: Differential) -> ProbeResult:
    return probe.model_copy(update={
        "distinguishing": answer.found, "likely_equivalent": answer.found is None, "differential_tried": answer.tried,
        "differential_observed": answer.observed, "differential_generated": answer.generated,
    })  # fmt: skip


def check_survivors(session: DifferentialSession, probes: Sequence[ProbeResult]) -> list[ProbeResult]:
    """Each plausible-but-wrong probe that survived the tests, with the engine's answer: evidence
    (a distinguishing input) or ``likely_equivalent``; other probes unchanged."""
    return [
        with_differential(p, session.distinguish(p.patch)) if p.kind == "plausible_wrong" and p.reward == 1.0 else p
        for p in probes
    ]
