"""Plausible-but-wrong probes that are other implementations of gold's fix, not token edits of it.

Real wrong fixes that pass a too-loose suite are rarely gold with one token flipped (every such edit of
a one-token or data-only fix is the revert or breaks the fix); they are other, narrower ways of writing
it. Each operator here builds one such implementation mechanically from gold's diff, the buggy and gold
sources and the FAIL_TO_PASS tests, with no model:

* ``guards``: a guard gold adds narrowed to the tests' inputs (``n < 0`` -> ``n == -1``), or with one
  of its conjuncts / disjuncts dropped;
* ``calls``: a normalising call gold adds left out (``abs``, ``str``, ``.lower()``, ``sorted`` ...), a
  parameter gold's new code reads replaced by the one literal the tests pass for it;
* ``sites``: gold applied at only one of several similar change blocks, and a statement gold inserts
  moved past its neighbour (an edit next to gold's lines instead of on them);
* ``external``: mutmut 3's operators (used as a library) on gold's changed lines, sites spread over
  every line (not on the lines gold left alone: see that module).

Like every model-free probe, a survivor is evidence only with an input that tells it from gold
(``probes.differential``).
"""

from probes.implementations.calls import constant_for_variable, drop_normaliser
from probes.implementations.external import mutmut_mutants
from probes.implementations.guards import drop_conjunct, narrow_guard
from probes.implementations.sites import adjacent_edit, one_similar_site

IMPLEMENTATION_OPERATORS = ("narrow_guard", "drop_conjunct", "drop_normaliser", "constant_for_variable",
                            "one_similar_site", "adjacent_edit", "mutmut")  # fmt: skip

__all__ = ["IMPLEMENTATION_OPERATORS", "adjacent_edit", "constant_for_variable", "drop_conjunct", "drop_normaliser",
           "mutmut_mutants", "narrow_guard", "one_similar_site"]  # fmt: skip
