"""benchmarks/oracle_strengthening.py's own logic: which commits it mines and how it thins a suite. The
benchmark's figures come from running it (README); these check the pieces that decide what it measures."""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("oracle_strengthening", ROOT / "benchmarks" / "oracle_strengthening.py")
oracle = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
sys.modules["oracle_strengthening"] = oracle
spec.loader.exec_module(oracle)  # type: ignore[union-attr]

SUITE = '''import pytest


def test_keep():
    assert 1


@pytest.mark.parametrize("x", [1, 2])
def test_drop_param(x):
    assert x


class TestThings:
    def test_a(self):
        assert 1

    @pytest.mark.skipif(False, reason="")
    def test_b(self):
        assert 2


class TestGone:
    def test_only(self):
        assert 3
'''


def test_remove_tests_drops_functions_with_their_decorators_and_keeps_the_rest() -> None:
    out = oracle.remove_tests(SUITE, {"test_drop_param", "TestThings::test_b", "TestGone::test_only"})
    tree = ast.parse(out)  # still Python
    names = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    assert names == {"test_keep", "test_a"}
    assert "parametrize" not in out and "skipif" not in out
    gone = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "TestGone")
    assert isinstance(gone.body[0], ast.Pass)


def test_remove_tests_leaves_a_same_named_method_of_another_class() -> None:
    source = "class A:\n    def test_x(self):\n        pass\n\n\nclass B:\n    def test_x(self):\n        pass\n"
    out = oracle.remove_tests(source, {"B::test_x"})
    assert out.count("def test_x") == 1 and "class A:\n    def test_x" in out


def test_a_parametrize_case_counts_as_its_function() -> None:
    assert oracle.test_function("tests/t.py::C::test_x[1-2]") == "tests/t.py::C::test_x"
    assert oracle.test_function("tests/t.py::test_y") == "tests/t.py::test_y"


def test_fit_takes_small_library_changes_with_a_test_module() -> None:
    ok = "3\t1\tpkg/mod.py\n10\t0\ttests/test_mod.py\n2\t2\tCHANGES.rst\n"
    assert oracle.fit(ok, 60) == (["pkg/mod.py"], ["tests/test_mod.py"])
    assert oracle.fit("3\t1\tpkg/mod.py\n5\t0\ttests/conftest.py\n", 60) is None  # no test module
    assert oracle.fit("50\t20\tpkg/mod.py\n10\t0\ttests/test_mod.py\n", 60) is None  # too big a change
    assert oracle.fit("10\t0\ttests/test_mod.py\n", 60) is None  # no library change
    four = "".join(f"1\t0\tpkg/m{i}.py\n" for i in range(4)) + "1\t0\ttests/test_m.py\n"
    assert oracle.fit(four, 60) is None


def test_added_test_functions_counts_only_added_definitions() -> None:
    diff = "+def test_a():\n+    pass\n+    async def test_b(self):\n def test_old():\n-def test_gone():\n+def helper():\n"
    assert oracle.added_test_functions(diff) == 2


def test_only_commits_that_say_they_fix_something_are_mined() -> None:
    assert oracle.FIX.search("Fix chunked for n=0") and oracle.FIX.search("handle the bug in split (#123)")
    assert not oracle.FIX.search("Add windowed_complete") and not oracle.FIX.search("Refactor the docs")


def test_cosmic_ray_mutants_only_touch_the_lines_asked_for() -> None:
    code = "def f(a, b):\n    x = a + b\n    return x < 3\n"
    mutants = oracle.cosmic_ray_mutants(code, {3})
    assert mutants and all(line == 3 for line, _, _ in mutants)
    assert all(m.splitlines()[1] == "    x = a + b" and m != code for _, _, m in mutants)
    assert any("x <= 3" in m or "x > 3" in m for _, _, m in mutants)


CASES = '''import datetime

import pytest


@pytest.mark.parametrize("text", ["a", "b\\u00e9", 3, None])
def test_one(text):
    assert text != "z"


class TestPairs:
    @pytest.mark.parametrize(
        ("x", "y"),
        [
            (1, "a"),  # a comment
            (1, "a"),
            pytest.param(2, "b", id="named"),
            (datetime.date(2020, 1, 1),
             "c"),
        ],
    )
    def test_pair(self, x, y):
        assert x
'''


def collected(tmp_path: Path, source: str) -> set[str]:
    (tmp_path / "test_cases.py").write_text(source)
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", str(tmp_path / "test_cases.py")],
                         cwd=tmp_path, capture_output=True, text=True, check=True).stdout  # fmt: skip
    return {line.split("::", 1)[1] for line in out.splitlines() if "::" in line}


def test_remove_cases_drops_the_cases_pytest_names_and_keeps_the_others(tmp_path: Path) -> None:
    before = collected(tmp_path, CASES)
    gone = {"test_one": {"b\\xe9", "None"}, "TestPairs::test_pair": {"1-a0", "named", "x3-c"}}
    assert all(f"{q}[{c}]" in before for q, cs in gone.items() for c in cs)  # the ids as pytest gives them
    out, emptied = oracle.remove_cases(CASES, gone)
    assert not emptied
    # the duplicate left behind loses its counter: pytest numbers duplicates only while there are two
    want = before - {f"{q}[{c}]" for q, cs in gone.items() for c in cs} - {"TestPairs::test_pair[1-a1]"} | {"TestPairs::test_pair[1-a]"}
    assert collected(tmp_path, out) == want


def test_a_function_left_without_cases_is_named_to_be_removed_whole() -> None:
    out, emptied = oracle.remove_cases(CASES, {"test_one": {"a", "b\\xe9", "3", "None"}})
    assert emptied == {"test_one"} and out == CASES


def test_a_case_that_cannot_be_named_from_the_source_is_not_removed() -> None:
    stacked = "import pytest\n\n@pytest.mark.parametrize('x', [1, 2])\n@pytest.mark.parametrize('y', [3])\ndef test_s(x, y):\n    pass\n"
    built = "import pytest\n\nCASES = [1, 2]\n\n@pytest.mark.parametrize('x', CASES)\ndef test_b(x):\n    pass\n"
    for source, qualname, case in ((stacked, "test_s", "3-1"), (built, "test_b", "1"), (CASES, "test_one", "q")):
        with pytest.raises(oracle.Unresolved):
            oracle.remove_cases(source, {qualname: {case}})


def test_thinning_is_by_function_where_three_fail_to_pass_else_by_case() -> None:
    three = ["t.py::test_a", "t.py::test_b[1]", "t.py::test_b[2]", "t.py::C::test_c"]
    assert oracle.thinning(three) == ("function", ["t.py::C::test_c", "t.py::test_a", "t.py::test_b"])
    cases = ["t.py::test_b[1]", "t.py::test_b[2]", "t.py::test_a"]
    assert oracle.thinning(cases) == ("case", sorted(cases))
    assert oracle.thinning(["t.py::test_b[1]", "t.py::test_a"]) == ("", [])


def test_added_tests_counts_new_functions_with_their_cases_and_cases_added_to_a_list() -> None:
    old = "import pytest\n\n@pytest.mark.parametrize('x', [1, 2])\ndef test_p(x):\n    pass\n"
    new = ("import pytest\n\n@pytest.mark.parametrize('x', [1, 2, 3, 4])\ndef test_p(x):\n    pass\n\n"
           "class T:\n    @pytest.mark.parametrize('y', (5, 6))\n    def test_q(self, y):\n        pass\n\n"
           "def test_r():\n    pass\n")  # fmt: skip
    assert oracle.added_tests(old, new) == 2 + 2 + 1
    assert oracle.added_tests(new, old) == 0
    assert oracle.added_tests(None, old) == 2


def test_regression_a_test_a_class_inherits_is_not_counted_as_thinned(tmp_path: Path) -> None:
    """addict's ChildDictTests inherits Tests' methods: removing ChildDictTests::test_copy removed
    nothing, and the thinned task kept three FAIL_TO_PASS tests where it claimed one."""
    tree = tmp_path / "tree"
    tree.mkdir()
    suite = "class Tests:\n    def test_a(self):\n        pass\n\n    def test_b(self):\n        pass\n\n\nclass TestChild(Tests):\n    pass\n"
    (tree / "test_m.py").write_text("")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "base"]):
        oracle.git(args, tree)
    (tree / "test_m.py").write_text(suite)
    tests_patch = oracle.git(["diff"], tree)
    full = tmp_path / "full-task"
    full.mkdir()
    oracle.git(["bundle", "create", "-q", str(full / "repo.bundle"), "main"], tree)
    ref = oracle.git(["rev-parse", "HEAD"], tree).strip()
    (full / "tests.patch").write_text(tests_patch)
    for name in ("gold.patch", "issue.md"):
        (full / name).write_text("")
    (full / "task.toml").write_text(f'instance_id = "full-task"\n[repo_source]\nref = "{ref}"\n')
    f2p = ["test_m.py::Tests::test_a", "test_m.py::Tests::test_b", "test_m.py::TestChild::test_a", "test_m.py::TestChild::test_b"]
    assert oracle.thin(full, f2p, tmp_path / "thin") == "inherited_tests"
    assert oracle.thin(full, f2p[:2] + ["test_m.py::Tests::test_c"], tmp_path / "thin") == "inherited_tests"  # not defined at all


@pytest.mark.bwrap
def test_regression_a_mutant_of_a_task_whose_gold_gives_no_pattern_crashed_the_run(sample_tasks, swedeck_env, bwrap_backend) -> None:  # noqa: ANN001
    """typing_extensions a2abfe6's gold patches ``typing`` and is tamper_suspected, so its gold run
    gives no pattern (EnvError): grading its mutants raised and ended the benchmark's mutant stage.
    Such a task's mutants are not graded (None); the others are."""
    task = sample_tasks["sample__toposort-1"]
    broken = task.model_copy(update={"instance_id": "broken", "test_cmd": ["python -c 'raise SystemExit(3)'"]})
    rewards = oracle.grade_all([("broken", task.answer.gold_patch), (task.instance_id, task.answer.gold_patch), ("absent", "")],
                               {"broken": broken, task.instance_id: task}, "bwrap", 2)  # fmt: skip
    assert rewards == [None, 1.0, None]
