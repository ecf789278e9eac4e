"""Differential execution: an input on which gold and another patch behave differently, or "none found".

A probe that survives the tests is evidence of a too-loose suite only when it behaves differently from
gold somewhere; a survivor that behaves exactly like gold (an equivalent mutant, a guard whose branches
agree, a dropped no-op) is no evidence. This engine searches for such an input:

1. Programs. Each FAIL_TO_PASS test (a pytest function or a unittest/pytest-class method, not
   parametrized) becomes a program: its statements in order, where each assert
   (``assert a == b``, ``self.assertEqual(a, b)``, ...) becomes an *observation* of the operands that
   call something, a ``with pytest.raises(...)`` block an observation of its body, and the call form
   (``self.assertRaises(E, lambda: f(x))``, ``pytest.raises(E, f, x)``) an observation of ``f(x)``.
   The program runs in the test's module namespace (and its class instance after ``setUp``); a test
   that takes fixtures runs inside pytest, one copy of the test per program, with its fixtures' values.
2. Inputs. The test's own literals first (the baseline), then variants that replace one literal
   (``-1`` is one) in a statement that leads to gold's changed code: neighbouring and boundary values,
   values of the same shape from the issue text and the hidden tests, Hypothesis-generated values of
   the same type, and for a name bound to a project value (``DAY_OF_MONTH``) the other public
   module-level values of that exact type (``MONTH``).
3. Execution. ``probes/diff_driver.py`` runs every program on gold's tree and on the other patch's tree,
   each in its own sandbox with the hidden tests applied, and records per observation the canonical
   return value, the exception type (messages may be reworded) and the printed output.
4. Comparison. The first program whose observations differ is the distinguishing input, with both
   behaviours; none differing is "none found", with the number of programs tried.

5. Observation. When no program tells the patch apart, ``probes.observe`` watches the whole suite
   inside pytest (parametrized cases, fixtures, classes, PASS_TO_PASS tests too) and replays the calls
   it saw, and inputs varied from them, as standalone calls on both trees.
6. The fix's footprint. When neither tells it apart, every call ``probes.footprint`` drew from gold's
   diff with Hypothesis (where gold changed the buggy tree's answer first, then where the two agree:
   a fix wider than gold's breaks what the bug left alone) is replayed on the patch.

The gold side is run once per task (``DifferentialSession``) and reused for every probe.

Limits of the program replay (step 5 covers the first): parametrized tests and tests under a decorator that
wraps their call (a frozen clock) are not replayed; only literals and module-level names
in the test body vary (not values built inside the library); state a program leaves in the library
(a cache) is seen by the next program on both trees alike. A value without an evaluable ``repr`` can
tell two trees apart but cannot become an assertion (``DistinguishingInput.literal`` is then empty).
"""

from __future__ import annotations

from probes.differential.session import DifferentialSession, check_survivors, session_for, with_differential

__all__ = [
    "DifferentialSession",
    "check_survivors",
    "session_for",
    "with_differential",
]
