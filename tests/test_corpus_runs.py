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


def test_hub_id_offline_is_one_line_and_exit_2(tmp_path):
    """`swedeck tasks list SWE-bench/SWE-bench_Lite` offline ended after ~40 s in a rich traceback."""
    import os
    import resource
    import subprocess
    import sys
    import time

    env = dict(os.environ, HF_HUB_OFFLINE="1", SWEDECK_CACHE=str(tmp_path), COLUMNS="80")
    started, before = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [sys.executable, "-m", "flows.cli", "tasks", "list", "SWE-bench/SWE-bench_Lite"],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    wall, after = time.perf_counter() - started, resource.getrusage(resource.RUSAGE_CHILDREN)
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith("error: SWE-bench/SWE-bench_Lite:") and "HF_HUB_OFFLINE" in line
    # no waiting on the network: the CPU bound is the 5 s promise, the wall bound allows a loaded machine
    assert after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime < 5 and wall < 20
    missing = subprocess.run([sys.executable, "-m", "flows.cli", "tasks", "list", str(tmp_path / "no.jsonl")],
                             env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert missing.returncode == 2 and missing.stderr.strip().endswith("no.jsonl: no such file")
