"""The fix's footprint: the strategies built from gold's diff (pure functions over diffs and sources), the
weakest separating property and the test written from a footprint input; then, in the real sandbox, a
footprint-derived test on a real fix commit and on a sample task that kills a hand-written shortcut
while gold and a correct alternative pass."""

from __future__ import annotations

import dataclasses
import json
import textwrap
from pathlib import Path

import pytest
from conftest import TEST_LIMITS

from harness.records import Behaviour
from judge.strengthen.footprint import candidate, name_for, value_type, weakest
from probes.footprint.search import Found, source_of
from probes.footprint.targets import facade_targets
from probes.footprint.vocabulary import (
    REQUIRED,
    boundaries,
    changed_lines,
    edit_strategy,
    fold,
    hunk_literals,
    hunk_numbers,
    keyword_defaults,
    positional_params,
    raised_types,
    regexes,
    shape,
    spelled,
    text_strategy,
    vocabulary,
)
from probes.observe.calls import Call, documented_calls
from probes.replay import draw

DIFF = textwrap.dedent('''\
    diff --git a/pkg/dates.py b/pkg/dates.py
    --- a/pkg/dates.py
    +++ b/pkg/dates.py
    @@ -1,6 +1,8 @@
     FORMATS = {
    -    "%f": "[0-9]{6}",
    +    "%f": "[0-9]{1,6}",
     }
    -LIMIT = 10
    +LIMIT = 12
    +    if n < 0:
    +        raise ValueError("n must be at least 0")
    diff --git a/tests/test_dates.py b/tests/test_dates.py
    --- a/tests/test_dates.py
    +++ b/tests/test_dates.py
    @@ -1 +1,2 @@
    +    assert parse("only in a test") == 1
    ''')


def test_the_vocabulary_is_read_from_the_changed_lines_of_non_test_files_only() -> None:
    assert {path for path, _, _ in changed_lines(DIFF)} == {"pkg/dates.py"}
    assert hunk_literals(DIFF) == ["%f", "[0-9]{6}", "[0-9]{1,6}", "n must be at least 0"]
    assert hunk_numbers(DIFF) == [10, 12, 0]
    assert raised_types(DIFF) == ["ValueError"]
    assert regexes(hunk_literals(DIFF)) == ["[0-9]{6}", "[0-9]{1,6}"]


def test_boundaries_lie_on_both_sides_of_each_changed_constant() -> None:
    assert {11, 12, 13, -12, 0, 1, -1} <= set(boundaries([12]))
    near = boundaries([0.5])
    assert any(0.49 < x < 0.5 for x in near) and any(0.5 < x < 0.51 for x in near)


def test_a_long_literal_gives_its_words_not_itself() -> None:
    table = "x" * 10 + " " + " ".join(f"word{i}" for i in range(100))
    diff = f'--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n+T = "{table}"\n'
    literals = hunk_literals(diff)
    assert table not in literals and "word1" in literals


def test_strings_are_drawn_from_gold_s_regexes_and_from_edits_of_the_tests_own_input() -> None:
    vocab = vocabulary(DIFF)
    drawn = draw(text_strategy(vocab, ["27.123"]), 60)
    assert all(isinstance(s, str) for s in drawn)
    assert any(s != "27.123" and s.startswith("27.") for s in drawn)  # the tests' input, one token edited
    # an edit keeps the rest of the input as it is
    edited = draw(edit_strategy("a-b", __import__("hypothesis").strategies.just("Z")), 40)
    tokens = {"Z-b", "Za-b", "-b", "aZb", "aZ-b", "ab", "a-Z", "a-Zb", "a-"}
    chars = {f"{c}-b" for c in "eiouxyzb"} | {f"a-{c}" for c in "aeiouxyz"}
    assert set(edited) <= tokens | chars and set(edited) & tokens and set(edited) & chars


def test_regression_a_character_is_swapped_only_for_one_of_its_class() -> None:
    # boltons 1e61524: 'BOSS' edited to 'iOSS' and 'Glass' to 'G9ass' made footprint tests pin gold's
    # answer on mixed-case words, which a correct fix keeping the case rule differently answers otherwise
    from hypothesis import strategies as st

    for value in ("BOSS", "Glass", "v12"):
        edited = draw(edit_strategy(value, st.just(value)), 80)
        swapped = [e for e in edited if len(e) == len(value) and sum(a != b for a, b in zip(e, value)) == 1]
        assert swapped and all(shape(e) == shape(value) for e in swapped)


def test_an_input_s_ends_are_swept_through_their_whole_class() -> None:
    from probes.footprint.vocabulary import end_swaps

    swept = dict(end_swaps("box"))
    assert len(swept) == 50 and (swept["boz"], swept["boy"], swept["cox"], swept["zox"]) == ("last", "last", "first", "first")
    assert "box" not in swept
    assert {t for t, _ in end_swaps("V12")} >= {"V10", "V19", "A12", "Z12"} and "v12" not in dict(end_swaps("V12"))
    assert end_swaps("x") == [(c, "last") for c in "abcdefghijklmnopqrstuvwxyz" if c != "x"] and end_swaps("") == []
    assert end_swaps("a-") == [(c + "-", "first") for c in "bcdefghijklmnopqrstuvwxyz"]  # an end of no class stays


def test_an_integer_is_swept_through_the_boundaries_of_the_diff_s_constants() -> None:
    from probes.footprint.vocabulary import Vocabulary, number_sweep

    swept = number_sweep(-3, Vocabulary(numbers=(0, 10)))
    assert {-1, 0, 1, 9, 10, 11, -10, -4, -2} <= set(swept) and -3 not in swept and swept == sorted(swept)


def test_a_value_of_the_inputs_own_shape_is_drawn_in_its_place() -> None:
    from probes.footprint.vocabulary import Vocabulary

    assert shape("JPY") == shape("KWD") == "AAA" != shape("Jpy")
    drawn = draw(text_strategy(Vocabulary(strings=("KWD", "BHD", "note")), ["JPY"]), 60)
    assert {"KWD", "BHD"} & set(drawn)


def test_keyword_parameters_and_their_defaults_are_read_from_the_signature() -> None:
    source = "def split(src, sep=None, maxsplit=None, *, strict=False):\n    pass\n\nclass C:\n    def m(self, x, y=2):\n        pass\n"
    assert keyword_defaults(source, ["split", "C.m"]) == {"split": (("sep", None), ("maxsplit", None), ("strict", False)), "C.m": (("y", 2),)}
    params = positional_params(source, ["split"])
    assert params == {"split": (("src", REQUIRED), ("sep", None), ("maxsplit", None))}


def test_a_call_recorded_with_every_parameter_is_spelled_as_a_test_writes_it() -> None:
    params = positional_params("def parse(fmt, text, extra=None, evaluate=True, case=False):\n    pass\n", ["parse"])
    assert spelled("parse", ("'{}'", "'x'", "None", "True", "False"), (), params) == (("'{}'", "'x'"), ())
    assert spelled("parse", ("'{}'", "'x'", "None", "True", "True"), (), params) == (("'{}'", "'x'"), (("case", "True"),))
    assert spelled("other", ("1",), (), params) is None  # an unknown signature: the call stays as recorded


def test_constant_arithmetic_of_a_docs_example_is_folded_and_nothing_else() -> None:
    assert fold("10**34 * 3") == str(3 * 10**34)
    assert fold("(1, -2**3)") == "(1, -8)"
    assert fold("f(1)") is None and fold("x + 1") is None and fold("10**10**10") is None and fold("1/0") is None
    docs = {"pkg/m.py (docstrings)": ">>> quantize(10**34 * 3)\n"}
    row = {"target": "pkg.m:quantize", "call": "quantize(1)", "imports": ["from pkg.m import quantize"]}
    (call,) = documented_calls(docs, [row])
    assert call.src == f"quantize({3 * 10**34})"


def test_only_a_value_that_reads_back_is_an_input() -> None:
    assert source_of("a'b") == repr("a'b") and source_of(float("nan")) is None and source_of(object()) is None


def _found(gold: Behaviour, buggy: Behaviour, src: str = "tail(2, 'ab')", how: str = "tail(3, 'ab') with argument 1 -> 2 (Hypothesis)") -> Found:
    call = Call("pkg.m:tail", "tail", (src[5:6], "'ab'"), (), ("from pkg.m import tail",), "tests/test_m.py::test_tail", "variant", how)
    return Found(call, gold, buggy, "", tested=False)


def test_the_weakest_property_that_separates_gold_from_buggy_is_asserted() -> None:
    assert weakest(_found(Behaviour(raised="ValueError"), Behaviour(value='"1"'))) == "raises"
    assert weakest(_found(Behaviour(value='"1"'), Behaviour(raised="TypeError"))) == "returns"
    assert weakest(_found(Behaviour(value='["Result", "<Result>"]'), Behaviour(value='"None"'))) == "not_none"
    assert weakest(_found(Behaviour(value='["list", ["1"]]'), Behaviour(value='["tuple", ["1"]]'))) == "type"
    assert weakest(_found(Behaviour(value='"2"'), Behaviour(value='"3"'))) == "value"
    assert weakest(_found(Behaviour(value='"1"'), Behaviour(value='"True"'))) == "value"  # a bool is an int
    assert value_type('["list", []]') == "list" and value_type('"None"') == "NoneType"


def test_where_an_object_s_repr_hides_what_differs_the_test_asserts_the_part_that_does() -> None:
    """Gold's and the buggy tree's parse trees print alike (``<Statement 'select'>``): the value is no
    literal, so no test stated it. The test asserts the part that differs, as a maintainer writes it:
    the items where each reads back, else their number, else the items' differing attribute; a
    public attribute by name."""
    def tree(items: list, kind: str = "'select'") -> Behaviour:
        return Behaviour(value=json.dumps(["Statement", "<Statement 'select'>", {"items": items, "attrs": [["kind", kind]]}]))

    def token(text: str, ttype: str) -> list:
        return ["Token", f"<Token {text}>", {"attrs": [["ttype", ttype], ["value", text]]}]

    sources = {"tests/test_m.py": "from pkg.m import tail\n\ndef test_tail():\n    assert tail(3, 'ab') == ['a', 'b']\n"}
    cases = [
        (tree(["'select'", "'a'"]), tree(["'select'", "'b'"]), "assert list(result) == ['select', 'a']", "items"),
        (tree(["'select'"], "'update'"), tree(["'select'"]), "assert result.kind == 'update'", "kind"),
        (tree([token("'a'", "'Name'")] * 2), tree([token("'a'", "'Name'")]), "assert len(list(result)) == 2", "length"),
        (tree([token("'a'", "'Name'"), token("'1'", "'Number'")]), tree([token("'a'", "'Name'"), token("'1'", "'Name'")]),
         "assert [x.ttype for x in result] == ['Name', 'Number']", "ttype"),
        # occurrences of a rule without a repr of its own: its items, a standard library value each
        (Behaviour(value=json.dumps(["rule", ["dict", []], {"items": [["datetime", "datetime.datetime(2020, 1, 2, 0, 0)"]]}])),
         Behaviour(value=json.dumps(["rule", ["dict", []], {"items": [["datetime", "datetime.datetime(2020, 1, 3, 0, 0)"]]}])),
         "import datetime as _datetime\n    result = tail(2, 'ab')\n    assert list(result) == [_datetime.datetime(2020, 1, 2, 0, 0)]", "items"),
    ]  # fmt: skip
    for gold, buggy, check, what in cases:
        found = _found(gold, buggy)
        assert weakest(found) == "attributes"
        cand = candidate([(found, "attributes")], sources, ["tests/test_m.py::test_tail"])
        assert cand is not None and "    result = tail(2, 'ab')\n" in cand.code and f"    {check}\n" in cand.code, cand.code
        assert cand.name == f"test_tail_{what}_for_2"
    # the same items and data, only the repr differs: the value, as before
    assert weakest(_found(Behaviour(value='["Statement", "<Statement \'a\'>"]'), Behaviour(value='["Statement", "<Statement \'b\'>"]'))) == "value"


def test_a_footprint_test_is_placed_in_the_file_s_style_named_for_what_it_checks() -> None:
    sources = {"tests/test_m.py": "import pytest\nfrom pkg.m import tail\n\ndef test_tail():\n    assert tail(3, 'ab') == ['a', 'b']\n"}
    found = _found(Behaviour(value='["list", ["\'a\'", "\'b\'"]]'), Behaviour(value='["tuple", []]'))
    cand = candidate([(found, "type")], sources, ["tests/test_m.py::test_tail"])
    assert cand is not None and cand.footprint and cand.file == "tests/test_m.py" and cand.cls is None
    assert cand.name == "test_tail_returns_list_for_2"
    assert "assert isinstance(tail(2, 'ab'), list)" in cand.code and "from pkg.m import tail" in cand.code
    unittest = {"tests/test_m.py": "import unittest\nfrom pkg.m import tail\n\nclass T(unittest.TestCase):\n    def test_tail(self):\n        self.assertEqual(tail(3, 'ab'), ['a', 'b'])\n"}
    raising = _found(Behaviour(raised="ValueError"), Behaviour(value='"1"'))
    raising = dataclasses.replace(raising, call=dataclasses.replace(raising.call, test_id="the issue"))  # a document's input
    cand = candidate([(raising, "raises")], unittest, ["tests/test_m.py::T::test_tail"])
    assert cand is not None and cand.cls == "T" and "with self.assertRaises(ValueError):" in cand.code and "def test_tail_raises_valueerror_for_2(self):" in cand.code
    assert name_for(raising, "raises", cand.code) == "test_tail_raises_valueerror_for_2_2"  # unique in its file


def test_a_facade_s_target_is_where_the_function_is_defined(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("from .strutils import split\n")
    (tmp_path / "pkg" / "strutils.py").write_text("def split(src):\n    return _Splitter(src).run()\n")
    sources = {"tests/test_s.py": "from pkg import split\n\ndef test_split():\n    assert split('a b') == ['a', 'b']\n"}
    assert facade_targets(tmp_path, sources, ["tests/test_s.py"]) == ["pkg/strutils.py::split"]


# ============================================================================================ end to end


@pytest.fixture(scope="module")
def footprint_backend(backend_factory):  # noqa: ANN001, ANN201
    return backend_factory("bwrap", TEST_LIMITS)


ALTERNATIVE = """\
diff --git a/moneyfmt/formatting.py b/moneyfmt/formatting.py
--- a/moneyfmt/formatting.py
+++ b/moneyfmt/formatting.py
@@ -45,7 +45,7 @@ def format_money(money: Money, style: str = "en", symbol: bool = True) -> str:
     except KeyError:
         raise ValueError(f"unknown style {style!r}") from None
     cur = money.currency
-    text = f"{abs(money.amount):.2f}"
+    text = format(abs(money.amount), "." + str(cur.minor_units) + "f")
     int_part, _, frac_part = text.partition(".")
     number = _group(int_part, thousands)
     if frac_part:
"""


def _strengthened_by_footprint(task, backend, env, tmp_path: Path):  # noqa: ANN001, ANN202
    """Pipeline 1, then strengthening with no probe at all: whatever it adds comes from the footprint."""
    from curation.decks import strengthened_task
    from curation.pipeline1 import Pipeline1Config, process_task
    from harness.sandboxes.envs import prepare_tree
    from judge.strengthen import strengthen

    p1 = process_task(task, backend, Pipeline1Config(runs=1), "test", tmp_path)
    stamp = {"config_hash": "test", "task_hash": task.task_hash(), "instance_id": task.instance_id}
    record = strengthen(task, p1, [], backend, stamp, prepare_tree(task, env), log_dir=tmp_path / "logs")
    return record, strengthened_task(task, record)


def _assert_shortcut_killed(record, strong, task, backend, shortcut: str, alternative: str) -> None:  # noqa: ANN001
    from harness.grading.grader import grade
    from harness.records import Status

    assert record.status == "strengthened" and not record.survivors, record.reason
    kept = [t for t in record.tests if not t.rejected_at]
    assert kept and all(t.found_by.startswith("the fix's footprint") for t in kept)
    # a test of what the fix keeps passes on the buggy tree where a test of what it changes fails there
    steps = [[c.step for c in t.checks][:7] for t in kept]
    assert all(s[:3] + s[4:] == ["leak", "contract", "gold_stable", "kills_survivor", "invariant", "pass_to_pass"] for s in steps), steps
    assert {s[3] for s in steps} <= {"fails_on_buggy", "passes_on_buggy"} and any(s[3] == "fails_on_buggy" for s in steps), steps
    # every footprint input is accounted for: pinned by the tests already, kept, or why not
    assert record.footprint and all(f.outcome for f in record.footprint)
    assert {f.outcome.partition(" ")[0] for f in record.footprint} <= {"tested:", "kept", "left"}
    assert any(f.outcome.startswith("kept as") for f in record.footprint)
    expected = {k: Status(v) for k, v in record.expected_status.items()}
    assert grade(strong, task.answer.gold_patch, backend, expected=expected).reward == 1.0
    assert grade(strong, alternative, backend, expected=expected).reward == 1.0
    assert grade(task, shortcut, backend).reward == 1.0  # the upstream tests let the shortcut through
    assert grade(strong, shortcut, backend, expected=expected).reward == 0.0


@pytest.mark.slow
@pytest.mark.bwrap
def test_a_footprint_test_kills_a_real_fix_commits_shortcut_with_no_surviving_probe(footprint_backend, swedeck_env, tmp_path: Path) -> None:  # noqa: ANN001
    """boltons 8c3fc28 (pluralize of words ending in x): the test pluralizes box, fox, tax, prefix and
    ox; the shortcut adds only those endings. The footprint's untested part holds words whose ending
    the tests never name, so a wrong fix keyed to the tested endings fails."""
    from curation.sources.local import load_task_folder

    folder = Path(__file__).resolve().parent.parent / "data" / "real" / "mahmoud__boltons-8c3fc28"
    task = load_task_folder(folder)
    record, strong = _strengthened_by_footprint(task, footprint_backend, swedeck_env, tmp_path)
    _assert_shortcut_killed(record, strong, task, footprint_backend, (folder / "shortcut.patch").read_text(), (folder / "alternative.patch").read_text())


@pytest.mark.slow
@pytest.mark.bwrap
def test_a_footprint_test_kills_a_sample_tasks_wrong_patch_through_a_constructor_argument(sample_tasks, footprint_backend, swedeck_env, tmp_path: Path) -> None:  # noqa: ANN001
    """moneyfmt: the hidden test formats JPY only; Hypothesis varies the currency inside the tests'
    own ``Money(...)`` argument with the issue's currency codes, and a three-decimal one (BHD, KWD)
    pins the minor units the wrong patch leaves at two."""
    from data import SAMPLE

    task = sample_tasks["sample__moneyfmt-1"]
    record, strong = _strengthened_by_footprint(task, footprint_backend, swedeck_env, tmp_path)
    _assert_shortcut_killed(record, strong, task, footprint_backend, (SAMPLE / "sample__moneyfmt-1" / "probes" / "wrong.patch").read_text(), ALTERNATIVE)


def test_inputs_asserted_together_each_bring_something_the_tests_never_pass() -> None:
    from judge.strengthen.footprint import diverse

    def found(word: str) -> Found:
        call = Call("m:pluralize", "pluralize", (repr(word),), (), (), "tests/t.py::test_p", "variant", f"pluralize('box') with argument 1 -> {word!r} (Hypothesis)")
        return Found(call, Behaviour(value=repr(word + "es")), Behaviour(value=repr(word + "s")), "", tested=False)

    own = ["pluralize('box')", "pluralize('fox')", "pluralize('prefix')"]
    picked = diverse([found("box"), found("shox"), found("sx"), found("fox")], own)
    assert [f.call.args[0] for f in picked] == ["'sx'", "'shox'"]  # the tests' own words add nothing
    # an empty argument is new though it has no character pair
    assert [f.call.args[0] for f in diverse([found("boxbox"), found("")], own)] == ["''", "'boxbox'"]


def test_a_recorded_dunder_call_is_written_as_the_operator_a_test_uses() -> None:
    from judge.strengthen.footprint import as_written

    assert as_written("Markup.__mod__(Markup('<em>%s</em>'), 42)") == "Markup('<em>%s</em>') % 42"
    assert as_written("Box.__getitem__(Box([1]), 0)") == "Box([1])[0]"
    assert as_written("S.__contains__(S('ab'), 'a')") == "'a' in S('ab')"
    assert as_written("V.__ge__(V(1), V(2))") == "V(1) >= V(2)"
    assert as_written("tail(2, 'ab')") == "tail(2, 'ab')"


WIDE = """\
diff --git a/boltons/strutils.py b/boltons/strutils.py
--- a/boltons/strutils.py
+++ b/boltons/strutils.py
@@ -258,7 +258,7 @@ def pluralize(word):
         plural = irr_plural
     elif word.endswith('y') and word[-2:-1] not in 'aeiou':
         plural = word[:-1] + 'ies'
-    elif word[-1] == 's' or word.endswith('ch') or word.endswith('sh'):
+    elif word[-1] in 'sxz' or word.endswith('ch') or word.endswith('sh'):
         plural = word if word.endswith('es') else word + 'es'
     else:
         plural = word + 's'
"""


@pytest.mark.slow
@pytest.mark.bwrap
def test_the_footprint_tells_gold_from_a_fix_too_narrow_and_from_one_too_wide(footprint_backend, swedeck_env, tmp_path: Path) -> None:  # noqa: ANN001
    """boltons 8c3fc28 (pluralize of words ending in x), as Pipeline 2 asks it of a surviving probe: the
    shortcut (only the tested endings) answers like the buggy tree where gold changed it; a fix wider
    than gold's ('z' too) answers unlike both where the bug left the answer alone. Gold itself is told
    apart from nothing."""
    from curation.pipeline1 import Pipeline1Config, process_task
    from curation.sources.local import load_task_folder
    from harness.sandboxes.envs import prepare_tree
    from probes.differential import session_for

    folder = Path(__file__).resolve().parent.parent / "data" / "real" / "mahmoud__boltons-8c3fc28"
    task = load_task_folder(folder)
    p1 = process_task(task, footprint_backend, Pipeline1Config(runs=1), "test", tmp_path)
    engine = session_for(task, footprint_backend, p1.fail_to_pass, prepare_tree(task, swedeck_env)).footprint
    assert engine is not None
    narrow, wide = engine.distinguish((folder / "shortcut.patch").read_text()), engine.distinguish(WIDE)
    assert narrow.found is not None and narrow.found.target.endswith("pluralize"), narrow.detail
    assert wide.found is not None and wide.found.call.rstrip(")").endswith("z'"), wide.detail
    assert engine.known[wide.found.call][0] == engine.known[wide.found.call][1]  # buggy and gold agree there
    assert engine.distinguish(task.answer.gold_patch).found is None


@pytest.mark.slow
@pytest.mark.bwrap
def test_a_test_of_what_the_fix_keeps_rejects_a_fix_too_wide(footprint_backend, swedeck_env, tmp_path: Path) -> None:  # noqa: ANN001
    """boltons 8c3fc28 with no probe at all: beside the footprint's tests of what gold changes, one test
    pins what it keeps nearest to that change (words the buggy tree and gold pluralize alike), so a fix
    that takes 'z' endings too, which the upstream tests and the footprint's own tests let through,
    fails; gold and the correct alternative pass."""
    from harness.grading.grader import grade
    from harness.records import Status

    folder = Path(__file__).resolve().parent.parent / "data" / "real" / "mahmoud__boltons-8c3fc28"
    from curation.sources.local import load_task_folder

    task = load_task_folder(folder)
    record, strong = _strengthened_by_footprint(task, footprint_backend, swedeck_env, tmp_path)
    (keeps,) = [t for t in record.tests if "keeps" in t.test_id]
    assert not keeps.rejected_at, keeps.checks
    assert [c.step for c in keeps.checks][:4] == ["leak", "contract", "gold_stable", "passes_on_buggy"]
    assert any(f.outcome == f"kept as {keeps.test_id} (keeps)" and f.gold == f.buggy for f in record.footprint)
    expected = {k: Status(v) for k, v in record.expected_status.items()}
    assert grade(task, WIDE, footprint_backend).reward == 1.0  # the upstream tests let it through
    assert grade(strong, WIDE, footprint_backend, expected=expected).reward == 0.0
    assert grade(strong, task.answer.gold_patch, footprint_backend, expected=expected).reward == 1.0
    assert grade(strong, (folder / "alternative.patch").read_text(), footprint_backend, expected=expected).reward == 1.0


@pytest.mark.slow
@pytest.mark.bwrap
def test_a_test_of_what_the_fix_keeps_rejects_a_guard_one_value_too_wide(footprint_backend, swedeck_env, tmp_path: Path) -> None:  # noqa: ANN001
    """more-itertools 958990e (sliced with a negative n): the shortcut raises for ``n <= 0`` where gold
    raises for ``n < 0``; at 0 the buggy tree and gold agree, so no footprint test of what gold changes
    can tell it, and the swept boundaries of n pin what gold keeps there."""
    from curation.sources.local import load_task_folder
    from harness.grading.grader import grade
    from harness.records import Status

    folder = Path(__file__).resolve().parent.parent / "data" / "real" / "more-itertools__more-itertools-958990e"
    task = load_task_folder(folder)
    record, strong = _strengthened_by_footprint(task, footprint_backend, swedeck_env, tmp_path)
    kept = [t for t in record.tests if "keeps" in t.test_id and not t.rejected_at]
    assert kept, [(t.test_id, t.rejected_at) for t in record.tests]
    expected = {k: Status(v) for k, v in record.expected_status.items()}
    shortcut = (folder / "shortcut.patch").read_text()
    assert grade(task, shortcut, footprint_backend).reward == 1.0
    assert grade(strong, shortcut, footprint_backend, expected=expected).reward == 0.0
    assert grade(strong, (folder / "alternative.patch").read_text(), footprint_backend, expected=expected).reward == 1.0


@pytest.mark.bwrap
def test_regression_a_call_gold_times_out_on_is_not_run_again(sample_tasks, footprint_backend, swedeck_env) -> None:  # noqa: ANN001
    """more-itertools edb3346: 46 of 314 drawn calls took the 1 s limit on each of the three runs
    (twice on gold, once on the buggy tree), two thirds of its footprint's time. Gold out of contract
    on a call tells nothing, so after gold's first run times out it is not run again, and it does not differ."""
    from harness.sandboxes.envs import prepare_tree
    from probes.footprint.search import FootprintSearch

    task = sample_tasks["sample__moneyfmt-1"]
    search = FootprintSearch(task, footprint_backend, prepare_tree(task, swedeck_env), [], {})
    sent: list[list[str]] = []
    real = search.session.outcomes
    search.session.outcomes = lambda patch, calls: sent.append([c.src for c in calls]) or real(patch, calls)  # type: ignore[method-assign]
    slow = Call("time:sleep", "sleep", ("5",), (), ("from time import sleep",), "", "variant", "")
    quick = Call("builtins:len", "len", ("'ab'",), (), (), "", "variant", "")
    search.run_batch([slow, quick])
    assert sent == [[slow.src, quick.src], [quick.src], [quick.src]]
    assert search.known[slow.src][0].raised == "timeout" and search.known[quick.src][0].value == '"2"'
    assert search.differs(slow) is False and search.differs(quick) is False


# dateutil 6192bca in small: ``rrule(YEARLY, count=0, ...)`` took ``if count:`` for "no count" and yielded
# every occurrence. An rrule has no repr of its own and keeps its state private, so any two compared equal
RRULE = '''"""Recurrence rules, after dateutil.rrule (no repr: its occurrences are its value)."""
import datetime

YEARLY, MONTHLY, WEEKLY, DAILY = 0, 1, 2, 3
_DAYS = {YEARLY: 365, MONTHLY: 30, WEEKLY: 7, DAILY: 1}
_LAST = datetime.date(2100, 1, 1)


class rrulebase:
    def __iter__(self):
        return self._iter()

    def __contains__(self, item):
        return any(day == item for day in self)

    def count(self):
        n = 0
        for _ in self:
            n += 1
        return n


class rrule(rrulebase):
    def __init__(self, freq, dtstart, interval=1, count=None):
        self._freq, self._dtstart, self._interval, self._count = freq, dtstart, interval, count

    def _iter(self):
        day, count = self._dtstart, self._count
        step = datetime.timedelta(days=_DAYS[self._freq] * self._interval)
        while day < _LAST:
            yield day
            if count:
                count -= 1
                if not count:
                    return
            day += step
'''
RRULE_GOLD = RRULE.replace('''        while day < _LAST:
            yield day
            if count:
                count -= 1
                if not count:
                    return
            day += step''', '''        while day < _LAST:
            if count is not None:
                count -= 1
                if count < 0:
                    return
            yield day
            day += step''')
# a wrong fix at one of several call sites: counting, not iterating
RRULE_SHORTCUT = RRULE.replace('''    def count(self):
        n = 0''', '''    def count(self):
        if getattr(self, "_count", None) == 0:
            return 0
        n = 0''')
# a correct fix written otherwise: the rule's iteration stops at its count, its generator is left as it was
RRULE_ALTERNATIVE = RRULE.replace("import datetime\n", "import datetime\nimport itertools\n").replace('''    def __iter__(self):
        return self._iter()''', '''    def __iter__(self):
        count = getattr(self, "_count", None)
        return self._iter() if count is None else itertools.islice(self._iter(), max(count, 0))''')
RRULE_TESTS = '''import datetime
import unittest

from rules.rrule import DAILY, YEARLY, rrule


class RRuleTest(unittest.TestCase):
    def testDaily(self):
        self.assertEqual(list(rrule(DAILY, count=3, dtstart=datetime.date(1997, 9, 2))),
                         [datetime.date(1997, 9, 2), datetime.date(1997, 9, 3), datetime.date(1997, 9, 4)])

    def testCount(self):
        self.assertEqual(rrule(YEARLY, count=3, dtstart=datetime.date(1997, 9, 2)).count(), 3)

    def testContains(self):
        rr = rrule(DAILY, count=3, dtstart=datetime.date(1997, 9, 2))
        self.assertEqual(datetime.date(1997, 9, 3) in rr, True)
        self.assertEqual(datetime.date(1997, 9, 5) in rr, False)
'''
RRULE_HIDDEN = "tests/test_rrule.py\n" + RRULE_TESTS + '''
    def testCountZero(self):
        self.assertEqual(rrule(YEARLY, count=0, dtstart=datetime.date(1997, 9, 2)).count(), 0)
'''


@pytest.mark.slow
@pytest.mark.bwrap
def test_dateutil_6192bca_an_object_without_a_repr_is_compared_by_its_items_and_the_test_asserts_them(footprint_backend, swedeck_env, tmp_path: Path) -> None:  # noqa: ANN001
    """dateutil 6192bca in small: the new test counts a yearly rule's occurrences with count=0; the
    shortcut fixes counting only, so the rule still yields every occurrence. An rrule has no repr and
    only private state: every rrule compared equal, and the footprint reached the change only through
    the private generator (``rrule._iter(rrule(...))``), a test a correct fix that stops the iteration
    elsewhere fails. Its items are its value now: the kept test asserts ``list(result) == []`` of other
    rules with count=0, which the shortcut fails while gold and that correct fix pass."""
    from test_observe import diff, make_task

    task = make_task(tmp_path, "rrule-6192bca", "rules/rrule.py", RRULE, RRULE_GOLD, {"rules/__init__.py": "", "tests/test_rrule.py": RRULE_TESTS},
                     RRULE_HIDDEN, "rrule(YEARLY, count=0, dtstart=...) yields every occurrence; count=0 must give none.")  # fmt: skip
    record, strong = _strengthened_by_footprint(task, footprint_backend, swedeck_env, tmp_path)
    kept = [t for t in record.tests if not t.rejected_at]
    assert any("assert list(result) == []" in t.code or "self.assertEqual(list(result), [])" in t.code for t in kept), [t.code for t in record.tests]
    _assert_shortcut_killed(record, strong, task, footprint_backend, diff("rules/rrule.py", RRULE, RRULE_SHORTCUT), diff("rules/rrule.py", RRULE, RRULE_ALTERNATIVE))


@pytest.mark.slow
@pytest.mark.bwrap
def test_the_footprint_reaches_gold_s_change_through_the_calls_the_tests_make_into_the_project(sample_tasks, footprint_backend, swedeck_env) -> None:  # noqa: ANN001
    """iniparse: gold expands nested references in ``expand(value, section, option, lookup)``, which
    only the library calls, with a bound method as ``lookup``; the tests call ``Config.get`` of a
    config ``iniparse.loads`` built. No call of a watched function had evaluable arguments, so the
    footprint had no seed where gold changed anything. The tests' calls that reach ``expand`` are seeds
    now (``Config.get(loads(...), 'paths', 'cache')``), and the footprint holds untested inputs where the
    buggy and gold trees differ."""
    from harness.sandboxes.envs import prepare_tree
    from probes.differential import session_for

    task = sample_tasks["sample__iniparse-1"]
    f2p = [f"tests/test_interpolation.py::NestedInterpolationTests::{name}" for name in
           ("test_missing_nested_reference_raises", "test_nested_reference_in_other_section", "test_three_levels", "test_two_levels")]  # fmt: skip
    engine = session_for(task, footprint_backend, f2p, prepare_tree(task, swedeck_env)).footprint
    assert engine is not None
    found = engine.footprint()
    through = [f for f in found.found if f.call.target in ("iniparse.config:Config.get", "iniparse.config:Config.getint")]
    assert any(f.tested for f in through) and any(not f.tested for f in through), (found.detail, [f.call.src for f in found.found])
    assert all(f.call.imports[0].startswith("from iniparse") and "loads(" in f.call.src for f in through)
