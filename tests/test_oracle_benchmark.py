"""benchmarks/oracle_strengthening.py's own logic: which commits it mines and how it thins a suite. The
benchmark's figures come from running it (README); these check the pieces that decide what it measures."""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path

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
