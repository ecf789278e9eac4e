"""The differential engine: FAIL_TO_PASS tests turned into programs, the inputs it tries, the driver on
hand-made trees (host Python), then gold against survivors of the sample corpus in bwrap sandboxes."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from data import SAMPLE
from harness.sandboxes.envs import prepare_tree
from harness.pyast import parse
from harness.records import Task
from probes.differential import session_for
from probes.differential.literals import alternatives_for, constant, pool, variants
from probes.differential.session import equivariant, first_difference
from probes.differential.statements import programs, steps_of
from probes.replay import DRIVER, Program, free_names

DATA = Path(__file__).parent / "data" / "differential"

PYTEST_FILE = '''
import pytest
from lib import price, Rate, EUR

def test_price():
    """docstring"""
    rate = Rate(2)
    assert price(10, "USD", rate) == "USD 20"
    assert price(1, "JPY", rate) == "JPY 2"
    with pytest.raises(ValueError):
        price(-1, "USD", rate)
    for n in (1, 2):
        assert price(n, "USD", rate)

def test_with_fixture(tmp_path):
    assert price(1, "USD", Rate(1)) == "USD 1"

@pytest.mark.parametrize("n,shown", [(1, "USD 1"), (2, "USD 2")])
def test_cases(n, shown):
    assert price(n, "USD", Rate(1)) == shown

def freeze_time(day):  # as freezegun's: wraps the test's call
    return lambda fn: fn

@freeze_time("2020-01-01")
def test_frozen():
    assert price(1, "USD", Rate(1)) == "USD 1"

def given(*strategies):  # as Hypothesis's: calls the test many times, with arguments of its own
    return lambda fn: fn

@given(1)
def test_property(n):
    assert price(n, "USD", Rate(1))
'''

UNITTEST_FILE = '''
import unittest
from lib import price, Rate

class PriceTests(unittest.TestCase):
    def setUp(self):
        self.rate = Rate(3)

    def test_price(self):
        self.assertEqual(price(2, "USD", self.rate), "USD 6")
        self.assertTrue(price(1, "USD", self.rate))
'''

LIB = '''
class Rate:
    def __init__(self, factor):
        self.factor = factor

EUR = "EUR"
USD_RATE = Rate(1)
EUR_RATE = Rate(5)

def price(amount, currency, rate):
    if amount < 0:
        raise ValueError("negative")
    return f"{currency} {amount * rate.factor}"
'''


def test_pytest_statements_become_observations_and_setup() -> None:
    fn = next(n for n in parse(PYTEST_FILE).body if getattr(n, "name", "") == "test_price")
    steps = steps_of(fn.body)
    assert [(s.kind, s.src) for s in steps] == [
        ("exec", "rate = Rate(2)"),
        ("observe", "price(10, 'USD', rate)"),
        ("observe", "price(1, 'JPY', rate)"),
        ("observe", "price(-1, 'USD', rate)"),  # the raises block's body, observed
        ("exec", "for n in (1, 2):\n    price(n, 'USD', rate)"),  # a compound statement runs with its asserts stripped
    ]
    # the raises block's observation raised in the test: a later distinguishing input does not run it as setup
    assert [s.assertion for s in steps] == [False, True, True, True, False]
    assert free_names(steps) == ["Rate", "price"]


RAISES_CALLS_FILE = '''
import unittest
import pytest
from lib import price, Rate

class NegativeTests(unittest.TestCase):
    def test_negative(self):
        self.assertRaises(ValueError, lambda: price(-1, "USD", Rate(1)))
        self.assertRaises(ValueError, price, -2, "USD", Rate(1))
        self.assertRaisesRegex(ValueError, "negative", price, -3, "USD", Rate(1))

def test_negative_pytest():
    pytest.raises(ValueError, price, -4, "USD", Rate(1))
'''


def test_the_call_form_of_raises_observes_the_call_it_makes() -> None:
    """Regression (more-itertools' real fix commit: ``self.assertRaises(ValueError, lambda: list(mi.tail(-1,
    'ABCDEFG')))``): the whole assertRaises call was observed, so gold's behaviour on a variant was
    'AssertionError' and the test written from it asserted the assertion machinery failing. Now the
    callable's call is observed: a value or which exception, as gold gives it."""
    found = programs({"tests/test_r.py": RAISES_CALLS_FILE},
                     ["tests/test_r.py::NegativeTests::test_negative", "tests/test_r.py::test_negative_pytest"])  # fmt: skip
    assert [[(s.kind, s.src, s.assertion) for s in p.steps] for p in found] == [
        [("observe", "price(-1, 'USD', Rate(1))", True), ("observe", "price(-2, 'USD', Rate(1))", True),
         ("observe", "price(-3, 'USD', Rate(1))", True)],
        [("observe", "price(-4, 'USD', Rate(1))", True)],
    ]  # fmt: skip


def test_a_negative_number_is_one_literal() -> None:
    """``-4`` varies as -3, -5, 0, ... (not as ``-0`` or ``--4``), and a negative replacement keeps its
    parentheses where it needs them."""
    (base,) = programs({"tests/test_r.py": RAISES_CALLS_FILE}, ["tests/test_r.py::test_negative_pytest"])
    amounts = [p.how for p in variants(base, [True], [], {}, 40) if p.how.startswith("-4 -> ")]
    assert amounts[:4] == ["-4 -> -3 (neighbour)", "-4 -> -5 (neighbour)", "-4 -> 0 (boundary)", "-4 -> 1 (boundary)"]
    assert ast.unparse(ast.Call(ast.Attribute(constant(-2), "bit_length"), [], [])) == "(-2).bit_length()"


def test_only_replayable_tests_become_programs() -> None:
    sources = {"tests/test_a.py": PYTEST_FILE, "tests/test_u.py": UNITTEST_FILE}
    found = programs(sources, ["tests/test_a.py::test_price", "tests/test_a.py::test_with_fixture",
                               "tests/test_a.py::test_cases[1-USD 1]", "tests/test_a.py::test_frozen", "tests/test_a.py::test_property",
                               "tests/test_u.py::PriceTests::test_price"])  # fmt: skip
    # a test with fixtures, or a parametrized case, is a program pytest runs with them; a decorator that
    # wraps the test's call is re-applied around the program, a mark is pytest's; a property test is none
    assert [(p.test_id, p.cls, p.method, p.fixtures, p.decorators) for p in found] == [
        ("tests/test_a.py::test_price", None, "test_price", [], []),
        ("tests/test_a.py::test_with_fixture", None, "test_with_fixture", ["tmp_path"], []),
        ("tests/test_a.py::test_cases[1-USD 1]", None, "test_cases", ["n", "shown"], []),
        ("tests/test_a.py::test_frozen", None, "test_frozen", [], ["freeze_time('2020-01-01')"]),
        ("tests/test_u.py::PriceTests::test_price", "PriceTests", "test_price", [], []),
    ]
    assert [s.src for s in found[4].steps] == ["price(2, 'USD', self.rate)", "price(1, 'USD', self.rate)"]


def test_a_parametrized_case_varies_its_parameters_bound_before_its_statements() -> None:
    from probes.differential.literals import case_variants

    (base,) = programs({"tests/test_a.py": PYTEST_FILE}, ["tests/test_a.py::test_cases[1-USD 1]"])
    tried = case_variants(base, {"n": "1", "shown": "'USD 1'", "rate": ""}, ["EUR 1"], 6)
    assert [p.prelude()[-1] for p in tried[:4]] == ["n = 2", "shown = 'USD 2'", "n = 0", "shown = 'USD 0'"]
    assert all(p.steps == base.steps and p.base_key == base.key for p in tried) and len(tried) == 6
    assert tried[1].renamed == ("USD 1", "USD 2") and tried[0].renamed is None


def test_inputs_are_neighbours_same_shape_values_and_deterministic_hypothesis_draws() -> None:
    issue = "Three-decimal currencies such as `KWD` and BHD are wrong; also `*/3` in the month field."
    values = pool(issue, ["x = 'SEK'"])
    assert {"KWD", "BHD", "*/3", "SEK"} <= set(values)
    tried = alternatives_for("USD", values)
    assert [v for v, how in tried if how.startswith("issue or tests, same shape")] == ["SEK", "KWD", "BHD"]
    assert ("*/3", "neighbour") in alternatives_for("*/2", values)
    assert [v for v, _ in alternatives_for(7, [])][:4] == [8, 6, 0, 1]
    assert alternatives_for(7, []) == alternatives_for(7, [])  # Hypothesis draws are derandomised
    assert any(how == "hypothesis" for _, how in alternatives_for(7, []))


# ================================================================================ the driver on the host


def make_tree(root: Path, lib: str, tests: dict[str, str]) -> Path:
    (root / "tests").mkdir(parents=True)
    (root / "lib.py").write_text(textwrap.dedent(lib))
    for name, text in tests.items():
        (root / "tests" / name).write_text(textwrap.dedent(text))
    return root


def drive(root: Path, progs: list[Program], *, discover: bool = False, timeout_s: float = 2.0) -> dict:
    """The driver as the engine runs it in a sandbox, here on a host folder."""
    spec = {"changed": ["lib.py"], "timeout_s": timeout_s, "discover": discover,
            "programs": [p.spec(free_names(p.steps)) for p in progs]}  # fmt: skip
    (root.parent / "spec.json").write_text(json.dumps(spec))
    subprocess.run([sys.executable, str(DRIVER), str(root.parent / "spec.json"), str(root.parent / "out.json")], cwd=root, check=True)
    return json.loads((root.parent / "out.json").read_text())


SPECIAL_CASED = LIB.replace('return f"{currency} {amount * rate.factor}"', '''if currency in ("USD", "JPY"):
        return f"{currency} {amount * rate.factor}"
    return f"{currency} {amount}"''')
EQUIVALENT = LIB.replace('return f"{currency} {amount * rate.factor}"', '''total = rate.factor * amount
    return f"{currency} {total}"''')


def _search(tmp_path: Path, other_lib: str, test: str = PYTEST_FILE, name: str = "test_price") -> tuple[Program | None, int, list[dict]]:
    """The first program (the test's own, then its variants) on which ``other_lib`` differs from
    LIB, how many were tried, and gold's observations of it."""
    sources = {"tests/test_a.py": test}
    gold_root = make_tree(tmp_path / "gold" / "repo", LIB, {"test_a.py": test})
    other_root = make_tree(tmp_path / "other" / "repo", other_lib, {"test_a.py": test})
    (base,) = programs(sources, [f"tests/test_a.py::{name}"])
    first = drive(gold_root, [base], discover=True)
    observed = first["results"][base.key]
    reached = [any(o["reached"] for o in observed if o["step"] == i) for i in range(len(base.steps))]
    progs = [base, *variants(base, reached, pool("Prices in EUR are wrong", sources.values()), first["alternatives"][base.key], 60)]
    gold, other = drive(gold_root, progs), drive(other_root, progs)
    for tried, p in enumerate(progs, 1):
        if first_difference(gold["results"][p.key], other["results"][p.key]) is not None:
            return p, tried, gold["results"][p.key]
    return None, len(progs), []


def test_a_special_cased_patch_is_told_apart_on_an_input_the_tests_never_use(tmp_path: Path) -> None:
    found, tried, _ = _search(tmp_path, SPECIAL_CASED)
    assert found is not None and tried > 1, "the test's own literals cannot tell them apart; a variant must"
    assert "EUR" in found.how or "SEK" in found.how or "-> " in found.how


def test_an_equivalent_rewrite_is_likely_equivalent(tmp_path: Path) -> None:
    found, tried, _ = _search(tmp_path, EQUIVALENT)
    assert found is None and tried > 20


def test_a_call_form_raises_test_tells_a_boundary_mutant_apart_by_gold_s_own_value(tmp_path: Path) -> None:
    """``amount <= 0`` instead of gold's ``amount < 0`` passes a test that only checks -1 raises; at 0
    gold returns a value and the mutant raises, and that (not an AssertionError of assertRaises) is
    what the engine records."""
    test = "from lib import price, Rate\n\ndef test_n():\n    pytest.raises(ValueError, lambda: price(-1, 'USD', Rate(1)))\n"
    test = "import pytest\n" + test
    found, tried, gold = _search(tmp_path, LIB.replace("if amount < 0:", "if amount <= 0:"), test, "test_n")
    assert found is not None and tried > 1 and found.steps[0].src == "price(0, 'USD', Rate(1))", found
    assert gold == [{"step": 0, "raised": "", "value": "'USD 0'", "stdout": "", "reached": True, "literal": "'USD 0'"}]


def test_names_bound_to_project_values_are_swapped_for_values_of_the_same_type(tmp_path: Path) -> None:
    test = "from lib import price, USD_RATE\n\ndef test_usd():\n    assert price(2, 'USD', USD_RATE) == 'USD 2'\n"
    root = make_tree(tmp_path / "t" / "repo", LIB, {"test_n.py": test})
    (base,) = programs({"tests/test_n.py": test}, ["tests/test_n.py::test_usd"])
    out = drive(root, [base], discover=True)
    assert out["alternatives"][base.key] == {"USD_RATE": [["lib", "EUR_RATE"]]}


def test_module_import_time_does_not_count_against_a_program(tmp_path: Path) -> None:
    """Regression: the per-program alarm once started before the test module was imported, so a module
    slower to import than the limit (pytest, cold, in a sandbox) timed out every program."""
    slow = "import time\ntime.sleep(0.5)\nfrom lib import price, Rate\n\ndef test_p():\n    assert price(1, 'USD', Rate(1)) == 'USD 1'\n"
    root = make_tree(tmp_path / "s" / "repo", LIB, {"test_slow.py": slow})
    (base,) = programs({"tests/test_slow.py": slow}, ["tests/test_slow.py::test_p"])
    out = drive(root, [base], timeout_s=0.3)
    assert out["results"][base.key] == [{"step": 0, "raised": "", "value": "'USD 1'", "stdout": "", "reached": True, "literal": "'USD 1'"}]


def test_a_program_that_loops_forever_is_cut_and_tells_nothing(tmp_path: Path) -> None:
    looping = LIB.replace('    if amount < 0:', '    while currency == "EUR":\n        pass\n    if amount < 0:')
    test = "from lib import price, Rate\n\ndef test_p():\n    assert price(1, 'EUR', Rate(1)) == 'EUR 1'\n"
    root = make_tree(tmp_path / "l" / "repo", looping, {"test_l.py": test})
    (base,) = programs({"tests/test_l.py": test}, ["tests/test_l.py::test_p"])
    observed = drive(root, [base], timeout_s=0.3)["results"][base.key]
    assert observed[0]["raised"] == "timeout"
    assert first_difference(observed, observed) is None  # a timeout on gold is no comparison


# ================================================================================ the sample corpus (bwrap)


@pytest.fixture(scope="module")
def sessions(sample_tasks: dict[str, Task], bwrap_backend, swedeck_env):  # noqa: ANN001, ANN201
    f2p = {
        "sample__moneyfmt-1": ["tests/test_formatting.py::test_format_uses_currency_minor_units"],
        "sample__cronexpr-1": ["tests/test_fields.py::test_star_step_in_day_of_month_counts_from_first_day",
                               "tests/test_schedule.py::test_every_other_day_fires_on_odd_days"],
        "sample__toposort-1": ["tests/test_sort.py::test_repeated_dependency_is_not_a_cycle",
                               "tests/test_sort.py::test_repeated_dependency_from_dict"],
    }  # fmt: skip
    out = {}
    for iid, tests in f2p.items():
        task = sample_tasks[iid]
        bwrap_backend.prepare(task)
        out[iid] = session_for(task, bwrap_backend, tests, prepare_tree(task, swedeck_env))
    return out


@pytest.mark.bwrap
def test_the_labelled_wrong_patches_are_told_apart_from_gold(sessions) -> None:  # noqa: ANN001
    money = sessions["sample__moneyfmt-1"].distinguish((SAMPLE / "sample__moneyfmt-1/probes/wrong.patch").read_text())
    assert money.found is not None
    assert "'KWD'" in money.found.call or "'BHD'" in money.found.call or "'TND'" in money.found.call
    assert money.found.literal.endswith(".000'") or money.found.literal.endswith(".345'")
    cron = sessions["sample__cronexpr-1"].distinguish((SAMPLE / "sample__cronexpr-1/probes/wrong.patch").read_text())
    assert cron.found is not None and "MONTH" in cron.found.call
    assert cron.found.setup == ["from cronexpr.fields import MONTH"]
    assert cron.found.literal == "frozenset({1, 3, 5, 7, 9, 11})"


@pytest.mark.bwrap
def test_gold_itself_and_a_comment_only_change_are_likely_equivalent(sessions, sample_tasks) -> None:  # noqa: ANN001
    session = sessions["sample__moneyfmt-1"]
    gold = sample_tasks["sample__moneyfmt-1"].answer.gold_patch
    same = session.distinguish(gold)
    assert same.found is None and same.tried > 20
    commented = gold.replace("+    # one digit per minor unit: none for JPY, two for USD, three for KWD", "+    # digits: minor units")
    assert session.distinguish(commented).found is None


def test_gold_equivariant_under_a_renaming_makes_the_string_an_opaque_name() -> None:
    order = {"step": 1, "raised": "", "value": ["list", ["'log'", "'app'"]], "stdout": "sorted app"}
    renamed = {"step": 1, "raised": "", "value": ["list", ["'log'", "'top'"]], "stdout": "sorted top"}
    assert equivariant([order], [renamed], "app", "top")
    # gold treats the new value differently (three decimals for KWD): not a renaming, a case of the behaviour
    usd, kwd = {"step": 0, "raised": "", "value": "'$12.34'", "stdout": ""}, {"step": 0, "raised": "", "value": "'KD 1.234'", "stdout": ""}
    assert not equivariant([usd], [kwd], "USD", "KWD")
    assert not equivariant([order], [{**renamed, "raised": "toposort.errors.CycleError"}], "app", "top")


@pytest.mark.bwrap
def test_a_survivor_that_only_tells_opaque_names_apart_is_not_evidence(sessions) -> None:  # noqa: ANN001
    """toposort (valid): the special case that dedupes only for the tests' node names behaves unlike
    gold once a node is renamed, but gold's sort is the same sort under any names, so the input is the
    test's own case renamed: likely equivalent. moneyfmt's special case on the tests' currency codes
    stays confirmed: gold formats KWD (a currency the issue names) unlike USD."""
    topo = sessions["sample__toposort-1"].distinguish((DATA / "toposort_special_case_node.patch").read_text())
    assert topo.found is None and "renamed opaque identifiers" in topo.detail, topo
    money = sessions["sample__moneyfmt-1"].distinguish((DATA / "moneyfmt_special_case_currency.patch").read_text())
    assert money.found is not None and "'USD' -> " in money.found.how


CLOCK_LIB = '''
import time

def offset():
    return 0

def stamp():
    return int(time.time()) + offset()
'''
CLOCK_TESTS = '''
import functools
import time
from unittest import mock

import pytest

from lib import stamp


def frozen(at):  # as freezegun's freeze_time: the clock stands still for the test's call
    def wrap(fn):
        @functools.wraps(fn)
        def inner(*args, **kwargs):
            real, time.time = time.time, lambda: at
            try:
                return fn(*args, **kwargs)
            finally:
                time.time = real
        return inner
    return wrap


@frozen(86400)
def test_frozen():
    assert stamp() == 86400


@pytest.mark.slow
@mock.patch("lib.offset", return_value=7)
@frozen(60)
def test_frozen_with_fixture(offset, tmp_path):  # a patch's mock comes first, pytest leaves it out
    assert stamp() == 67
'''


def test_regression_a_decorator_that_wraps_the_test_s_call_is_re_applied_around_the_program(tmp_path: Path) -> None:
    """A test under a frozen clock replayed without it observed the real time: gold's value changed each
    run and could tell nothing; the program now runs inside the test's own decorators (through pytest
    too, with a decorator's extra argument bound to the test's parameter nothing else supplies)."""
    root = make_tree(tmp_path / "repo", CLOCK_LIB, {"test_c.py": CLOCK_TESTS})
    progs = programs({"tests/test_c.py": CLOCK_TESTS}, ["tests/test_c.py::test_frozen", "tests/test_c.py::test_frozen_with_fixture"])
    assert [p.decorators for p in progs] == [["frozen(86400)"], ["mock.patch('lib.offset', return_value=7)", "frozen(60)"]]
    assert progs[1].fixtures == ["offset", "tmp_path"]
    got = drive(root, progs)["results"]
    assert [o["value"] for o in got["tests/test_c.py::test_frozen"]] == ["86400"]
    assert [o["value"] for o in got["tests/test_c.py::test_frozen_with_fixture"]] == ["67"], got


def test_regression_a_literal_s_hypothesis_draw_runs_only_where_its_values_can_be_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """A literal's alternatives stop at ``PER_LITERAL``; Hypothesis drew for every literal anyway (a
    derandomised run each). It draws only where the others leave room, with the same alternatives."""
    import probes.differential.literals as literals

    many = ["USB", "GBP", "EUR", "JPY", "KWD", "BHD", "CHF", "SEK", "NOK", "DKK", "PLN"]
    eager = {case: literals.alternatives_for(case, many if case == "USD" else []) for case in ("USD", 7)}
    asked: list[object] = []
    real = literals._hypothesis
    monkeypatch.setattr(literals, "_hypothesis", lambda value: asked.append(value) or real(value))
    assert {case: literals.alternatives_for(case, many if case == "USD" else []) for case in ("USD", 7)} == eager
    assert asked == [7] and len(eager["USD"]) == literals.PER_LITERAL
    assert any(how == "hypothesis" for _, how in eager[7])


@pytest.mark.bwrap
def test_regression_a_program_that_tells_nothing_on_gold_is_not_run_on_a_survivor(sessions, sample_tasks, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    """A program gold times out on (its whole limit) was replayed on every survivor, where no answer
    can be evidence. It is not run on the patch, and still counts as compared."""
    import copy

    import probes.differential.session as module
    from probes.replay import Observed, Step, run_programs

    task = sample_tasks["sample__moneyfmt-1"]
    session = copy.copy(sessions["sample__moneyfmt-1"])
    gold = session.gold()
    loop = Program(key="loop", test_id="t", test_file="", cls=None, method="", steps=[Step("observe", "__import__('time').sleep(9)")])
    looped = run_programs(task, session.backend, task.answer.gold_patch, [loop], session.changed).results["loop"]
    assert looped[0]["raised"] == "timeout"
    session._gold = Observed({**gold.results, "loop": looped}, gold.alternatives)
    session.programs = [*session.programs, loop]
    sent: list[list[str]] = []
    monkeypatch.setattr(module, "run_programs", lambda t, b, patch, progs, *a, **k: sent.append([p.key for p in progs]) or run_programs(t, b, patch, progs, *a, **k))
    answer = session.replay_programs(task.answer.gold_patch)
    assert answer.found is None and answer.tried == len(session.programs)
    assert sent == [[p.key for p in session.programs[:-1]]]


def test_regression_a_container_literal_varies_in_size() -> None:
    """tinydb's write_back(documents, doc_ids) checks that the two lists match in length; its test
    passes one document and two ids, and every variant kept both lengths (only the elements varied),
    so no program reached the branch a wrong guard breaks. A list or tuple literal also varies one
    shorter, one longer and empty."""
    source = "def test_put_fails(box):\n    box.put([{'a': 1}], [1, 2])\n"
    (base,) = programs({"tests/test_b.py": source}, ["tests/test_b.py::test_put_fails"])
    tried = [p.steps[0].src for p in variants(base, [True], [], {}, 80)]
    assert {"box.put([{'a': 1}], [1])", "box.put([{'a': 1}], [2])", "box.put([{'a': 1}], [1, 2, 2])", "box.put([], [1, 2])",
            "box.put([{'a': 1}, {'a': 1}], [1, 2])"} <= set(tried)  # fmt: skip
