"""Strengthening beyond the one distinguishing input (pure parts; the sandboxed runs are in
tests/test_strengthen_suites.py): the input's neighbours (one literal argument moved to a close value),
which of them gold answers stably, in contract and unlike the buggy tree or a survivor, a function
asserting gold on the input and its neighbours, and the contract check that keeps an added test from
pinning what a correct fix unlike gold may do otherwise (an exception's message, an address, a float
to its last bit)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from harness.pyast import literal_eval
from harness.records import Behaviour, DistinguishingInput, ProbeResult
from judge.strengthen.candidates import model_free_candidate
from judge.strengthen.neighbours import (
    neighbour_calls,
    other_types,
    pick_neighbours,
    seed_calls,
    spread,
    unstated,
    varied_slots,
)
from judge.strengthen.writing import implementation_details, model_free_body


def tail_input(**changes: object) -> DistinguishingInput:
    base = {"test_id": "tests/test_recipes.py::TailTests::test_sized_negative", "how": "the test's own literals", "setup": [],
            "call": "list(mi.tail(0, 'ABCDEFG'))", "gold": Behaviour(value='["list", []]'),
            "other": Behaviour(raised="ValueError"), "literal": "[]"}  # fmt: skip
    return DistinguishingInput(**{**base, **changes})


def obs(value: object = None, *, literal: str = "", raised: str = "") -> dict:
    return {"step": 0, "value": value, "raised": raised, "stdout": "", "literal": literal}


def test_neighbours_move_one_literal_argument_of_the_call_under_test_to_a_close_value() -> None:
    calls = dict((src, how) for how, src in neighbour_calls(tail_input()))
    # inside list(...): the call under test is tail, its first argument goes to the numbers next to 0
    assert {"list(mi.tail(-1, 'ABCDEFG'))", "list(mi.tail(1, 'ABCDEFG'))", "list(mi.tail(0, ''))", "list(mi.tail(0, 'A'))"} <= set(calls)
    assert "list(mi.tail(0, 'ABCDEFG'))" not in calls and all("ABCDEFG" in how for how in calls.values())
    # round-robin: the second argument's closest values come before the first argument's farthest
    order = [src for _, src in neighbour_calls(tail_input())]
    assert order.index("list(mi.tail(0, ''))") < 4
    # a keyword argument varies too; a name (a fixture, a variable) does not
    kw = dict((src, how) for how, src in neighbour_calls(tail_input(call="shelf.take('apple', n=4)")))
    assert "shelf.take('apple', n=3)" in kw and "shelf.take('', n=4)" in kw and not any(src.startswith("x") for src in kw)
    assert neighbour_calls(tail_input(call="x = 1")) == [] and len(neighbour_calls(tail_input(), limit=3)) == 3


def test_a_neighbour_is_asserted_only_where_gold_is_stable_in_contract_and_another_tree_differs() -> None:
    d = tail_input()
    call, how = "list(mi.tail(1, 'ABCDEFG'))", "n 0 -> 1"
    g = obs(["list", ["'G'"]], literal="['G']")
    # a survivor (the last tree) differs: rank 0, asserted as gold's value
    rank, v = pick_neighbours(d, [g, g], [g, obs(raised="ValueError")], 1, {"ValueError"}, how, call)  # type: ignore[misc]
    assert rank == 0 and (v.call, v.literal, v.source, v.other.raised) == (call, "['G']", "variant", "ValueError")
    # only the buggy tree (the first) differs: rank 1
    assert pick_neighbours(d, [g, g], [obs(["list", []], literal="[]"), g], 1, set(), how, call)[0] == 1  # type: ignore[index]
    # every tree alike; gold unstable (hash order); gold raising what nobody expects; no evaluable repr; a timeout elsewhere
    assert pick_neighbours(d, [g, g], [g, g], 1, set(), how, call) is None
    assert pick_neighbours(d, [g, obs(["list", ["'F'"]], literal="['F']")], [g, obs(raised="ValueError")], 1, set(), how, call) is None
    assert pick_neighbours(d, [obs(raised="KeyError")] * 2, [g, g], 1, {"ValueError"}, how, call) is None
    assert pick_neighbours(d, [obs(["Thing", "<Thing>"])] * 2, [g, obs(raised="ValueError")], 1, set(), how, call) is None
    assert pick_neighbours(d, [g, g], [g, obs(raised="timeout")], 1, set(), how, call) is None
    # gold raises what the tests expect: asserted as the exception type
    raised = pick_neighbours(d, [obs(raised="ValueError")] * 2, [g, g], 1, {"ValueError"}, how, "list(mi.tail(-1, ''))")
    assert raised is not None and raised[1].gold.raised == "ValueError" and raised[1].literal == ""
    # a float to its last bit is gold's arithmetic, not the contract
    f = obs(json.dumps(repr(0.1 + 0.2)), literal=repr(0.1 + 0.2))
    assert pick_neighbours(d, [f, f], [g, g], 1, set(), how, call) is None


def test_the_function_asserts_the_input_then_its_neighbours_with_each_import_once() -> None:
    source = "import unittest\n\nimport more_itertools as mi\n\n\nclass TailTests(unittest.TestCase):\n    def test_sized_negative(self):\n" \
             "        self.assertRaises(ValueError, lambda: list(mi.tail(-1, 'ABCDEFG')))\n"  # fmt: skip
    probe = ProbeResult(config_hash="t", task_hash="t", instance_id="t", probe_id="p1", kind="plausible_wrong", origin="model_free",
                        operator="mutate_compare", description="", patch="", reward=1.0, reason="ok", selected_reward=None,
                        executions=0, differing=[], log_path="", distinguishing=tail_input())  # fmt: skip
    near = [tail_input(call="list(mi.tail(1, ''))", literal="[]", setup=["from os import sep"]),
            tail_input(call="list(mi.tail(-2, 'AB'))", gold=Behaviour(raised="ValueError"), literal="", setup=["from os import sep"])]
    cand = model_free_candidate(probe, {"tests/test_recipes.py": source}, form="anchored",
                                anchor="tests/test_recipes.py::TailTests::test_sized_negative", extra=near)  # fmt: skip
    assert cand is not None and cand.cls == "TailTests"
    body = [line.strip() for line in cand.code.splitlines()[2:]]
    assert body == ["from os import sep", "self.assertRaises(ValueError, lambda: list(mi.tail(-1, 'ABCDEFG')))",
                    "self.assertEqual(list(mi.tail(0, 'ABCDEFG')), [])", "self.assertEqual(list(mi.tail(1, '')), [])",
                    "with self.assertRaises(ValueError):", "list(mi.tail(-2, 'AB'))"]  # fmt: skip
    assert "2 neighbours" in cand.found_by and cand.copied.startswith("self.assertRaises(ValueError")
    assert implementation_details(cand.code, cand.copied) == []
    # a name the input's setup binds to an immutable literal is bound once; a mutable one before each call
    seq = [tail_input(call="list(mi.sliced(seq, 0))", setup=["seq = 'ABCDEFG'", "box = []"])]
    near = [seq[0].model_copy(update={"call": f"list(mi.sliced(seq, {n}))", "gold": Behaviour(raised="ValueError"), "literal": ""}) for n in (-2, -3)]
    cand = model_free_candidate(probe.model_copy(update={"distinguishing": seq[0]}), {"tests/test_recipes.py": source}, extra=near)
    assert cand is not None
    lines = [line.strip() for line in cand.code.splitlines()[2:]]
    assert lines.count("seq = 'ABCDEFG'") == 1 and lines.count("box = []") == 3 and lines[2] == "self.assertEqual(list(mi.sliced(seq, 0)), [])"


def test_the_contract_check_rejects_assertions_on_messages_addresses_and_full_precision_floats() -> None:
    assert implementation_details("def test_a():\n    assert f(1) == 0.30000000000000004\n") == ["a float to full precision (0.30000000000000004)"]
    assert implementation_details("def test_a():\n    assert f(1) == 0.25 and g() == 1e-07\n") == []
    message = ["an exception's message"]
    assert implementation_details("def test_a():\n    with pytest.raises(ValueError, match='n must be'):\n        f(-1)\n") == message
    assert implementation_details("def test_a(self):\n    self.assertRaisesRegex(ValueError, 'n must', f, -1)\n") == message
    assert implementation_details("def test_a():\n    with pytest.raises(ValueError) as info:\n        f(-1)\n"
                                  "    assert str(info.value) == 'n must be >= 0'\n") == message  # fmt: skip
    assert implementation_details("def test_a():\n    with pytest.raises(ValueError) as info:\n        f(-1)\n"
                                  "    assert info.value.args[0] == 'no'\n") == message  # fmt: skip
    assert implementation_details("def test_a():\n    assert repr(f()) == '<Box object at 0x7f3a2c>'\n") == ["an object's address"]
    # semver db55f27: a version's hash value (any hash of the compared parts is correct; per process too)
    assert implementation_details("def test_a():\n    assert VersionInfo.__hash__(VersionInfo(1, 2, 3)) == -3053901434293367585\n") == [
        "a hash or identity value"]  # fmt: skip
    assert implementation_details("def test_a():\n    assert hash(v) == 5 and id(v) == 7\n") == ["a hash or identity value"]
    # the original test's own checks, repeated before an anchored input, are the suite's
    copied = "with pytest.raises(ValueError) as info:\n    tail(-1, letters)\nassert 'at least' in str(info.value)"
    code = "def test_s(letters):\n    with pytest.raises(ValueError) as info:\n        tail(-1, letters)\n" \
           "    assert 'at least' in str(info.value)\n    assert tail(0, letters) == []\n"  # fmt: skip
    assert implementation_details(code, copied) == [] and implementation_details(code) == message


def test_a_value_whose_repr_names_only_modules_is_asserted_with_their_imports() -> None:
    """pyiso8601 b6ca8b0: gold returns a datetime whose repr does not evaluate in the test's namespace
    (it imports no ``datetime`` module), so no test was written and the task stayed not_repaired."""
    value = json.dumps(["datetime", "datetime.datetime(1997, 8, 29, 6, 14, 0, 123, tzinfo=datetime.timezone.utc)"])
    d = tail_input(call="parse_date('1997-08-29T06:14:00.000123', UTC)", setup=["from iso8601 import parse_date, UTC"],
                   gold=Behaviour(value=value), other=Behaviour(value='"x"'), literal="")  # fmt: skip
    assert model_free_body(d, unittest=False, pytest_imported=True) == [
        "from iso8601 import parse_date, UTC", "import datetime as _datetime",
        "assert parse_date('1997-08-29T06:14:00.000123', UTC) == _datetime.datetime(1997, 8, 29, 6, 14, 0, 123, tzinfo=_datetime.timezone.utc)",
    ]  # fmt: skip
    # a repr naming a class (its module unknown), builtins, an object's insides: nothing to state
    for text in ("Box(1)", "<Box>", "complex(1, 2)", "self.box"):
        assert model_free_body(d.model_copy(update={"gold": Behaviour(value=json.dumps(["T", text]))}), unittest=False, pytest_imported=True) is None


def test_an_input_whose_value_cannot_be_written_is_compared_as_text_and_varied_inside_str() -> None:
    """pyiso8601 b6ca8b0's tzinfo prints as ``<iso8601.iso8601.Utc object>``: no check can state the
    datetime itself, so strengthening replays ``str(call)`` (``restate_as_text``) and varies its inside."""
    value = json.dumps(["datetime", "datetime.datetime(1997, 8, 29, 6, 14, 0, 123, tzinfo=<iso8601.iso8601.Utc object>)"])
    d = tail_input(call="parse_date('1997-08-29T06:14:00.000123', UTC)", gold=Behaviour(value=value), literal="")
    assert unstated(d) and not unstated(tail_input()) and not unstated(d.model_copy(update={"gold": Behaviour(raised="ValueError")}))
    calls = [src for _, src in neighbour_calls(d.model_copy(update={"call": f"str({d.call})"}))]
    assert "str(parse_date('1997-08-29T06:14:00.0001233', UTC))" in calls and all(c.startswith("str(parse_date(") for c in calls)
    # a string doubled or spliced with another is no neighbour: gold's answer there is no behaviour the issue states
    assert "str(parse_date('1997-08-29T06:14:00.0001231997-08-29T06:14:00.000123', UTC))" not in calls


def test_an_operator_input_becomes_a_case_of_the_parametrized_test_and_its_neighbours_change_type() -> None:
    """markupsafe 3d809ae: the engine states ``Markup('<em></em>') % ''`` as ``Markup.__mod__(...)``. The
    parametrized test's body ``Markup("<em></em>") % args`` takes it as the case ``''`` (a bare argname
    took the whole call as its value, evaluated at collection: the case failed on gold), and its
    neighbours put None and a number in place of the string (the shortcut wraps only str, int and
    float as one argument, so ``% None`` stays silent on it)."""
    source = 'import pytest\nfrom markupsafe import Markup\n\n\n@pytest.mark.parametrize("args", ["foo", 42, ("foo", 42)])\n' \
             'def test_missing_interpol(args):\n    with pytest.raises(TypeError):\n        Markup("<em></em>") % args\n'  # fmt: skip
    d = tail_input(test_id="tests/test_markupsafe.py::test_missing_interpol[foo]", setup=["from markupsafe import Markup"],
                   call="Markup.__mod__(Markup('<em></em>'), '')", gold=Behaviour(raised="TypeError"), other=Behaviour(value='"x"'), literal="")  # fmt: skip
    probe = ProbeResult(config_hash="t", task_hash="t", instance_id="t", probe_id="p1", kind="plausible_wrong", origin="model_free",
                        operator="special_case", description="", patch="", reward=1.0, reason="ok", selected_reward=None,
                        executions=0, differing=[], log_path="", distinguishing=d)  # fmt: skip
    cand = model_free_candidate(probe, {"tests/test_markupsafe.py": source}, form="case")
    assert cand is not None and cand.code == f"pytest.param('', id={cand.case!r})"
    assert [src for _, src in neighbour_calls(d)] == ["Markup.__mod__(Markup('<em></em>'), None)", "Markup.__mod__(Markup('<em></em>'), 0)"]
    # a number's other type is a string; None is not varied to None
    assert [v for v, _ in other_types(3)] == [None, ""] and [v for v, _ in other_types(None)] == [0]


def test_a_neighbour_of_another_type_counts_only_for_an_exception_the_issue_names() -> None:
    """boltons 435774e and more-itertools 0e6acdf: ``MultiReplace({}).sub(None) == None`` and
    ``chunked('ABCDE', '')`` raising TypeError are gold's accidents, and their correct alternatives
    differ there; markupsafe 3d809ae's issue names the TypeError that ``% None`` must raise."""
    d = tail_input(call="Markup.__mod__(Markup('<em></em>'), '')", gold=Behaviour(raised="TypeError"), literal="")
    te, none = obs(raised="TypeError"), obs("'None'", literal="None")
    silent = obs("'x'", literal="'x'")
    how = "Markup.__mod__(...) with argument 2 '' -> None (None in its place)"
    assert pick_neighbours(d, [te, te], [silent, silent], 1, {"TypeError"}, how, "m(None)", {"TypeError"}) is not None
    assert pick_neighbours(d, [te, te], [silent, silent], 1, {"TypeError"}, how, "m(None)", set()) is None
    assert pick_neighbours(d, [none, none], [te, te], 1, {"TypeError"}, how, "sub(None)", {"TypeError"}) is None
    # the same answers for a close value of the argument's own type count as before
    assert pick_neighbours(d, [none, none], [te, te], 1, {"TypeError"}, "... -> 'a' (one element)", "sub('a')", set()) is not None


PLURAL_TEST = '''from boltons import strutils


def test_pluralize_x():
    pluralize = strutils.pluralize
    assert pluralize('box') == 'boxes'
    assert pluralize('prefix') == 'prefixes'
    assert pluralize(word) == 'x'
    assert strutils.singularize('boxes') == 'box'
'''


def plural_input(**changes: object) -> DistinguishingInput:
    return tail_input(**{"test_id": "tests/test_strutils.py::test_pluralize_x", "setup": ["from boltons.strutils import pluralize"],
                         "call": "pluralize('bch')", "gold": Behaviour(value="\"'bches'\""), "other": Behaviour(value="\"'bchs'\""),
                         "literal": "'bches'", **changes})  # fmt: skip


def test_regression_boltons_8c3fc28_the_tests_own_cases_of_the_function_are_varied_too() -> None:
    """boltons 8c3fc28: the survivor's input ``pluralize('bch')`` lies in the -ch branch, so its
    neighbours never reached a word ending in x, and the shortcut (only -ox, -ax, -ix added) passed the
    strengthened arm. The tests' own calls of the input's function, written with its callee, are seeds
    whose neighbours ('bbx', 'prefex') cover the class of words gold changes."""
    sources = {"tests/test_strutils.py": PLURAL_TEST}
    d = plural_input()
    # literal arguments only (not ``word``), the input's function only (not singularize), the input's own spelling
    assert seed_calls(d, sources, []) == ["pluralize('box')", "pluralize('prefix')"]
    # the FAIL_TO_PASS tests are read too, once each; inside list(...)/str(...) as the input is
    wrapped = plural_input(call="str(pluralize('bch'))")
    assert seed_calls(wrapped, sources, [d.test_id, "tests/test_strutils.py::test_gone"]) == ["str(pluralize('box'))", "str(pluralize('prefix'))"]
    # a method of a built object: the tests' receiver is another object
    assert seed_calls(plural_input(call="MultiReplace({}).pluralize('bch')"), sources, []) == []
    calls = [src for _, src in neighbour_calls(plural_input(call="pluralize('box')"))]
    assert "pluralize('bbx')" in calls


def test_regression_boltons_8c3fc28_a_strings_ending_becomes_a_literal_of_the_changed_code() -> None:
    """The observation engine tries a string's ending replaced by a short literal of gold's changed
    function; the neighbours did not (``'bch'`` -> ``'bsx'`` is a word ending in x next to the input)."""
    calls = [src for _, src in neighbour_calls(plural_input(), endings=["sx", "ch"])]
    assert "pluralize('bsx')" in calls and "pluralize('bch')" not in calls
    assert "pluralize('bsx')" not in [src for _, src in neighbour_calls(plural_input())]


def test_regression_parse_0477aa5_the_cases_neighbours_are_spread_over_the_kinds_of_variation() -> None:
    """parse 0477aa5: of the many neighbours of the tests' cases that gold fixes, only the one with a
    separator left out (``{:+7f}``) rejects the shortcut; taken in order, the first few were all digit
    variations. Each kind of variation comes before a second of a kind."""
    found = [plural_input(how=f"... -> x{i} ({kind})") for i, kind in
             enumerate(["a run of digits one longer"] * 5 + ["a separator left out"] * 2 + ["one shorter"])]  # fmt: skip
    kept = [v.how for v in spread(found, 4)]
    assert kept == ["... -> x0 (a run of digits one longer)", "... -> x5 (a separator left out)", "... -> x7 (one shorter)",
                    "... -> x1 (a run of digits one longer)"]  # fmt: skip
    assert len(spread(found, 20)) == len(found) and spread([], 3) == []


def test_regression_boltons_8c3fc28_a_cases_neighbour_is_kept_only_where_gold_fixes_the_buggy_tree(monkeypatch) -> None:  # noqa: ANN001
    """Neighbours of the tests' cases go beside the input when gold answers them stably and the buggy
    tree otherwise (the class of behaviour gold changes); where only a survivor differs, or buggy
    already agrees, they are left out. One replay serves every survivor whose input came from the test."""
    from judge.strengthen import neighbours as st

    plural = {"": lambda w: w + "s", "gold": lambda w: w + ("es" if w[-1:] in "sx" or w.endswith(("ch", "sh")) else "s"),
              "survivor": lambda w: w + ("es" if w[-1:] in "sx" else "s")}  # fmt: skip
    replays: list[int] = []

    def replay(ctx: object, tree: object, patch: str, progs: list) -> dict:  # noqa: ARG001
        replays.append(len(progs))
        word = plural["gold" if patch == "GOLD" else patch]
        out = {}
        for p in progs:
            arg = literal_eval(p.steps[-1].src.removeprefix("pluralize(").removesuffix(")"))
            value = word(arg) if isinstance(arg, str) else None
            out[p.key] = obs(json.dumps(repr(value)), literal=repr(value)) if isinstance(arg, str) else obs(raised="TypeError")
        return out

    monkeypatch.setattr(st, "_replay", replay)
    probe = ProbeResult(config_hash="t", task_hash="t", instance_id="t", probe_id="p1", kind="plausible_wrong", origin="model_free",
                        operator="mutate_logic", description="", patch="survivor", reward=1.0, reason="ok", selected_reward=None,
                        executions=0, differing=[], log_path="", distinguishing=plural_input())  # fmt: skip
    task = SimpleNamespace(answer=SimpleNamespace(gold_patch="GOLD"), problem_statement="pluralize adds a bare s to words ending in x")
    p1 = SimpleNamespace(fail_to_pass=["tests/test_strutils.py::test_pluralize_x"])
    ctx = SimpleNamespace(task=task, p1=p1, survivors=[probe, probe.model_copy(update={"probe_id": "p2"})],
                          sources={"tests/test_strutils.py": PLURAL_TEST})  # fmt: skip
    near = st.observe_neighbours(ctx, Path("."), ["sx", "sh"])  # type: ignore[arg-type]
    assert set(near) == {"p1", "p2"} and replays and len(set(replays)) == 1
    cases = [v.call for v in near["p1"].cases]
    # 'bbx', 'prefex', 'prefsx' end in x: gold fixes buggy there; 'bo' and 'bch' buggy already gets right
    assert {"pluralize('bbx')", "pluralize('prefex')", "pluralize('prefsx')"} <= set(cases)
    assert not {"pluralize('bo')", "pluralize('bch')", "pluralize(None)", "pluralize('')"} & set(cases)
    assert all(v.gold.value != v.other.value for v in near["p1"].cases) and [v.call for v in near["p2"].cases] == cases
    # the input's own neighbours: 'bsh' (-sh) tells the survivor apart; 'bsx' is one too, asserted once
    own = [v.call for v in near["p1"].own]
    assert {"pluralize('bsh')", "pluralize('bsx')"} <= set(own) and "pluralize('bsx')" not in cases and len(own) == len(set(own))


def test_regression_boltons_1e61524_a_string_changed_only_in_case_is_no_neighbour() -> None:
    """boltons 1e61524: the tests' case ``singularize('BOSS')`` with its ending replaced by the changed
    code's literal 's' gave ``'BOSs'``, a mixed case no test or issue sentence states; gold returns it
    as it is and the correct alternative lowercases it, which failed the alternative on the
    strengthened arm."""
    d = plural_input(call="singularize('BOSS')")
    calls = [src for _, src in neighbour_calls(d, endings=["ss", "s"])]
    assert "singularize('BOSs')" not in calls and "singularize('BOss')" not in calls and "singularize('BOS')" in calls


def test_regression_parse_0477aa5_the_cases_are_varied_where_they_differ_from_each_other() -> None:
    """parse 0477aa5: the tests' four cases differ in the format only (the text is the same), so their
    neighbours vary the format; those of the text pushed the one that rejects the shortcut
    (``{:+7f}``, a separator left out) past what is kept."""
    seeds = ["str(parse('Pi = {:.7f}', 'Pi = 3.1415926'))", "str(parse('Pi = {:+.7f}', 'Pi = 3.1415926'))", "str(parse('Pi = {:-.7f}', 'Pi = 3.1415926'))"]
    assert varied_slots(seeds) == {"0"} and varied_slots(seeds[:1]) == set() and varied_slots(["f(1, n=2)", "f(1, n=3)"]) == {"n"}
    d = plural_input(call=seeds[1])
    calls = [src for _, src in neighbour_calls(d, 32, only={"0"})]
    assert "str(parse('Pi = {:+7f}', 'Pi = 3.1415926'))" in calls and all("'Pi = 3.1415926'))" in c for c in calls)
    assert any("'Pi = 3.141592'" in c for _, c in neighbour_calls(d, 32))


def test_a_function_rejected_with_the_cases_neighbours_is_retried_with_the_inputs_own_only() -> None:
    """A neighbour of the tests' cases that fails a validation step (a rewrite of gold answers it
    otherwise) must not cost the input its own neighbours: the function is tried again with those."""
    from judge.strengthen.neighbours import Neighbourhood
    from judge.strengthen.stage import _add_input

    probe = ProbeResult(config_hash="t", task_hash="t", instance_id="t", probe_id="p1", kind="plausible_wrong", origin="model_free",
                        operator="mutate_logic", description="", patch="", reward=1.0, reason="ok", selected_reward=None,
                        executions=0, differing=[], log_path="", distinguishing=plural_input())  # fmt: skip
    own = [plural_input(call="pluralize('bsh')", literal="'bshes'")]
    cases = [plural_input(call="pluralize('bbx')", literal="'bbxes'")]
    tried: list[str] = []

    class Bench:
        def consider(self, cand):  # noqa: ANN001, ANN202
            tried.append(cand.code)
            return SimpleNamespace(rejected_at="invariant" if "bbx" in cand.code else "")

    assert _add_input(Bench(), probe, {"tests/test_strutils.py": PLURAL_TEST}, "", Neighbourhood(own, cases), set())  # type: ignore[arg-type]
    assert len(tried) == 2 and "bbx" in tried[0] and "bsh" in tried[0] and "bbx" not in tried[1] and "bsh" in tried[1]
