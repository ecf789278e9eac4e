"""Pipeline 1 and the grader's verdicts on gold: a task whose gold run the grader calls forged can
never pay a reward, so it is rejected as ``ungradeable``, never kept."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

from curation.pipeline1 import Pipeline1Config, process_task
from harness.records import Task
from harness.sandboxes.sandbox import Backend

# library code of the gold tree that prints a second pytest summary after pytest's own, as a test
# running pytest in-process can: the text summary then disagrees with the JUnit report
LATE_SUMMARY = textwrap.dedent(
    """
    import atexit as _atexit, os as _os, sys as _sys
    if "pytest" in _sys.modules:
        _atexit.register(lambda: _os.write(1, b"=== short test summary info ===\\nPASSED tests/test_sort.py::test_invented\\n=== 1 passed in 0.01s ===\\n"))
    """
)


def test_regression_gold_with_spoof_evidence_is_ungradeable(
    bwrap_backend: Backend, sample_tasks: dict[str, Task], make_patch: Callable, tmp_path: Path
) -> None:
    task = sample_tasks["sample__toposort-1"]
    gold_files = {"toposort/__init__.py": lambda source: source + LATE_SUMMARY}
    gold = make_patch(task, gold_files)
    # the real fix as well, so everything but the forged look of the output makes a valid task
    gold = task.answer.gold_patch + gold
    forged = task.model_copy(update={"answer": task.answer.model_copy(update={"gold_patch": gold})})
    result = process_task(forged, bwrap_backend, Pipeline1Config(runs=1, instrument=False), "test", tmp_path)
    assert (result.decision, result.reason) == ("reject", "ungradeable"), result
    assert "test_invented" in result.detail


def test_gold_needing_a_forbidden_change_is_ungradeable(
    bwrap_backend: Backend, sample_tasks: dict[str, Task], make_patch: Callable, tmp_path: Path
) -> None:
    """A gold patch that does what no candidate may (here: a module shadowing the standard library's
    json, beside the real fix) would make every grade 0: rejected, naming the path and the rule."""
    task = sample_tasks["sample__toposort-1"]
    gold = task.answer.gold_patch + make_patch(task, {"json.py": "from _json import *\n"})
    refused = task.model_copy(update={"answer": task.answer.model_copy(update={"gold_patch": gold})})
    result = process_task(refused, bwrap_backend, Pipeline1Config(runs=1, instrument=False), "test", tmp_path)
    assert (result.decision, result.reason, result.stage) == ("reject", "ungradeable", "patch"), result
    assert "json.py: imported instead of a module the environment provides" in result.detail
