"""Test strengthening on a real library's real fix commit (bwrap, slow: about five minutes).

more-itertools d64a7d6: ``tail(n, iterable)`` returned part of a sized input for a negative ``n``; the
fix raises ``ValueError`` for ``n < 0``, and its regression test checks a single example,
``self.assertRaises(ValueError, lambda: list(mi.tail(-1, 'ABCDEFG')))``. One example leaves the
boundary open, and Pipeline 2's probes find it: ``n <= 0`` and ``n < 1`` (raising for 0 too) and a
special case that raises only when ``str(n)`` is one of the test's literals pass it. The differential
engine replays the call form of assertRaises and tells each apart from gold: ``tail(0, ...)`` is
``[]`` on gold and raises on the two mutants; ``tail(-2, ...)`` raises on gold and not on the special
case. Strengthening then adds a test per input, each also asserting gold's behaviour on the input's
neighbours that the buggy tree or a survivor gets wrong (``tail(0, '')``, ``tail(-3, ...)``), which
kill all three. The ``tail(0, ...)`` input alone passes on the buggy tree too (the mutants broke what
the bug left alone); its neighbours with a negative ``n`` do not, else the test would go after the
original test's own check. The benchmark's held-out shortcut (``n <= 0``) fails the strengthened suite and its
correct alternative passes.

The special case keyed on ``str(iterable)`` also survives. The program replay treats ``'ABCDEFG'``
as an opaque name (gold raises for -1 whatever the string), so every input it finds is the test's own
case under another name; the observation engine varies the string itself and confirms it on an empty
one (``tail(-1, '')`` raises on gold only), else it is recorded ``likely_equivalent``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from curation.decks import strengthened_task
from curation.pipeline1 import Pipeline1Config, process_task
from curation.sources import find_task
from harness.sandboxes.envs import prepare_tree
from harness.grading.grader import grade
from harness.records import Status
from judge.rules import added_test_leaks
from judge.strengthen import GOLD_RUNS, confirmed_survivors, strengthen
from probes.runner import probe_task

REAL = Path(__file__).resolve().parent.parent / "data" / "real"
TASK = "more-itertools__more-itertools-d64a7d6"


@pytest.mark.slow
@pytest.mark.bwrap
def test_strengthening_kills_the_surviving_wrong_probes_of_a_real_fix_commit(bwrap_backend, swedeck_env, tmp_path: Path) -> None:  # noqa: ANN001
    backend = bwrap_backend  # the default limits: on a loaded machine this suite once took over 20 s (probes get their own timeout)
    task = find_task(TASK, [REAL])
    p1 = process_task(task, backend, Pipeline1Config(runs=1), "test", tmp_path)
    assert (p1.decision, p1.fail_to_pass) == ("keep", ["tests/test_recipes.py::TailTests::test_sized_negative"]), p1.detail
    stamp = {"config_hash": "test", "task_hash": task.task_hash(), "instance_id": TASK}
    probes = probe_task(task, backend, p1, stamp, workers=2, log_dir=tmp_path / "logs")

    survived = [p for p in probes if p.kind == "plausible_wrong" and p.reward == 1.0]
    confirmed = {p.probe_id: p for p in confirmed_survivors(probes)}
    calls = {p.operator + (" n" if "str(n)" in p.description else ""): p.distinguishing.call for p in confirmed.values()}  # type: ignore[union-attr]
    replayed = {"mutate_compare": "list(mi.tail(0, 'ABCDEFG'))", "mutate_constant": "list(mi.tail(0, 'ABCDEFG'))",
                "special_case n": "list(mi.tail(-2, 'ABCDEFG'))"}  # fmt: skip
    assert {k: v for k, v in calls.items() if k in replayed} == replayed, calls
    # the observation engine also tells the special case on str(iterable) apart: on an empty iterable gold raises
    assert {k: v for k, v in calls.items() if k not in replayed} in ({}, {"special_case": "list(tail(-1, ''))"}), calls
    for equivalent in (p for p in survived if p.probe_id not in confirmed):
        assert equivalent.operator == "special_case" and "str(iterable)" in equivalent.description and equivalent.likely_equivalent

    record = strengthen(task, p1, probes, backend, stamp, prepare_tree(task, swedeck_env), log_dir=tmp_path / "logs")
    assert record.status == "repaired" and record.judge_session == "", record.reason  # no judge ran: the tests stay unreviewed
    assert sorted(record.survivors) == sorted(record.killed) == sorted(confirmed)
    kept = [t for t in record.tests if not t.rejected_at]
    # a test per distinct input (the two mutants share tail(0, ...)), each asserting its input first (after
    # the original check where the input alone passes on buggy)
    by_input = {next(line.strip() for line in t.code.splitlines()[2:] if "tail(" in line and "ValueError, lambda" not in line): t for t in kept}
    assert {"self.assertEqual(list(mi.tail(0, 'ABCDEFG')), [])", "list(mi.tail(-2, 'ABCDEFG'))"} <= set(by_input), [t.code for t in kept]
    # and gold's behaviour on neighbours of it that the buggy tree or a survivor gets wrong (an empty iterable, n = -1)
    zero = by_input["self.assertEqual(list(mi.tail(0, 'ABCDEFG')), [])"]
    assert "neighbours" in zero.found_by and "self.assertEqual(list(mi.tail(0, '')), [])" in zero.code, zero.code
    assert sorted({k for t in kept for k in t.kills}) == sorted(confirmed)
    for t in kept:
        (stable,) = [c for c in t.checks if c.step == "gold_stable"]
        assert stable.rewards == [1.0] * GOLD_RUNS and all(c.passed for c in t.checks) and t.relevance == "unreviewed"
        assert [c.step for c in t.checks][:2] == ["leak", "contract"]
        assert added_test_leaks(t.code, issue=task.problem_statement, gold_patch=task.answer.gold_patch) == []

    strong = strengthened_task(task, record)
    expected = {k: Status(v) for k, v in record.expected_status.items()}
    assert grade(strong, task.answer.gold_patch, backend, expected=expected).reward == 1.0
    buggy = grade(strong, "", backend, expected=expected)
    assert buggy.reward == 0.0 and all(buggy.statuses[t.test_id] == Status.FAILED for t in kept)
    for probe in confirmed.values():
        assert grade(strong, probe.patch, backend, expected=expected).reward == 0.0, probe.description
    for probe in (p for p in probes if p.kind == "correct_alternative" and p.reward == 1.0):
        assert grade(strong, probe.patch, backend, expected=expected).reward == 1.0, probe.description
    # held out (strengthening never saw them): the benchmark's hand-written shortcut, a guard written
    # n <= 0, and its correct alternative unlike gold
    assert grade(strong, (REAL / TASK / "shortcut.patch").read_text(), backend, expected=expected).reward == 0.0
    assert grade(strong, (REAL / TASK / "alternative.patch").read_text(), backend, expected=expected).reward == 1.0
