"""Binding assertions that live in a helper module of the tests folder (issue 12): tests that assert
through `from common import assert_equal`, whose buggy tree raises before the helper is reached.
Pipeline 1 on bwrap with real instrumented runs."""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest

from curation.pipeline1 import Pipeline1Config, process_task
from harness.records import Answer, Environment, HiddenTests, Recipe, RepoSource, Task
from harness.sandboxes.sandbox import Backend

pytestmark = pytest.mark.bwrap

TABLE = 'def render(rows):\n    return "\\n".join(" | ".join(row) for row in rows)\n'
FIXED = 'def render(rows):\n    return "\\n".join(" | ".join(str(cell) for cell in row) for row in rows)\n'
COMMON = 'def assert_equal(expected, result):\n    print("Expected:", expected)\n    assert expected == result\n'
OLD_TESTS = 'from common import assert_equal\n\nfrom table import render\n\n\ndef test_text():\n    assert_equal("a | b", render([["a", "b"]]))\n'
NEW_TESTS = (
    "from common import assert_equal\n\nfrom table import render\n\n\n"
    "def test_numbers():\n"
    "    result = render([[1, 2]])  # raises on the buggy tree, before the helper is called\n"
    '    assert_equal("1 | 2", result)\n'
)
NO_ASSERTS = (
    "from common import assert_equal\n\nfrom table import render\n\n\n"
    "def test_numbers_render():\n    render([[1, 2]])\n\n\n"
    'def test_checked_first():\n    assert_equal("a", "a")  # passes on both trees\n    render([[1, 2]])\n'
)


def diff(path: str, old: str | None, new: str) -> str:
    lines = difflib.unified_diff(
        (old or "").splitlines(keepends=True), new.splitlines(keepends=True),
        "/dev/null" if old is None else f"a/{path}", f"b/{path}", n=3,
    )  # fmt: skip
    return "".join(lines)


def helper_task(tmp_path: Path, name: str, hidden_path: str, hidden: str) -> Task:
    repo = tmp_path / name
    (repo / "tests").mkdir(parents=True)
    (repo / "table.py").write_text(TABLE)
    (repo / "tests" / "common.py").write_text(COMMON)
    (repo / "tests" / "test_text.py").write_text(OLD_TESTS)
    return Task(
        instance_id=name, source="local", repo=f"local/{name}", problem_statement="render() fails on numbers",
        environment=Environment(recipe=Recipe()), repo_source=RepoSource(kind="files", path=str(repo)),
        test_cmd=["python -m pytest tests"], test_paths=[hidden_path],
        answer=Answer(gold_patch=diff("table.py", TABLE, FIXED), hidden_tests=HiddenTests(patch=diff(hidden_path, None, hidden))),
    )  # fmt: skip


def test_an_assert_in_a_tests_folder_helper_binds_when_buggy_raises_before_it(bwrap_backend: Backend, tmp_path: Path) -> None:
    """Regression (issue 12): asserts in an unregistered helper module were invisible on gold, so such
    tasks were rejected as no_binding_assertion."""
    task = helper_task(tmp_path, "helper-binds", "tests/test_numbers.py", NEW_TESTS)
    result = process_task(task, bwrap_backend, Pipeline1Config(runs=1), "t", tmp_path / "out")
    assert result.fail_to_pass == ["tests/test_numbers.py::test_numbers"]
    assert (result.decision, result.binding_assertions) == ("keep", ["tests/common.py:3"]), result.detail


def test_no_binding_assertion_says_which_tests_and_assertions_it_looked_at(bwrap_backend: Backend, tmp_path: Path) -> None:
    task = helper_task(tmp_path, "helper-none", "tests/test_numbers_render.py", NO_ASSERTS)
    result = process_task(task, bwrap_backend, Pipeline1Config(runs=1), "t", tmp_path / "out")
    assert result.reason == "no_binding_assertion"
    assert result.detail.splitlines()[1:] == [
        "tests/test_numbers_render.py::test_checked_first:",
        "  tests/common.py:3 `assert expected == result`: gold passed, buggy passed",
        "tests/test_numbers_render.py::test_numbers_render: no assertion ran in it on either tree",
    ], result.detail


UNITTEST_TESTS = (
    "import unittest\n\nfrom table import render\n\n\n"
    "class TestNumbers(unittest.TestCase):\n"
    "    def test_numbers(self):\n"
    '        self.assertEqual("1 | 2", render([[1, 2]]))\n'
)


def test_unittest_runner_tasks_are_kept_without_the_binding_rule_and_say_so(bwrap_backend: Backend, tmp_path: Path) -> None:
    """Regression (binding rule outside pytest): a task whose runner is not pytest (unittest here;
    Django's, go test, ... alike) never loads the assertion plugin, so every such task was rejected as
    no_binding_assertion."""
    task = helper_task(tmp_path, "unittest-runner", "tests/test_numbers.py", UNITTEST_TESTS)
    task = task.model_copy(update={"test_cmd": ["python -m unittest -v tests/test_numbers.py"], "log_parser": "unittest"})
    result = process_task(task, bwrap_backend, Pipeline1Config(runs=1), "t", tmp_path / "out")
    assert result.fail_to_pass == ["tests.test_numbers.TestNumbers.test_numbers"], result.detail
    assert (result.decision, result.binding_checked, result.binding_assertions) == ("keep", False, [])
    pytest_run = process_task(helper_task(tmp_path, "pytest-runner", "tests/test_numbers.py", NEW_TESTS), bwrap_backend, Pipeline1Config(runs=1), "t", tmp_path / "out")
    assert (pytest_run.decision, pytest_run.binding_checked) == ("keep", True)
