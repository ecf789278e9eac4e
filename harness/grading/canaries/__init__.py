"""Canary tests: a few tests with fresh random names planted among the hidden tests of every grade.

Code under test runs inside the test process and can make the runner report whatever it likes (no-op
the test call, rewrite reports, edit the JUnit file from a background process). What it cannot do
without telling canaries from real tests is forge only the real ones: a canary that must fail and is
reported passed, or a canary that is missing while its file's other tests are reported, is a forged
run.

So a canary is a real test. A must-pass canary is a renamed copy of one of the hidden tests (its
decorators, fixtures, parametrization and class kept); a must-fail canary is such a copy with one
expected value changed: a top-level ``assert <expr> == <literal>`` or ``self.assertEqual(<expr>,
<literal>)`` whose literal gets a varied, ordinary-looking edit (a number moved by a few units, a
character repeated inside a string). Both call into the package exactly as the test they copy, with
the same inputs, so a wrapper that forces "tests that call the package", or tests shaped like the
file's own, or tests at the end of a file or class, forces must-fail canaries too. They are placed
anywhere among the tests of their scope, after the last one included, and named from the words of
the file's own test names.

Why copies with a changed expectation, rather than the inputs on which Pipeline 1's buggy and gold
runs or the differential engine's distinguishing inputs differ: those exist only for tasks that went
through those stages, while every grade needs canaries, and a distinguishing input yields one test,
not a choice a grade can draw from. A changed literal fails for the same reason a real failing test
fails (the package returned something else), on any tree whose code gives the value the real test
expects. That it fails on gold is not assumed but checked: every candidate is planted once per task
in one gold run (``trial``; the grader caches the keys of those that behaved, ``validate``), and
grades draw only from those, so an honest gold grade never shows spoof evidence. Edits avoid the
flips a buggy tree is likely to produce itself (booleans and None are never edited, numbers never
move by one), since a must-fail canary that passes on an honest wrong patch would call it forged.

Where a task gives nothing to copy (no Python test function, no top-level equality against a
literal, or no candidate behaved on gold), must-fail canaries fall back to integer arithmetic, which
code reading test sources can tell apart: the run says so (``strength``: "weak"; "none" when nothing
was planted), and the catalog counts such tasks.

What remains: a canary and its original are near-twins. Where both fail on a candidate's tree (the
original is a FAIL_TO_PASS test, which is why those are preferred), code that spots twins guesses which
is real and is right for every must-fail pair with probability 2**-k; where the original passes there
(a task that names no FAIL_TO_PASS tests), the failing twin is the canary. The tamper audit
(harness.grading.tamper) is what stands against such code.
"""

from __future__ import annotations

from harness.grading.canaries.candidates import candidates
from harness.grading.canaries.checking import check, node_ids, validate
from harness.grading.canaries.planting import Canary, plant, strength, trial, usable

__all__ = ["Canary", "candidates", "check", "node_ids", "plant", "strength", "trial", "usable", "validate"]
