"""benchmarks/canary_tells.py with few draws: no tell, structural (layout, name grammar, the edit's
direction, order, length, character classes) or content (echo, naturalness, a number's size), picks
the real test of a twin set more often than the bound 1/(k+1) allows, on hidden test files of the
sample and of data/real (the grader's own planting, offline)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from harness.config import Settings
from harness.grading.canaries import twins

ROOT = Path(__file__).resolve().parents[1]
TASKS = ["sample__toposort-1", "sample__slugkit-1", "sample__mdtable-1", "sample__querybuild-1", "r1chardj0n3s__parse-421c199",
         "mahmoud__boltons-4aa77cd", "more-itertools__more-itertools-0e6acdf"]  # fmt: skip


def _benchmark():  # noqa: ANN202 - the module
    spec = importlib.util.spec_from_file_location("canary_tells", ROOT / "benchmarks" / "canary_tells.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules["canary_tells"] = module
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def test_no_tell_beats_the_bound(swedeck_env: Settings) -> None:
    bench = _benchmark()
    files = bench.load(TASKS, swedeck_env)
    result = bench.simulate(files, draws=6, seed=1)
    assert result["sets"] >= 300, result["sets"]
    best, rate, se = bench.report(result)
    assert rate <= 1 / (twins.TWINS + 1) + 3 * se, (best, rate)
