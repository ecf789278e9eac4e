"""Differential execution through pytest itself: observe what the tests' own calls do, then try inputs
worth trying, as standalone calls.

The program replay of ``probes.differential`` reads a FAIL_TO_PASS test's statements; real suites are
written with ``parametrize``, fixtures and classes, which it does not replay. This engine lets pytest
run the suite as it is and watches from inside (``harness/grading/plugins/swedeck_observe.py``):

1. Targets. The functions gold's patch changes, and the public functions of gold's changed files
   the FAIL_TO_PASS tests' files call (``targets``), as ``path::qualname``.
2. Observation. The task's whole test command runs on gold with the plugin (``harness.grading.grader.run_tests``
   with ``observe=``): every call a test, fixture, test-class or unittest method makes into a target,
   with its arguments as evaluable source, canonical return value, exception type and printed output;
   and every call test code makes into another project function whose execution reaches one gold
   changed (an entry: the tests reach the change through a facade, ``Context.changed``).
   The suite is observed on gold only: on a survivor, every observed call with evaluable arguments is
   replayed standalone (step 4), which is the same comparison (same call, same arguments) made where it
   can be confirmed; a difference only the suite's context shows (state an earlier call left) could not
   be confirmed standalone, so a full observed run per survivor would buy no evidence for its cost.
3. Inputs worth trying (``variations``). Seeds: every observed call with evaluable arguments (from any
   test that reaches the targets, PASS_TO_PASS too) and the calls of targets written in the issue text's
   code blocks, the changed modules' doctests and the README. Each seed varies one argument at a
   time: boundary numbers around the numbers seen, empty and one-element containers, halves, doubles,
   splices and nestings of one seen string into another, values of the same type from the issue and the
   tests, ``None`` where the signature's default is ``None``, and a few values Hypothesis draws from
   strategies inferred from the values seen (derandomised). At most ``MAX_CALLS`` calls per task.
4. Replay. Every call runs standalone (``from module import f`` + ``f(<args>)``) through
   ``probes/diff_driver.py``, twice on gold's tree (per task: a call gold answers differently the
   second time, random jitter or a clock, is left out) and once per probe. The evidence rule
   against false alarms: a difference counts only where gold's behaviour is in contract (it returns, or
   raises an exception type the tests or the issue expect), values compared canonically and exception
   messages ignored. A difference is confirmed by replaying that one call alone on both trees, each
   in a fresh sandbox: the same two behaviours again, or no evidence.

Budget per task: at most ``MAX_CALLS`` standalone calls, ``MAX_CONFIRMATIONS`` single-call replays per
probe, and ``WALL_BUDGET_S`` of observation in all; ``Differential`` reports how many calls were
compared and how many came from the tests (observed) or were generated.

Limits: a call whose arguments have no evaluable source (an object built by a fixture, a method of an
instance whose repr does not round-trip) cannot be replayed, so it is counted in the detail, never
evidence; variations change one argument at a time; the
public functions the tests call are looked for only in the files gold changed.
"""

from __future__ import annotations

from probes.observe.calls import slot_name
from probes.observe.session import ObservationSession, context, expected_exceptions, in_contract
from probes.observe.values import alternatives
from probes.observe.watched import MAX_ENDINGS, changed_literals

__all__ = [
    "MAX_ENDINGS",
    "ObservationSession",
    "alternatives",
    "changed_literals",
    "context",
    "expected_exceptions",
    "in_contract",
    "slot_name",
]
