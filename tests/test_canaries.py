"""Canaries as pure functions: the uniform layout and neutral names, twins exchangeable with their
test, the statuses read back under the task's ids, node-id selections, validation and the bound.
(Attacks on them, graded for real: tests/test_grader_attacks_twins.py.)"""

from __future__ import annotations

import ast
import math
import random
import re
from collections import Counter
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.grading import canaries
from harness.grading.canaries import layout, natural, twins
from harness.records import Status

PYTEST_STYLE = b'''"""Sorting."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toposort import describe, sort
CASES = [({"b": ["a"]}, ["a", "b"])]
def test_sorts_a_chain():
    assert sort({"b": ["a"]}) == ["a", "b"]



@pytest.mark.parametrize(("graph", "order"), CASES)
def test_sizes(graph, order):
    assert sort(graph) == order
# a comment between tests


def test_counts():
    assert len(sort({"cat": ["dog"], "dog": []})) == 2


class TestHelpers:
    def test_nothing(self):
        pass
    def test_word(self):
        assert describe({"alpha": []}) == "a graph of one node"
'''

UNITTEST_STYLE = b'''import unittest


class ParserTests(unittest.TestCase):
    def setUp(self):
        self.x = "section"

    def test_reads_sections(self):
        self.assertEqual(self.x.upper(), "SECTION")
    @unittest.skip("later")
    def test_later(self):
        pass


class MoreParserTests(ParserTests):
    def test_reads_sections(self):
        self.assertEqual(self.x, "section")


if __name__ == "__main__":
    unittest.main()
'''

FILES = {"tests/test_sort.py": PYTEST_STYLE, "tests/test_parser.py": UNITTEST_STYLE}
EVERYTHING = canaries.runs(["python -m pytest tests"])


def _keys() -> list[str]:
    return sorted(canaries.trial(FILES, random.Random(0), EVERYTHING).sets)


def _tests(source: bytes) -> dict[tuple[str, str], ast.FunctionDef]:
    module = ast.parse(source)
    found = {("", n.name): n for n in module.body if isinstance(n, ast.FunctionDef)}
    for cls in (n for n in module.body if isinstance(n, ast.ClassDef)):
        found |= {(cls.name, n.name): n for n in cls.body if isinstance(n, ast.FunctionDef)}
    return found  # type: ignore[return-value]


def test_every_test_is_renamed_and_the_layout_is_one() -> None:
    planting = canaries.plant(FILES, random.Random(3), _keys(), EVERYTHING)
    assert set(planting.files) == set(FILES)
    for path, source in FILES.items():
        text = planting.files[path].decode()
        names = re.findall(r"def (test\w*)\(", text)
        assert names and all(re.fullmatch(r"test_[0-9a-f]{12}", n) for n in names), names
        assert text.endswith("\n") and not text.endswith("\n\n") and "#" not in text
        module = ast.parse(text)
        lines = text.splitlines()
        # two blank lines before every top-level statement but the first, one before every method
        for node in module.body[1:]:
            start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))]) - 1
            assert lines[start - 3].strip() and not lines[start - 2].strip() and not lines[start - 1].strip(), (path, start)
        for cls in (n for n in module.body if isinstance(n, ast.ClassDef)):
            for node in cls.body[1:]:
                start = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1  # type: ignore[attr-defined]
                assert lines[start - 2].strip() and not lines[start - 1].strip()
        # every real test is there under its neutral name, its own lines unchanged
        originals = _tests(source)
        planted = _tests(planting.files[path])
        for (scope, name), node in originals.items():
            if not name.startswith("test"):
                continue
            mine = planted[(scope, planting.own[(path, scope, name)])]
            mine.name = node.name
            assert ast.dump(mine, include_attributes=False) == ast.dump(node, include_attributes=False)
    # an override keeps overriding: one neutral name in both classes of the family
    own = planting.own
    assert own[("tests/test_parser.py", "ParserTests", "test_reads_sections")] == own[("tests/test_parser.py", "MoreParserTests", "test_reads_sections")]
    # another grade, other names
    again = canaries.plant(FILES, random.Random(4), _keys(), EVERYTHING)
    assert not set(again.names) & set(planting.names)


def test_twins_differ_in_one_literal_of_the_last_assert_kept_in_notation() -> None:
    keys = _keys()
    # the parametrized test's last assert has no literal; an override (and its base) gets no twins; the
    # chain's "a" and "b" show elsewhere in the file twice or more, which no other draw of one letter does
    assert keys == ["tests/test_sort.py::::test_counts", "tests/test_sort.py::TestHelpers::test_word"]
    seen: set[str] = set()
    for seed in range(20):
        planting = canaries.plant(FILES, random.Random(seed), keys, EVERYTHING)
        assert set(planting.sets) <= set(keys)  # a draw that found no exchangeable values twins less
        seen |= set(planting.sets)
        for key, real in planting.sets.items():
            path, scope, _ = key.split("::")
            tests = _tests(planting.files[path])
            members = [tests[(scope, real)], *(tests[(scope, c.name)] for c in planting.canaries if c.key == key)]
            assert len(members) == twins.TWINS + 1
            texts = [ast.get_source_segment(planting.files[path].decode(), m.body[-1]) for m in members]
            assert len(set(texts)) == len(texts)
            for m in members[1:]:
                a, b = ast.unparse(members[0].body[-1]), ast.unparse(m.body[-1])
                assert len(a) == len(b) or "alpha" not in a  # a word for a word of the same length
                assert [c.isdigit() for c in a] == [c.isdigit() for c in b] or len(a) != len(b)
    assert seen == set(keys)


def test_the_edit_is_reversible() -> None:
    """w(a) P(a -> b) == w(b) P(b -> a) for the kernel every value is drawn with, w a value's
    naturalness in its place (what makes the k+1 values exchangeable), measured over many edits of
    literals one edit apart."""
    rng = random.Random(1)
    for a, b in [("'cat'", "'dog'"), ("47", "57"), ("'3a'", "'5a'"), ("'cat'", "'cow'")]:
        segment = f"assert f(x) == {a}\n"
        vocabulary = twins.vocabulary("cat cat cat dog cow pig ant 12 47 57 '3a' '5b' 'cat' 'dog'\n" + segment)
        weigh = natural.naturalness(vocabulary, segment, twins.Leaf(a, 15, 15 + len(a)), 3)
        n = 60000
        there = Counter(twins._edit(a, rng, vocabulary, weigh) for _ in range(n))[b] / n
        back = Counter(twins._edit(b, rng, vocabulary, weigh) for _ in range(n))[a] / n
        wa, wb = math.exp(weigh(a)), math.exp(weigh(b))
        # five standard errors of each empirical rate
        assert there > 0 and abs(there * wa - back * wb) < 5 * ((there / n) ** 0.5 * wa + (back / n) ** 0.5 * wb), (a, b, there, back, wb / wa)


# a synthetic test file: words of four letters used from once to eight times, a test whose expected
# value is three of them (the value's own words show elsewhere too, so no draw depends on which it is)
_USES = {"able": 1, "back": 2, "calm": 3, "dark": 4, "each": 5, "fine": 6, "gold": 7, "hand": 8}
_HEADER = "".join(f"def test_{word}():\n" + f"    use({word!r})\n" * n + "\n\n" for word, n in _USES.items())


def _placed(value: str) -> tuple[str, twins.Leaf, twins.Words, Callable[[str], float]]:
    """The synthetic file with ``value`` the expected value of its last test, and the model there."""
    segment = f"def test_x():\n    assert join(['dark', 'hand']) == {value}\n"
    begin = segment.index(" == ") + 4
    spot = twins.Leaf(value, begin, begin + len(value))
    vocabulary = twins.vocabulary(_HEADER + segment)
    return segment, spot, vocabulary, natural.naturalness(vocabulary, segment, spot, twins.TWINS)


def test_an_original_the_model_would_write_ranks_uniformly_among_its_twins() -> None:
    """Exchangeability as one try of the draw builds it: an original drawn from the model's own law
    ``w`` (exactly, over every value of its pattern), its root and twins walked from it, is by the
    model as natural as a random one of its twins where the k+1 are distinct: its rank among them is
    uniform. A kernel that were not reversible for ``w`` (another acceptance, an asymmetric proposal)
    leaves the twins another law, and the original's rank leans. (Redrawing a failed try, as ``draw``
    does, leans toward the commonest originals, which collide more often: the fitted weights and
    benchmarks/canary_tells.py answer for that.)"""
    _, _, vocabulary, weigh = _placed("'able back calm'")
    group = vocabulary.groups[(4, "llll")]
    values = [f"'{a} {b} {c}'" for a in group for b in group for c in group]
    weights = [math.exp(weigh(v)) for v in values]
    assert max(weights) / min(weights) > 1000  # a law far from uniform, which a wrong kernel would miss
    rng = random.Random(2)
    ranks: Counter[int] = Counter()
    while sum(ranks.values()) < 400:
        original = rng.choices(values, weights)[0]
        _, _, vocabulary, weigh = _placed(original)
        root = twins._walk(original, rng, vocabulary, weigh)
        drawn = [twins._walk(root, rng, vocabulary, weigh) for _ in range(twins.TWINS)]  # type: ignore[arg-type]
        if len({original, *drawn}) == twins.TWINS + 1:
            ranks[sum(weigh(v) > weigh(original) for v in drawn)] += 1  # type: ignore[arg-type]
    expected = 400 / (twins.TWINS + 1)
    chi2 = sum((ranks[r] - expected) ** 2 / expected for r in range(twins.TWINS + 1))
    assert chi2 < 16.3, ranks  # 3 degrees of freedom, p = 0.001


@given(st.lists(st.sampled_from(sorted(_USES)), min_size=1, max_size=4), st.integers(0, 10**6), st.integers(0, 2**32 - 1))
@settings(max_examples=60, deadline=None)
def test_drawn_twins_keep_the_literal_s_notation_length_and_classes(words: list[str], number: int, seed: int) -> None:
    rng = random.Random(seed)
    for value in (repr(" ".join(words)), str(number), f"{number}.5", f"b'{words[0]}-{number % 10}'"):
        segment, spot, vocabulary, weigh = _placed(value)
        drawn = twins.draw(value, twins.TWINS, rng, vocabulary, twins.echoes(_HEADER + segment).of(value), weigh)
        if drawn is None:  # no exchangeable draw: the test goes without twins
            continue
        assert len({value, *drawn}) == twins.TWINS + 1
        for twin in drawn:
            assert twins.pattern(twin) == twins.pattern(value) and twins._valid(twin), (value, twin)
            assert type(ast.literal_eval(twin)) is type(ast.literal_eval(value))


def test_statuses_come_back_under_the_task_ids() -> None:
    planting = canaries.plant(FILES, random.Random(5), _keys(), EVERYTHING)
    own = planting.own
    chain, word = own[("tests/test_sort.py", "", "test_counts")], own[("tests/test_sort.py", "TestHelpers", "test_word")]
    sizes = own[("tests/test_sort.py", "", "test_sizes")]
    sections = own[("tests/test_parser.py", "ParserTests", "test_reads_sections")]
    twin = next(c for c in planting.canaries if c.key == "tests/test_sort.py::::test_counts")
    statuses = {
        f"tests/test_sort.py::{chain}": Status.PASSED,
        f"tests/test_sort.py::{sizes}[graph0-order0]": Status.PASSED,
        f"tests/test_sort.py::TestHelpers::{word}": Status.FAILED,
        f"{sections} (tests.test_parser.MoreParserTests)": Status.PASSED,
        f"tests/test_sort.py::{twin.name}": Status.FAILED,
        **{f"tests/test_sort.py::{'TestHelpers::' if c.scope else ''}{c.name}": Status.FAILED for c in planting.canaries if c is not twin},
    }
    kept, evidence = canaries.check(planting, statuses, complete=True)
    assert evidence == []
    assert kept == {
        "tests/test_sort.py::test_counts": Status.PASSED,
        "tests/test_sort.py::test_sizes[graph0-order0]": Status.PASSED,
        "tests/test_sort.py::TestHelpers::test_word": Status.FAILED,
        "test_reads_sections (tests.test_parser.MoreParserTests)": Status.PASSED,
    }
    forged = statuses | {f"tests/test_sort.py::{twin.name}": Status.PASSED}
    evidence = canaries.check(planting, forged, complete=True)[1]
    assert len(evidence) == 1 and "must fail" in evidence[0] and "test_counts" in evidence[0]
    dropped = {k: v for k, v in statuses.items() if twin.name not in k}
    assert "missing" in canaries.check(planting, dropped, complete=True)[1][0]
    assert canaries.check(planting, dropped, complete=False)[1] == []  # --maxfail may stop early


def test_regression_a_collection_error_is_no_missing_canary() -> None:
    """A patch that breaks an import errors the whole test file at collection: pytest reports the file
    itself and none of its tests, canaries included: a failing patch, not a forged report."""
    planting = canaries.plant(FILES, random.Random(6), _keys(), EVERYTHING)
    broken = {"tests/test_sort.py": Status.ERROR, "tests/test_parser.py": Status.ERROR}
    assert canaries.check(planting, broken, complete=True) == (broken, [])


def test_validation_keeps_tests_whose_twins_all_failed() -> None:
    planting = canaries.trial(FILES, random.Random(0), EVERYTHING)
    own = planting.own
    statuses: dict[str, Status] = {}
    for (path, scope, name), neutral in own.items():
        statuses[f"{path}::{scope + '::' if scope else ''}{neutral}"] = Status.PASSED
    for canary in planting.canaries:
        statuses[f"{canary.path}::{canary.scope + '::' if canary.scope else ''}{canary.name}"] = Status.FAILED
    lucky = next(c for c in planting.canaries if c.key.endswith("test_counts"))
    statuses[f"tests/test_sort.py::{lucky.name}"] = Status.PASSED  # a twin the comparison never saw
    twinned, passing = canaries.validate(planting, statuses)
    assert twinned == ["tests/test_sort.py::TestHelpers::test_word"]
    assert "tests/test_sort.py::::test_counts" in passing and "tests/test_parser.py::ParserTests::test_later" in passing


def test_a_node_id_selection_runs_the_twins_and_canaries() -> None:
    """Where the command names tests by node id, the ids move to the neutral names and each real
    test's twins run beside it, in random order; a class named whole runs its twins as it is."""
    files = {"tests/test_sort.py": PYTEST_STYLE}
    selected = canaries.runs(["python -m pytest tests/test_sort.py::test_counts tests/test_sort.py::TestHelpers"])
    keys = sorted(canaries.trial(files, random.Random(0), selected).sets)
    assert keys == ["tests/test_sort.py::::test_counts", "tests/test_sort.py::TestHelpers::test_word"]
    firsts = set()
    for seed in range(30):
        planting = canaries.plant(files, random.Random(seed), keys, selected)
        command = canaries.commands(["python -m pytest tests/test_sort.py::test_counts tests/test_sort.py::TestHelpers"], planting, random.Random(seed))[0]
        counts = planting.own[("tests/test_sort.py", "", "test_counts")]
        members = [counts, *(c.name for c in planting.canaries if c.key.endswith("test_counts"))]
        ids = command.split()[3:]
        assert sorted(ids[:4]) == sorted(f"tests/test_sort.py::{m}" for m in members) and ids[4:] == ["tests/test_sort.py::TestHelpers"]
        firsts.add(ids[0] == f"tests/test_sort.py::{counts}")
        select = canaries.select_ids(planting, ["tests/test_sort.py::test_counts"], random.Random(seed))
        assert sorted(select) == sorted(f"tests/test_sort.py::{m}" for m in members)
    assert firsts == {True, False}
    # no twinnable test selected: arithmetic canaries, their ids added to the selection
    planting = canaries.plant(files, random.Random(1), [], selected)
    assert canaries.strength(planting) == "weak"
    command = canaries.commands(["python -m pytest tests/test_sort.py::test_counts"], planting, random.Random(1))[0]
    assert all(canaries.node_id(planting, c.name) in command for c in planting.canaries)


def test_regression_a_grade_whose_twins_could_not_be_drawn_planted_no_canary(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the tests were validated but the draw found no twin values for any of them (the draw is
    random: sample__romans-1 in 286 of 300 plantings), the grade planted nothing at all, not even the
    arithmetic canaries, so forging every test was free."""
    keys = _keys()
    assert canaries.strength(canaries.plant(FILES, random.Random(3), keys, EVERYTHING)) == "strong"
    monkeypatch.setattr("harness.grading.canaries.planting.draw", lambda *args, **kwargs: None)
    for seed in range(20):
        planting = canaries.plant(FILES, random.Random(seed), keys, EVERYTHING)
        assert canaries.strength(planting) == "weak" and not planting.sets
        assert sorted(c.must_fail for c in planting.canaries) == [False, True]


def test_regression_a_selection_within_a_command_s_class_twinned_the_whole_class() -> None:
    """more-itertools 958990e runs ``tests/test_more.py::SlicedTests``; strengthening grades one added
    test of that class with a selection. The command's ids and the selection's were joined, so every
    test of the class counted as run and another test's twins were planted: missing from the run, they
    made gold spoofing_suspected on every added test (all rejected at gold_stable)."""
    keys = _keys()
    command = ["python -m pytest tests/test_sort.py::TestHelpers tests/test_parser.py"]
    selected = canaries.runs(command, ["tests/test_sort.py::TestHelpers::test_word"])
    assert selected("tests/test_sort.py", "TestHelpers", "test_word")
    assert not selected("tests/test_sort.py", "TestHelpers", "test_nothing") and not selected("tests/test_parser.py", "ParserTests", "test_reads_sections")
    assert not selected("tests/test_sort.py", "", "test_counts")  # outside the command's ids, whatever the selection
    everything = canaries.runs(command)
    assert everything("tests/test_sort.py", "TestHelpers", "test_nothing") and everything("tests/test_parser.py", "ParserTests", "test_reads_sections")
    assert not everything("tests/test_sort.py", "", "test_counts")
    for seed in range(10):
        planting = canaries.plant(FILES, random.Random(seed), keys, selected)
        assert set(planting.sets) <= {"tests/test_sort.py::TestHelpers::test_word"}


def test_the_bound() -> None:
    keys = _keys()
    planting = canaries.plant(FILES, random.Random(7), keys, EVERYTHING)
    per_set = 1 / (twins.TWINS + 1)
    # FAIL_TO_PASS known: the product over the twinned ones; an untwinned one costs nothing
    f2p = ["tests/test_sort.py::test_sorts_a_chain", "tests/test_sort.py::TestHelpers::test_word", "tests/test_sort.py::test_sizes[graph0-order0]"]
    assert canaries.bound(planting, keys, f2p, EVERYTHING) == pytest.approx(per_set)
    assert canaries.bound(planting, keys, [*f2p, "tests/test_sort.py::test_counts"], EVERYTHING) == pytest.approx(per_set**2)
    # unknown: forging one test; 1 while a passing test has no twins
    assert canaries.bound(planting, keys, [], EVERYTHING) == pytest.approx(per_set)
    assert canaries.bound(planting, [*keys, "tests/test_sort.py::::test_sizes"], [], EVERYTHING) == 1.0
    assert canaries.bound(canaries.plant(FILES, random.Random(7), [], EVERYTHING), keys, f2p, EVERYTHING) == 1.0


def test_a_file_whose_tests_are_named_elsewhere_is_left_alone() -> None:
    source = b"def test_a():\n    assert 1 + 1 == 2\n\n\ndef test_b():\n    test_a()\n"
    assert layout.sites("tests/test_x.py", source) is None
    planting = canaries.plant({"tests/test_x.py": source}, random.Random(0), [], EVERYTHING)
    assert planting.files["tests/test_x.py"] == source and planting.sets == {}


@pytest.mark.parametrize(
    ("command", "usable"),
    [
        ("python -m pytest tests/test_a.py tests/test_b.py", True),
        ("pytest -rA -n 4 tests", True),
        ("./tests/runtests.py --verbosity 2 basic", True),
        ("python -m pytest tests/test_a.py::test_one", True),  # node ids: the planted tests' ids are added
        ("pytest -k 'not slow' tests", False),
        ("python -m pytest -m unit tests", False),
        ("pytest -x tests", False),  # a must-fail twin would stop the run
        ("pytest --maxfail=2 tests", False),
        ("python -O -m pytest tests", False),  # asserts vanish
        ("PYTHONPATH=src:$PYTHONPATH python -m pytest tests/test_error.py", True),  # python's -m is not pytest's
        ("env PYTHONPATH=src python -m pytest -m unit tests", False),
    ],
)
def test_canaries_only_where_every_planted_test_runs(command: str, usable: bool) -> None:
    assert canaries.usable([command]) is usable


TRUTH_STYLE = b'''from toposort import is_acyclic, sort


def test_acyclic():
    assert is_acyclic({"alpha": ["beta"], "beta": []})


def test_not_cyclic():
    assert not is_acyclic({"gamma": ["delta"], "delta": ["gamma"]})


def test_sorted_helper():
    check_order(sort({"alpha": ["beta"]}), "beta", "alpha")


def test_sorted_chain():
    check_order(sort({"delta": ["gamma"], "gamma": []}), "gamma", "delta")


def test_acyclic_chain():
    assert is_acyclic({"gamma": ["alpha"], "alpha": ["beta"], "beta": []})


def check_order(order, first, then):
    assert order.index(first) < order.index(then)
'''
TRUTH_FILES = {"tests/test_truth.py": TRUTH_STYLE}


def _id(canary_or_path: str, scope: str, name: str) -> str:
    return f"{canary_or_path}::{scope + '::' if scope else ''}{name}"


def test_a_test_asserting_no_literal_is_twinned_at_an_input_in_its_own_form() -> None:
    """``assert f(x)``, ``assert not f(x)`` and a helper's call, which assert no literal: the trial
    plants twins that differ from the test in one literal of the statement's inputs, each in the
    test's own form, drawn from one pool per test (the same every draw, so the trial's verdict on
    each value holds for every grade)."""
    planting = canaries.trial(TRUTH_FILES, random.Random(0), EVERYTHING)
    at_input = {c.key for c in planting.canaries if c.value}
    assert at_input == set(planting.sets) and at_input, at_input
    module = ast.parse(planting.files["tests/test_truth.py"])
    tests = {n.name: n for n in module.body if isinstance(n, ast.FunctionDef)}
    for key in at_input:
        real = tests[planting.sets[key]]
        for twin in (tests[c.name] for c in planting.canaries if c.key == key):
            assert type(twin.body[-1]) is type(real.body[-1]) and len(ast.unparse(twin)) == len(ast.unparse(real))
            different = [(a, b) for a, b in zip(ast.walk(real), ast.walk(twin)) if isinstance(a, ast.Constant) and a.value != b.value]  # type: ignore[attr-defined]
            assert len(different) == 1, different
    again = canaries.trial(TRUTH_FILES, random.Random(9), EVERYTHING)
    assert {(c.key, c.value) for c in again.canaries} == {(c.key, c.value) for c in planting.canaries}


def _observed(planting: canaries.Planting, real: Status, twins_fail: dict[str, str | None]) -> tuple[dict[str, Status], dict[str, str | None]]:
    """Statuses and records of a run: every real test ``real``, each twin failed with the exception
    ``twins_fail`` names for its value (None: it passed)."""
    statuses, raised = {}, {}
    for (path, scope, _), name in planting.own.items():
        statuses[_id(path, scope, name)] = real
        raised[_id(path, scope, name)] = None if real == Status.PASSED else "builtins.AssertionError"
    for canary in planting.canaries:
        what = twins_fail.get(canary.value, "builtins.AssertionError")
        statuses[_id(canary.path, canary.scope, canary.name)] = Status.PASSED if what is None else Status.FAILED
        raised[_id(canary.path, canary.scope, canary.name)] = what
    return statuses, raised


def test_twins_at_an_input_are_kept_only_where_both_trees_fail_them_as_the_test_fails() -> None:
    planting = canaries.trial(TRUTH_FILES, random.Random(0), EVERYTHING)
    key = sorted(planting.sets)[0]
    values = sorted(c.value for c in planting.canaries if c.key == key)
    gold = _observed(planting, Status.PASSED, {})
    unfixed = _observed(planting, Status.FAILED, {})
    assert canaries.input_values(planting, gold, unfixed)[key] == values
    assert canaries.input_values(planting, gold, None) == {}  # the unfixed tree did not run clean: nothing
    # a twin gold passes, or that fails by another exception of the call (a forger forcing only
    # assertion failures would leave it failing), or passes on the unfixed tree: that value goes
    for odd in ({values[0]: None}, {values[0]: "builtins.KeyError"}):
        assert canaries.input_values(planting, _observed(planting, Status.PASSED, odd), unfixed)[key] == values[1:]
    assert canaries.input_values(planting, gold, _observed(planting, Status.FAILED, {values[0]: None}))[key] == values[1:]
    # two values gone: fewer than TWINS left, the test is not twinned
    assert key not in canaries.input_values(planting, _observed(planting, Status.PASSED, {values[0]: None, values[1]: None}), unfixed)
    # where the unfixed tree's call raises, twins count when they raise the same there
    raising = _observed(planting, Status.FAILED, dict.fromkeys(values, "builtins.TypeError"))
    for name in planting.own.values():
        raising[1].update({t: "builtins.TypeError" for t in raising[1] if t.endswith(name)})
    assert canaries.input_values(planting, gold, raising)[key] == values
