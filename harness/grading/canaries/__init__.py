"""Canaries: every real test of a grade hidden among must-fail twins that no code can rank.

Code under test runs inside the test process and can make the runner report whatever it likes (no-op
the test call, rewrite reports, swallow failures in a wrapper of ``Function.runtest`` or
``TestCase.run``). What it cannot do without telling twins from real tests is forge only the real
ones: a twin that must fail and is reported passed, or a canary missing while its file's other tests
are reported, is a forged run.

So the host rewrites every hidden test file it ships (``layout``): one uniform layout, neutral names
(``test_`` and random hex, mapped back to the task's ids on the host: ``checking.own_ids``), tests at
random places of their scope. Each real test that passes on gold and ends in an equality assert
against a literal is written ``twins.TWINS`` more times (``twins``), the literal drawn anew so that
the k+1 values are exchangeable: reversible edits of a hidden random root, each in the same notation,
length and character classes, accepted by a model of how natural a real value is in its place. Code that forces "the real one" of k+1 tests that differ only in that
value picks it with probability at most 1/(k+1), independently per set; ``checking.bound`` gives the
grade's bound, which the run records and the catalog keeps.

That a twin fails on gold is checked, not assumed: one gold run per task plants two twins of every
twinnable test (``trial``), and grades twin only the tests whose twins both failed while the test
passed (``validate``), so an honest gold grade never shows spoof evidence. Where no test can be
twinned, two integer-arithmetic canaries (one must fail) stand in, which code reading the tests can
tell apart: the run says so (``strength``: "weak"; "none" when nothing was planted).

A test whose last statement asserts no literal (``assert f(x)``, ``self.assertTrue(f(x))``, a
helper's call) is twinned at an input of that statement instead (``twins.input_leaves``): one pool of
values per test, of which the trial keeps those whose twin gold and the unfixed tree both fail as the
real test fails (``checking.input_values``), and a grade plants TWINS.

What remains: a real test without twins (no pool of exchangeable values, too few of them that fail,
or a value far more natural than anything near it) can be forged for free; a model of real values
better than the draw's can bet better than 1/(k+1); a candidate's code can still compare each set's
expected values with what its own tree computes (the real value is often the nearest to a wrong one);
and the run-time audit hook stands against code that reads the tests' sources at all.
"""

from __future__ import annotations

from harness.grading.canaries.checking import bound, check, commands, input_values, node_id, own_ids, select_ids, validate
from harness.grading.canaries.planting import Canary, Planting, plant, runs, strength, trial, usable

__all__ = ["Canary", "Planting", "bound", "check", "commands", "input_values", "node_id", "own_ids", "plant", "runs", "select_ids", "strength", "trial", "usable", "validate"]
