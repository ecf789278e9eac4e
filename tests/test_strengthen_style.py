"""Strengthening in the test file's own style: a distinguishing input becomes a new ``parametrize``
case of the test it came from where its call fits the test's call, a method of the test's class
(unittest or pytest, setUp and fixtures honoured) or a module-level function taking the fixtures it
uses. The AST edits are pure; each written file is also run by pytest here (no sandbox) to check the
node id pytest gives the new test and that it passes on the library it was written against."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness.records import Behaviour, DistinguishingInput, ProbeResult, Strengthening
from judge.strengthen.candidates import model_free_candidate
from judge.strengthen.cases import add_case, place
from judge.strengthen.stage import anchor_for
from judge.strengthen.writing import Candidate, split_test_id

LIB = '''\
def tail(n, iterable):
    if n < 0:
        raise ValueError("n must be >= 0")
    items = list(iterable)
    return items[len(items) - n:] if n else []


def shout(text, *, mark="!"):
    return text.upper() + mark
'''

PARAMETRIZED = '''\
import pytest

import lib as mi


@pytest.mark.slow_not_really
@pytest.mark.parametrize(
    "n, iterable, expected",
    [
        (1, "ABC", ["C"]),
        pytest.param(2, "ABC", ["B", "C"], id="two"),  # a comment stays put
    ],
    ids=["one", "two"],
)
def test_tail(n, iterable, expected):
    """Taking the last n items."""
    assert list(mi.tail(n, iterable)) == expected


@pytest.mark.parametrize("n", [-1, -5])
def test_negative(n):
    with pytest.raises(ValueError):
        mi.tail(n, "ABC")


@pytest.mark.parametrize(("text", "exc"), [(None, AttributeError)])
def test_bad_text(text, exc):
    with pytest.raises(exc):
        mi.shout(text)


@pytest.mark.parametrize("a", [1])
@pytest.mark.parametrize("b", [2])
def test_product(a, b):
    assert mi.tail(a, [b]) == [b]
'''


def survivor(test_id: str, call: str, gold: Behaviour, literal: str = "", setup: list[str] | None = None) -> ProbeResult:
    d = DistinguishingInput(test_id=test_id, how="hand-made", setup=setup or [], call=call, gold=gold,
                            other=Behaviour(value="'other'"), literal=literal)  # fmt: skip
    return ProbeResult(config_hash="c", task_hash="t", instance_id="i", probe_id="p1", kind="plausible_wrong", origin="model_free",
                       operator="mutate_compare", description="", patch="", reward=1.0, reason="", selected_reward=None,
                       executions=1, differing=[], log_path="", distinguishing=d)  # fmt: skip


def run_pytest(tmp_path: Path, files: dict[str, str], node: str) -> str:
    """pytest on ``files`` (plus LIB) selecting ``node``; its -rA summary lines."""
    for path, text in {"lib.py": LIB, **files}.items():
        (tmp_path / path).write_text(text)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", node], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    return done.stdout + done.stderr


def test_an_input_fitting_a_parametrized_test_becomes_a_new_case_in_its_list_and_ids(tmp_path: Path) -> None:
    probe = survivor("tests_t.py::test_tail[one]", "list(mi.tail(0, 'ABC'))", Behaviour(value="[]"), literal="[]")
    cand = model_free_candidate(probe, {"tests_t.py": PARAMETRIZED}, form="case")
    assert cand is not None and (cand.name, cand.cls) == ("test_tail", None)
    assert cand.code == f"pytest.param(0, 'ABC', [], id={cand.case!r})" and cand.case.startswith("strengthened_")
    assert cand.test_id == f"tests_t.py::test_tail[{cand.case}]"
    out = place(PARAMETRIZED, cand)
    assert out == PARAMETRIZED.replace(
        '        pytest.param(2, "ABC", ["B", "C"], id="two"),  # a comment stays put\n',
        f'        pytest.param(2, "ABC", ["B", "C"], id="two"),\n        {cand.code},  # a comment stays put\n',
    ).replace('ids=["one", "two"]', f'ids=["one", "two", {cand.case!r}]')
    assert f"PASSED {cand.test_id}" in run_pytest(tmp_path, {"tests_t.py": out}, cand.test_id)


def test_an_observed_call_with_its_imports_is_a_case_of_the_test_that_made_it() -> None:
    """The observation engine states a call as the function's own name after its import lines; the
    test reaches it through its module: the callee's name and the arguments decide."""
    probe = survivor("tests_t.py::test_tail[one]", "list(tail(0, 'ABC'))", Behaviour(value="[]"), literal="[]",
                     setup=["from lib import tail"])  # fmt: skip
    cand = model_free_candidate(probe, {"tests_t.py": PARAMETRIZED}, form="case")
    assert cand is not None and cand.code == f"pytest.param(0, 'ABC', [], id={cand.case!r})"


def test_a_raising_input_is_a_case_of_a_raises_test_and_fills_an_exception_argname(tmp_path: Path) -> None:
    sources = {"tests_t.py": PARAMETRIZED}
    negative = model_free_candidate(survivor("tests_t.py::test_negative[-1]", "mi.tail(-2, 'ABC')", Behaviour(raised="ValueError")),
                                    sources, form="case")  # fmt: skip
    assert negative is not None and negative.code == f"pytest.param(-2, id={negative.case!r})"
    assert place(PARAMETRIZED, negative).count(f'[-1, -5, {negative.code}]') == 1  # one line: appended on it
    bad = model_free_candidate(survivor("tests_t.py::test_bad_text[text0-exc0]", "mi.shout(3)", Behaviour(raised="builtins.AttributeError")),
                               sources, form="case")  # fmt: skip
    assert bad is not None and bad.code == f"pytest.param(3, AttributeError, id={bad.case!r})"
    both = place(place(PARAMETRIZED, negative), bad)
    log = run_pytest(tmp_path, {"tests_t.py": both}, "tests_t.py")
    assert f"PASSED {negative.test_id}" in log and f"PASSED {bad.test_id}" in log


def test_inputs_that_do_not_fit_a_case_fall_back_to_a_function() -> None:
    sources = {"tests_t.py": PARAMETRIZED}
    # another callee, keywords the test does not pass, a product of two parametrize lists, setup statements
    misfits = [
        ("tests_t.py::test_tail[one]", "mi.shout('a')", Behaviour(value="'A!'"), "'A!'", None),
        ("tests_t.py::test_tail[one]", "list(mi.tail(0, 'ABC', strict=True))", Behaviour(value="[]"), "[]", None),
        ("tests_t.py::test_product[2-1]", "mi.tail(0, [2])", Behaviour(value="[]"), "[]", None),
        ("tests_t.py::test_tail[one]", "list(mi.tail(0, x))", Behaviour(value="[]"), "[]", ["x = 'ABC'"]),
    ]
    for test_id, call, gold, literal, setup in misfits:
        probe = survivor(test_id, call, gold, literal, setup)
        assert model_free_candidate(probe, sources, form="case") is None, call
        function = model_free_candidate(probe, sources, form="function")
        assert function is not None and function.case == "" and function.code.splitlines()[-1] == f"    assert {call} == {literal}"
    # a parametrized test's checks read its argnames: no anchored copy of them
    assert model_free_candidate(survivor("tests_t.py::test_tail[one]", "mi.shout('a')", Behaviour(value="'A!'"), "'A!'"),
                                sources, form="anchored") is None  # fmt: skip


FIXTURES = '''\
import pytest

import lib


@pytest.fixture
def word():
    return "abc"


@pytest.fixture
def unused():
    return 0


@pytest.mark.usefixtures("unused")
def test_shout(word, unused, tmp_path):
    assert lib.shout(word) == "ABC!"
'''


def test_a_function_takes_the_original_tests_fixtures_its_statements_use(tmp_path: Path) -> None:
    probe = survivor("tests_f.py::test_shout", "lib.shout(word, mark='?')", Behaviour(value="'ABC?'"), literal="'ABC?'")
    cand = model_free_candidate(probe, {"tests_f.py": FIXTURES}, form="function")
    assert cand is not None and cand.cls is None
    lines = cand.code.splitlines()
    assert lines[0] == "@pytest.mark.usefixtures('unused')" and lines[1] == f"def {cand.name}(word):"
    assert lines[-1] == "    assert lib.shout(word, mark='?') == 'ABC?'"
    assert f"PASSED {cand.test_id}" in run_pytest(tmp_path, {"tests_f.py": place(FIXTURES, cand)}, cand.test_id)


UNITTEST = '''\
import unittest

import lib


class ShoutTests(unittest.TestCase):
    def setUp(self):
        self.word = "abc"

    def test_shout(self):
        self.assertEqual(lib.shout(self.word), "ABC!")


class TestPlain:
    @pytest.mark.parametrize("n", [1])
    def test_tail(self, n):
        assert lib.tail(n, "AB") == ["B"]


import pytest  # noqa: E402 - late on purpose: the decorator above is evaluated at class creation
'''


def test_a_class_test_gets_a_method_with_setup_or_a_case_in_its_method(tmp_path: Path) -> None:
    source = UNITTEST.replace("import pytest  # noqa: E402 - late on purpose: the decorator above is evaluated at class creation\n", "")
    source = "import pytest\n" + source
    method = model_free_candidate(survivor("tests_u.py::ShoutTests::test_shout", "lib.shout(self.word, mark='?')",
                                           Behaviour(value="'ABC?'"), literal="'ABC?'"), {"tests_u.py": source})  # fmt: skip
    assert method is not None and method.cls == "ShoutTests"
    assert method.code.splitlines()[-1] == "    self.assertEqual(lib.shout(self.word, mark='?'), 'ABC?')"
    case = model_free_candidate(survivor("tests_u.py::TestPlain::test_tail[1]", "lib.tail(2, 'AB')", Behaviour(value="['A', 'B']"),
                                         literal="['A', 'B']"), {"tests_u.py": source}, form="case")  # fmt: skip
    assert case is None  # the test compares with a constant, not an argname: the expected value has no hole
    case = model_free_candidate(survivor("tests_u.py::TestPlain::test_tail[1]", "lib.tail(1, 'AB')", Behaviour(value="['B']"),
                                         literal="['B']"), {"tests_u.py": source}, form="case")  # fmt: skip
    assert case is not None and case.test_id == f"tests_u.py::TestPlain::test_tail[{case.case}]"
    out = place(place(source, method), case)
    assert out.count(f"[1, {case.code}]") == 1 and "        self.assertEqual(lib.shout(self.word, mark='?'), 'ABC?')\n" in out
    log = run_pytest(tmp_path, {"tests_u.py": out}, "tests_u.py")
    assert f"PASSED {method.test_id}" in log and f"PASSED {case.test_id}" in log


def test_a_case_edit_keeps_the_list_layout_and_non_ascii_text() -> None:
    source = textwrap.dedent('''\
        import pytest
        # ünïcode before the list: AST columns count bytes
        @pytest.mark.parametrize("s, out", [("é", "É"),
                                            ("ß", "SS")])
        def test_up(s, out):
            assert s.upper() == out
        ''')
    out = add_case(source, ["test_up"], "pytest.param('ü', 'Ü', id='x')", "x")
    assert '("ß", "SS"), pytest.param(\'ü\', \'Ü\', id=\'x\')])' in out
    with pytest.raises(ValueError, match="no literal parametrize list"):
        add_case(source, ["test_none"], "1", "x")
    assert split_test_id("t.py::C::test_a[x::y-1]") == ("t.py", ["C", "test_a"])
    assert Candidate(file="t.py", cls="C", name="test_a", code="", source="model_free", found_by="", case="k").test_id == "t.py::C::test_a[k]"


def test_selecting_a_parametrized_tests_id_without_its_parameters_runs_every_case(tmp_path: Path) -> None:
    """Regression: the grader's canaries copy parametrized tests and name them without parameters; the
    select plugin matched ids exactly, so a selected grade (strengthening's gold_stable) never ran the
    must-fail canary and gold's new test got reward 0 as spoofing_suspected."""
    (tmp_path / "wanted").write_text("tests_t.py::test_negative\ntests_t.py::test_tail[one]\n")
    plugins = Path(__file__).resolve().parent.parent / "harness" / "grading" / "plugins"
    (tmp_path / "lib.py").write_text(LIB)
    (tmp_path / "tests_t.py").write_text(PARAMETRIZED)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", "-p", "swedeck_select", "tests_t.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "PYTHONPATH": str(plugins), "SWEDECK_SELECT": str(tmp_path / "wanted")})  # fmt: skip
    ran = sorted(line.split()[1] for line in done.stdout.splitlines() if line.startswith("PASSED "))
    assert ran == ["tests_t.py::test_negative[-1]", "tests_t.py::test_negative[-5]", "tests_t.py::test_tail[one]"], done.stdout


def test_a_strengthening_that_keeps_no_test_is_a_record_without_a_tests_patch() -> None:
    """Regression: ``tests_patch`` had no default, so every not_repaired outcome (no confirmed survivor,
    no candidate passing validation) raised a ValidationError instead of being recorded."""
    record = Strengthening(config_hash="c", task_hash="t", instance_id="i", status="not_repaired", reason="none kept",
                           survivors=["p"], killed=[], tests=[])  # fmt: skip
    assert record.tests_patch == "" and record.hidden_files == {}


def test_an_input_observed_in_a_passing_test_is_anchored_on_a_fail_to_pass_test_of_its_file() -> None:
    """The observation engine's inputs may come from a test that passes on both trees; repeating that
    test's checks cannot make the new test fail on buggy, the FAIL_TO_PASS test's can."""
    source = FIXTURES + '\n\ndef test_take_more(word):\n    assert lib.shout(word, mark="?") == "ABC?"\n'
    probe = survivor("tests_f.py::test_shout", "lib.shout('x')", Behaviour(value="'X!'"), literal="'X!'")
    f2p = ["tests_g.py::test_other", "tests_f.py::test_take_more"]
    assert anchor_for(probe, f2p) == "tests_f.py::test_take_more" and anchor_for(probe, ["tests_f.py::test_shout"]) == "tests_f.py::test_shout"
    cand = model_free_candidate(probe, {"tests_f.py": source}, form="anchored", anchor=anchor_for(probe, f2p))
    assert cand is not None and cand.code.splitlines() == [
        f"def {cand.name}(word):", "    # test_take_more's checks, then gold's behaviour on an input the original tests leave open (hand-made)",
        '    assert lib.shout(word, mark="?") == "ABC?"', "    assert lib.shout('x') == 'X!'",
    ]  # fmt: skip


def test_an_anchored_test_imports_before_the_original_checks_run(tmp_path: Path) -> None:
    """Regression: the observation engine's import line went after the original checks, so a name
    those checks use was a local of the new function not yet bound (UnboundLocalError on gold)."""
    source = "from lib import tail\n\n\ndef test_negative():\n    assert tail(1, 'AB') == ['B']\n"
    probe = survivor("tests_n.py::test_negative", "tail(0, 'AB')", Behaviour(value="[]"), literal="[]", setup=["from lib import tail"])
    cand = model_free_candidate(probe, {"tests_n.py": source}, form="anchored")
    assert cand is not None and cand.code.splitlines()[2:] == ["    from lib import tail", "    assert tail(1, 'AB') == ['B']",
                                                               "    assert tail(0, 'AB') == []"]  # fmt: skip
    assert f"PASSED {cand.test_id}" in run_pytest(tmp_path, {"tests_n.py": place(source, cand)}, cand.test_id)


def test_a_new_test_carries_the_decorators_that_wrap_the_original_s_call_and_no_other() -> None:
    """An input observed under a frozen clock holds only under it; marks are the original's own, and a
    patch or Hypothesis would hand the new test arguments it does not take."""
    import ast

    from judge.strengthen.candidates import carried_decorators

    source = """
@pytest.mark.usefixtures("db")
@pytest.mark.parametrize("a", [1])
@freeze_time("2020-01-01")
@mock.patch("x.y")
@mock.patch.object(A, "b")
@pytest.mark.skipif(True, reason="")
@settings(max_examples=5)
@given(st.integers())
def test_x(a, b, c):
    pass
"""
    assert carried_decorators(ast.parse(source).body[0]) == ["pytest.mark.usefixtures('db')", "freeze_time('2020-01-01')"]
