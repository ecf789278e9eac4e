"""Test strengthening: repair a too-loose suite in place with tests that reject its surviving wrong patches.

Candidates come from three sources:

1. *Model-free*: each confirmed survivor's distinguishing input (``probes.differential``) becomes a test
   in the test file's own style. Where the test it came from is parametrized and the input's call
   matches the test's call with its argnames as holes (and the argname the result is compared with
   takes gold's value), the test gets a new case: a ``pytest.param(..., id="strengthened_...")``
   appended to its ``parametrize`` list, so its own checks, fixtures and class run on the new input.
   Otherwise it becomes a function that asserts gold's behaviour on that input (its return value when
   its ``repr`` evaluates back to it, the exception type it raises, or what it prints): a method of
   the test's class (``self.assert*`` in a unittest class, whose setUp runs) or a module-level
   function, taking the original test's fixtures that its statements use. Where the buggy tree already
   behaves like gold on that input (the survivor broke something the bug left alone), the function
   repeats the checks of the FAIL_TO_PASS test the input came from first, so it still fails on buggy.
   The survivor is one wrong fix; others the suite lets through are wrong next to where it is. So the
   function also asserts gold's behaviour on the input's *neighbours* (``observe_neighbours``): the
   call with one literal argument moved to a close value (a boundary number, an empty or one-element
   container, a string one shorter or with a longer run of digits), each replayed alone on gold
   (twice), the buggy tree and every survivor, kept where gold answers alike both times and in
   contract and the buggy tree or a survivor answers otherwise. Beside them go neighbours of the
   tests' own cases of the input's function (``seed_calls``: the calls the input's test and the
   FAIL_TO_PASS tests make with literal arguments, varied where the cases differ from each other) on
   which gold answers so and the buggy tree otherwise: the class of behaviour gold changes, where a
   fix that special-cases the tests' cases fails though the survivor's input lies elsewhere. A task
   with several confirmed survivors gets a test per distinct input, even where an earlier test
   already kills a survivor.
   Where gold's value has no evaluable repr (an object holding one that prints ``<... object>``), the
   input is compared as text, ``str(call)``, when that still tells the survivor apart
   (``restate_as_text``).
2. *Judge-written*: tests the judge proposes with ``propose_test`` (``judge.tools``), each citing the
   issue sentences its assertions follow from. In the same session the judge reviews the kept
   model-free tests (``review_test``): relevant with a cited sentence of the issue, or irrelevant
   (dropped, and recorded as rejected at ``relevance``).

3. *The fix's footprint* (``probes.footprint``, ``judge.strengthen.footprint``): inputs where the
   buggy and gold trees behave differently, drawn by Hypothesis from gold's diff and the tests' own
   calls, whatever the probes found. Their untested part (no test of the suite makes the call)
   becomes tests of the weakest property that separates gold from buggy, which need not kill a
   survivor: a wrong fix that handles only the tested inputs fails them whether or not a probe like it
   was generated. The record lists every footprint input with the test that pins it or why none does;
   a task without a confirmed survivor whose footprint tests are kept ends ``strengthened``.

Every candidate goes through the same validation, by the one grader, each step recorded
(``ValidationCheck``) and stopped at the first that fails (``AddedTest.rejected_at``):

``leak``            it names no identifier that only gold introduces (unless the issue names it) and
                    copies no line gold adds;
``contract``        it pins nothing a correct fix unlike gold may do otherwise: no exception message,
                    object address or float to full precision (``implementation_details``; set order
                    and other per-process detail fail ``gold_stable``, each run its own hash seed);
``gold_stable``     it passes on gold in k runs;
``fails_on_buggy``  it fails on the buggy tree;
``kills_survivor``  it fails on at least one confirmed survivor (a footprint test: recorded, not required);
``invariant``       it passes on every behaviour-preserving rewrite of gold (the correct_alternative
                    probes that passed the original suite): STING's guard against pinning gold's form;
``pass_to_pass``    with it added, gold still reproduces the original pattern on every other test;
``relevance``       a judge-written test must cite sentences of the issue (checked first: a proposal
                    that cites none is rejected before anything runs); a model-free one stays
                    ``unreviewed`` (kept, flagged) until the judge accepts that the issue asks for it.

Kept tests are added until every survivor is killed; the suite with all of them is graded once more
(gold reproduces its pattern; each survivor is graded in full) and the task ends ``repaired`` (every
survivor killed), ``partially_repaired`` or ``not_repaired``, with the reason. The strengthened hidden
tests are a new tests patch; the task's own hidden tests stay untouched.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from curation.store import commit_folder, read_records
from harness.names import under
from harness.records import (
    AddedTest,
    DistinguishingInput,
    HiddenTests,
    Pipeline1Result,
    ProbeResult,
    Strengthening,
    Task,
    VerdictRecord,
)
from harness.sandboxes.sandbox import Backend
from judge.rules import touched_files
from judge.strengthen.candidates import model_free_candidate
from judge.strengthen.footprint import strengthen_from
from judge.strengthen.cases import place
from judge.strengthen.neighbours import Neighbourhood, observe_neighbours, restate_as_text
from judge.strengthen.validation import GOLD_RUNS, Context, Workbench
from judge.strengthen.writing import Form
from probes.footprint import Footprint, FootprintSearch
from probes.observe import MAX_ENDINGS, changed_literals
from probes.workspace import apply_trusted, git, read_text, test_sources, workspace


# ============================================================================================ the stage


def _add_input(bench: Workbench, probe: ProbeResult, sources: dict[str, str], anchor: str, near: Neighbourhood,
               seen: set[str]) -> bool:  # fmt: skip
    """Try the survivor's input as a test in the file's own style until one is kept (True): a new case
    of the parametrized test it came from (kept: its neighbours follow in a function beside it), else a
    function of its own with its neighbours, else that function after the original test's checks
    where the buggy tree passes the input; where neighbours were in a rejected function (gold unstable
    on one, a rewrite of gold fails one, another test changes), the same forms again with the input's
    own neighbours only (``near.cases`` left out), then without any."""

    def attempt(form: Form, with_extra: Sequence[DistinguishingInput]) -> str | None:
        cand = model_free_candidate(probe, sources, form=form, anchor=anchor, extra=with_extra)
        if cand is None or cand.code in seen:
            return None
        seen.add(cand.code)
        return bench.consider(cand).rejected_at

    wider = [w for w in ([*near.own, *near.cases], near.own) if w]
    wider = wider[:1] if len(wider) == 2 and wider[0] == wider[1] else wider
    last = attempt("case", ())
    if last == "":
        for with_extra in wider:
            last = attempt("function", with_extra)
            if last == "fails_on_buggy":
                last = attempt("anchored", with_extra)
            if last == "":
                break
        return True
    buggy_passes = last == "fails_on_buggy"  # the same call and check: buggy passes it as a function too
    for with_extra in [*wider, []]:
        if with_extra or not buggy_passes:  # a neighbour may fail on buggy where the input alone does not
            last = attempt("function", with_extra)
            if last == "":
                return True
            buggy_passes = buggy_passes or last == "fails_on_buggy"
        if buggy_passes and attempt("anchored", with_extra) == "":
            return True
    return False


def tests_patch(task: Task, tree: Path, files: dict[str, str]) -> HiddenTests:
    """The hidden tests with ``files`` (test path -> final text) folded in: one patch against the buggy
    tree for the paths the original patch owns or adds, the original ``files`` updated in place."""
    hidden = task.answer.hidden_tests
    in_files = {p: t for p, t in files.items() if p in hidden.files}
    tmp = Path(tempfile.mkdtemp(prefix="swedeck-strengthen-"))
    try:
        root = tmp / "repo"
        git(["clone", "-q", str(tree), str(root)], tmp)
        if not apply_trusted(hidden.patch, root):
            raise RuntimeError("the hidden tests do not apply to the buggy tree")
        for path, text in files.items():
            if path not in in_files:
                (root / path).parent.mkdir(parents=True, exist_ok=True)
                (root / path).write_text(text)
        git(["add", "-A", "--force"], root)
        patch = git(["diff", "--cached", "--no-renames", "--no-color", "HEAD"], root)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return HiddenTests(patch=patch, files={**hidden.files, **in_files})


def gold_literals(task: Task, tree: Path) -> list[str]:
    """The short string literals of the functions gold changed (``'sx'``, ``'ch'``, ``'sh'`` in boltons'
    pluralize), tried as a string's ending, as the observation engine does."""
    with workspace(task, tree) as ws:
        if ws is None:
            return []
        return [e for path in ws.paths for e in changed_literals(path, ws.old.get(path), ws.new.get(path))][:MAX_ENDINGS]


def anchor_for(probe: ProbeResult, fail_to_pass: Sequence[str]) -> str:
    """The FAIL_TO_PASS test an anchored test repeats: the one the input came from, else one in its
    file, else the first."""
    origin = probe.distinguishing.test_id if probe.distinguishing else ""
    if origin in fail_to_pass or not fail_to_pass:
        return origin
    return next((t for t in fail_to_pass if t.partition("::")[0] == origin.partition("::")[0]), fail_to_pass[0])


def confirmed_survivors(probes: Sequence[ProbeResult]) -> list[ProbeResult]:
    return [p for p in probes if p.kind == "plausible_wrong" and p.reward == 1.0 and p.distinguishing is not None]


def strengthen(
    task: Task,
    p1: Pipeline1Result,
    probes: Sequence[ProbeResult],
    backend: Backend,
    stamp: dict[str, str],
    tree: Path,
    *,
    judge: Callable[[Workbench], str] | None = None,
    gold_runs: int = GOLD_RUNS,
    log_dir: Path | None = None,
    footprint: bool = True,
) -> Strengthening:
    """Strengthen one task's hidden tests (see the module docstring). ``judge`` runs the judge's
    session over the workbench once the model-free tests are validated (it proposes tests and reviews
    the model-free ones) and says how the session ended."""
    started = time.monotonic()
    survivors = confirmed_survivors(probes)
    alternatives = [p for p in probes if p.kind == "correct_alternative" and p.reward == 1.0]
    # the inputs' own tests too: an observed call may come from a test that passed on both trees
    origins = [p.distinguishing.test_id for p in survivors if p.distinguishing]
    files = list(dict.fromkeys([t.partition("::")[0] for t in [*p1.fail_to_pass, *origins]]))
    sources = test_sources(task, tree, files)
    existing = "\n".join(text for path in touched_files(task.answer.gold_patch) if (text := read_text(tree / path)) is not None)
    ctx = Context(task, p1, backend, survivors, alternatives, sources, existing, gold_runs=gold_runs, log_dir=log_dir)

    ended = ""  # how the judge's session ended

    def done(status: str, reason: str, tests: list[AddedTest], **extra: object) -> Strengthening:
        return Strengthening(**stamp, status=status, reason=reason, survivors=[p.probe_id for p in survivors],  # type: ignore[arg-type]
                             tests=tests, executions=ctx.executions, duration_s=round(time.monotonic() - started, 2),
                             judge_session=ended, transcript_path=bench.transcript, **extra)  # fmt: skip

    bench = Workbench(ctx)
    if survivors:
        texts = restate_as_text(ctx, tree)
        ctx.survivors = survivors = [p.model_copy(update={"distinguishing": texts[p.probe_id]}) if p.probe_id in texts else p for p in survivors]
        neighbours = observe_neighbours(ctx, tree, gold_literals(task, tree))
        seen: set[str] = set()
        asserted: set[str] = set()
        for probe in survivors:
            call = probe.distinguishing.call if probe.distinguishing else ""
            # a test per distinct input, not one per task: a test that already kills this survivor on
            # another input leaves the neighbourhood of this one open to other wrong fixes
            if call not in asserted and _add_input(bench, probe, sources, anchor_for(probe, p1.fail_to_pass), neighbours.get(probe.probe_id, Neighbourhood()), seen):
                asserted.add(call)
    # the untested footprint: wrong fixes no probe resembles fail where gold's change is left unpinned
    found = FootprintSearch(task, backend, tree, p1.fail_to_pass, sources).run() if footprint else Footprint(detail="not searched")
    inputs = strengthen_from(bench, found, sources, p1.fail_to_pass)
    traced = {"footprint": inputs, "footprint_detail": found.detail}
    ended = judge(bench) if judge is not None else ""
    session = f"; judge: {ended}" if judge is not None else ""
    tests = bench.tests
    kept = [(t, c) for t, c in zip(tests, bench.candidates, strict=True) if not t.rejected_at]
    if not kept:
        steps = sorted({t.rejected_at for t in tests})
        none = "" if survivors else "no confirmed survivor, and "
        return done("not_repaired", f"{none}no candidate test passed validation (rejected at: {', '.join(steps) or 'none written'}){session}", tests,
                    killed=[], **traced)  # fmt: skip
    added: dict[str, str] = {}
    for _, cand in kept:
        added[cand.file] = place(added.get(cand.file, sources[cand.file]), cand)
    new_ids = [t.test_id for t, _ in kept]
    expected = {**p1.expected_status, **dict.fromkeys(new_ids, "PASSED")}
    final = ctx.with_tests(added, expected)
    g = ctx.gold_full(final)
    if g.reward != 1.0:
        return done("not_repaired", f"gold does not reproduce its pattern with the added tests: {g.reason} {dict(list(g.differing.items())[:3])}", tests,
                    killed=[], **traced)  # fmt: skip
    final_killed = [p.probe_id for p in survivors if ctx.grade(final, p.patch, expected, None).reward == 0.0]
    hidden = tests_patch(task, tree, added)
    status = ("strengthened" if not survivors else "repaired" if len(final_killed) == len(survivors)
              else "partially_repaired" if final_killed else "not_repaired")  # fmt: skip
    pinned = sum(1 for i in inputs if i.outcome.startswith("kept as"))
    reason = {
        "repaired": f"{len(kept)} added test(s) reject every confirmed survivor ({len(survivors)})",
        "partially_repaired": f"{len(final_killed)} of {len(survivors)} confirmed survivors rejected; the others behave like gold on every input the kept tests try",
        "not_repaired": "the kept tests reject no survivor in a full grade",
        "strengthened": f"no confirmed survivor; {len(kept)} added test(s) pin gold's change where the tests left it open",
    }[status]
    if pinned and survivors:
        reason += f"; {pinned} of them from the fix's untested footprint"
    unreviewed = sum(t.relevance == "unreviewed" for t, _ in kept)
    if unreviewed:
        reason += f"; {unreviewed} model-free test(s) unreviewed (relevance not confirmed by a judge)"
    reason += session
    return done(status, reason, tests, killed=final_killed, tests_patch=hidden.patch, hidden_files=hidden.files,
                expected_status=expected, fail_to_pass=[*p1.fail_to_pass, *new_ids], **traced)  # fmt: skip


# ============================================================================================ the run stage


def result_path(out: Path, instance_id: str) -> Path:
    return under(out / "strengthen", instance_id)


def eligible(verdict: VerdictRecord | None, every: bool) -> bool:
    """A task is strengthened when the judge called it too loose; with ``every``, every kept task
    whatever its verdict (accepted tasks, or tasks no judge saw): its fix's footprint is searched
    for what the tests leave unpinned, survivor or not."""
    if verdict is not None and verdict.verdict == "too_loose":
        return True
    return every


def finished(out: Path, task: Task, config_hash: str) -> bool:
    path = result_path(out, task.instance_id) / "strengthening.parquet"
    if not path.exists():
        return False
    return {(r.config_hash, r.task_hash) for r in read_records(path, Strengthening)} == {(config_hash, task.task_hash())}


def process_task(
    task: Task,
    p1: Pipeline1Result,
    probes: Sequence[ProbeResult],
    backend: Backend,
    config_hash: str,
    tree: Path,
    out: Path,
    judge: Callable[[Workbench], str] | None = None,
) -> Strengthening:
    """Strengthen one task of a run and commit its record atomically under ``OUT/strengthen/<id>/``."""
    stamp = {"config_hash": config_hash, "task_hash": task.task_hash(), "instance_id": task.instance_id}
    record = strengthen(task, p1, probes, backend, stamp, tree, judge=judge, log_dir=under(out / "logs", task.instance_id))
    commit_folder(result_path(out, task.instance_id), [("strengthening", Strengthening, [record])])
    return record


def records(out: Path) -> dict[str, Strengthening]:
    """Every stored strengthening record of the run directory ``out``, by instance id."""
    found = {}
    for path in sorted((out / "strengthen").glob("*/strengthening.parquet")):
        for record in read_records(path, Strengthening):
            found[record.instance_id] = record
    return found
