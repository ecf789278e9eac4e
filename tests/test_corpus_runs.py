"""Corpus rows and real repositories through Pipeline 1 (and curate): what each row's run ends as."""

from __future__ import annotations

from curation.pipeline1 import derive
from harness.records import Status

PASSED, FAILED, ERROR = Status.PASSED, Status.FAILED, Status.ERROR


def test_gold_fails_fires_for_r2e_and_django_ids():
    """gold_fails checked ids against test file paths, so it never fired for R2E's keys (no file in
    them) or Django's dotted ids (module path without tests/)."""
    r2e = derive([{"TestX.test_y": FAILED, "test_z": PASSED}], [{"TestX.test_y": FAILED, "test_z": PASSED}],
                 ["tests/test_core.py", "r2e_tests/test_1.py"])  # fmt: skip
    assert r2e.gold_failing == ["TestX.test_y"]
    owned = ["tests/forms_tests/field_tests/test_charfield.py"]
    dotted = "forms_tests.field_tests.test_charfield.CharFieldStripTests.test_strip"
    old_style = "test_strip (forms_tests.field_tests.test_charfield.CharFieldStripTests)"
    other = "admin_views.tests.AdminViewTests.test_x"
    gold = [{dotted: FAILED, old_style: ERROR, other: FAILED}]
    assert derive(gold, gold, owned).gold_failing == [dotted, old_style]  # the test from elsewhere is not ours
    node = "tests/test_a.py::test_b"
    assert derive([{node: FAILED}], [{node: FAILED}], ["tests/test_a.py"]).gold_failing == [node]
    assert derive([{node: FAILED}], [{node: FAILED}], ["tests/test_other.py"]).gold_failing == []
