"""The observation engine (probes.observe, harness/grading/plugins/swedeck_observe.py): calls recorded inside
pytest for parametrized cases, fixtures, test classes and unittest cases; inputs varied from them; and,
on three tiny real repositories in bwrap sandboxes, each with a planted too-loose test, a shortcut
patch that passes it and that the engine must tell apart from gold with a confirmed standalone input."""

from __future__ import annotations

import datetime
import difflib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.sandboxes.envs import prepare_tree
from harness.grading.grader import grade
from harness.grading.shipping import PLUGINS
from harness.records import Answer, Behaviour, Environment, HiddenTests, Recipe, RepoSource, Task
from harness.sandboxes.sandbox import Backend
from probes.differential import session_for
from probes.observe.calls import Call, documented_calls, prioritised, seeds_from_records
from probes.observe.session import call_program, differs, expected_exceptions, in_contract, records
from probes.observe.values import (
    alternatives,
    deeper_groups,
    digit_extremes,
    longer_digit_runs,
    other_penultimate,
    separators_dropped,
)
from probes.observe.variants import missing_keys, rebuilt, renested, retyped, variations
from probes.observe.watched import changed_literals, import_root

# ================================================================================ the plugin, on the host

LIB = '''
def clamp(x, lo=0, hi=10):
    if x < lo:
        return lo
    if x > hi:
        raise ValueError("too big")
    print("clamped", x)
    return x


def chunks(seq, n):
    for i in range(0, len(seq), n):
        yield seq[i:i + n]


class Box:
    def __init__(self, size):
        self.size = size

    def grow(self, k):
        return Box(self.size + k)

    def __repr__(self):
        return f"Box({self.size!r})"

    def __eq__(self, other):
        return isinstance(other, Box) and other.size == self.size
'''

SUITE = '''
import unittest
import pytest
from pkg import clamp, chunks, Box
import pkg


@pytest.mark.parametrize("x,want", [(-1, 0), (5, 5)])
def test_clamp(x, want):
    assert clamp(x) == want


@pytest.fixture
def box():
    return Box(3)


def test_box(box):
    assert box.grow(2).size == 5
    pytest.raises(ValueError, clamp, 12)


class TestChunks:
    def test_chunks(self):
        assert list(chunks([1, 2, 3], 2)) == [[1, 2], [3]]
        it = pkg.chunks("abcdef", 2)
        assert next(it) == "ab"


class U(unittest.TestCase):
    def test_u(self):
        self.assertEqual(pkg.clamp(3, hi=4), 3)
        self.assertRaises(ValueError, clamp, 20)
'''


EXTRA = '''
import functools
import re


def deprecated(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)
    return wrapper


class Pattern:
    def __init__(self, size):
        self.size = size
        self.compiled = re.compile("a" * size)
        self._cache = {}

    def count(self, text):
        return len(self.compiled.findall(text))
'''
EXTRA_SUITE = '''
import pytest

from pkg.core import Box, Pattern, clamp, deprecated


@deprecated
def helper(n):
    return Box(n)


def test_extra():
    assert deprecated(clamp)(4) == 4
    assert helper(7).size == 7


def test_opaque():
    assert Pattern(2).size == 2


@pytest.fixture
def pattern():
    return Pattern(3)


def test_built(pattern):
    assert pattern.count("aaaaaaa") == 2
    pattern.size = 4  # changed since it was built: its building call no longer writes it
    assert pattern.count("aaaa") == 1
'''


def run_plugin(tmp_path: Path, watched: list[str], extra: str = "", suite: str = "") -> list[dict]:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("from .core import clamp, chunks, Box\n")
    (tmp_path / "pkg" / "core.py").write_text(LIB + extra)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_core.py").write_text(SUITE)
    if suite:
        (tmp_path / "tests" / "test_extra.py").write_text(suite)
    (tmp_path / "targets").write_text("".join(f"{w}\n" for w in watched))
    return run_suite(tmp_path)


def run_suite(tmp_path: Path) -> list[dict]:
    """The observation plugin's records of ``tests`` in ``tmp_path``, watching what ``tmp_path/targets`` lists."""
    env = {**os.environ, "SWEDECK_OBSERVE_TARGETS": str(tmp_path / "targets"), "SWEDECK_OBSERVE_LOG": str(tmp_path / "log"),
           "PYTHONPATH": str(PLUGINS), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}  # fmt: skip
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "swedeck_observe", "-p", "no:cacheprovider", "tests"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:]
    text = (tmp_path / "log").read_text()
    assert text.startswith('{"plugin": "swedeck_observe"}\n')
    return records(text)


def test_the_plugin_records_calls_from_parametrized_cases_fixtures_classes_and_unittest(tmp_path: Path) -> None:
    rows = run_plugin(tmp_path, ["pkg/core.py::clamp", "pkg/core.py::chunks", "pkg/core.py::Box.grow", "pkg/core.py::Box.__init__"])
    got = [(r["test"].split("::", 1)[1], r["call"], r["value"], r["raised"], r["stdout"]) for r in rows]
    assert got == [
        ("test_clamp[-1-0]", "clamp(-1, 0, 10)", "0", "", ""),
        ("test_clamp[5-5]", "clamp(5, 0, 10)", "5", "", "clamped 5\n"),
        ("test_box", "Box(3)", ["Box", "Box(3)", {"attrs": [["size", "3"]]}], "", ""),  # the fixture's call, attributed to the test
        ("test_box", "Box.grow(Box(3), 2)", ["Box", "Box(5)", {"attrs": [["size", "5"]]}], "", ""),
        ("test_box", "clamp(12, 0, 10)", None, "ValueError", ""),  # through pytest.raises(E, f, x)
        ("TestChunks::test_chunks", "chunks([1, 2, 3], 2)", ["iterator", [["list", ["1", "2"]], ["list", ["3"]]]], "", ""),
        ("TestChunks::test_chunks", "chunks('abcdef', 2)", ["iterator", ["'ab'"]], "", ""),  # left unfinished
        ("U::test_u", "clamp(3, 0, 4)", "3", "", "clamped 3\n"),
        ("U::test_u", "clamp(20, 0, 10)", None, "ValueError", ""),  # through self.assertRaises(E, f, x)
    ]
    assert rows[0]["imports"] == ["from pkg.core import clamp"] and rows[0]["target"] == "pkg.core:clamp"
    assert rows[6]["complete"] is False and rows[5]["complete"] is True
    assert rows[3]["args"] == ["Box(3)", "2"] and rows[3]["literal"] == "Box(5)"


def test_a_call_through_a_decorator_s_wrapper_is_the_test_s_and_an_object_s_internals_are_not_its_value(tmp_path: Path) -> None:
    """semver's ``match`` is wrapped by ``@deprecated`` (a closure taking ``*args, **kwargs``): the
    test's call reaches it through the wrapper. boltons-435774e: a MultiReplace compiled its pattern
    otherwise on a correct alternative; only an object's public plain data is its value."""
    rows = run_plugin(tmp_path, ["pkg/core.py::clamp", "pkg/core.py::Box.__init__", "pkg/core.py::Pattern.__init__"], extra=EXTRA, suite=EXTRA_SUITE)
    got = {r["call"]: r["value"] for r in rows if r["test"].endswith("test_extra")}
    assert got == {"clamp(4, 0, 10)": "4", "Box(7)": ["Box", "Box(7)", {"attrs": [["size", "7"]]}]}
    regex = [r for r in rows if r["test"].endswith("test_opaque")]
    assert [r["value"] for r in regex] == [["Pattern", ["dict", [["'size'", "2"]]]]]


def test_an_object_a_fixture_built_through_a_watched_call_is_written_as_that_call(tmp_path: Path) -> None:
    """boltons' MultiReplace has no repr of its own: ``m.sub(text)`` had no evaluable ``m`` (12 calls
    of boltons-435774e's suite), though the test built ``m`` with a watched ``MultiReplace({...})``."""
    rows = run_plugin(tmp_path, ["pkg/core.py::Pattern.__init__", "pkg/core.py::Pattern.count"], extra=EXTRA, suite=EXTRA_SUITE)
    got = [(r["call"], r["imports"]) for r in rows if r["test"].endswith("test_built")]
    assert got == [("Pattern(3)", ["from pkg.core import Pattern"]),
                   ("Pattern.count(Pattern(3), 'aaaaaaa')", ["from pkg.core import Pattern"]),
                   ("", ["from pkg.core import Pattern"])]  # fmt: skip


def test_calls_the_library_makes_itself_are_not_observed(tmp_path: Path) -> None:
    """Box.grow constructs a Box: that __init__ call comes from the library, not from a test."""
    rows = run_plugin(tmp_path, ["pkg/core.py::Box.__init__"])
    assert [r["call"] for r in rows] == ["Box(3)"]


LOOP_SUITE = """
from pkg.core import Box

def test_loop(tmp_path_factory):
    import pkg.core
    calls = []
    real = pkg.core.Box.__repr__
    pkg.core.Box.__repr__ = lambda self: calls.append(1) or real(self)
    box = Box(0)
    for _ in range(1000):
        box = box.grow(1)
    pkg.core.Box.__repr__ = real
    open("reprs", "w").write(str(len(calls)))
"""


def test_regression_a_test_past_its_record_cap_is_not_read_any_more(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """boltons-25e8d6b: a test inserting into a BarrelList in a loop was observed for 130 s (2 s plain),
    each call's arguments written as source after the test's records were capped: past the cap the
    arguments are not read (no repr taken), and the records are the same."""
    monkeypatch.syspath_prepend(str(PLUGINS))
    from swedeck_observe_calls import MAX_RECORDS_PER_TEST

    rows = run_plugin(tmp_path, ["pkg/core.py::Box.grow"], suite=LOOP_SUITE)
    loop = [r for r in rows if r["test"].endswith("test_loop")]
    assert len(loop) == MAX_RECORDS_PER_TEST and loop[-1]["call"] == f"Box.grow(Box({MAX_RECORDS_PER_TEST - 1}), 1)"
    assert int((tmp_path / "reprs").read_text()) <= 3 * MAX_RECORDS_PER_TEST < 1000


FACADE = {
    "fmt/__init__.py": "from fmt.api import render, Template\n",
    "fmt/api.py": """from fmt._engine import Engine


def render(spec, value, upper=False):
    return Engine(spec)._render(value, upper)


def width(spec):
    return len(spec)


def check(spec):
    try:
        Engine(spec)._render(None, False)
    except TypeError:
        return None  # raised inside, caught: it returns


class Template:
    def __init__(self, spec):
        self.spec = spec

    def fill(self, value):
        spec = self.spec.strip()  # rebinds nothing the call was made with
        return Engine(spec)._render(value, False)

    def __repr__(self):
        return f"Template({self.spec!r})"

    def __eq__(self, other):
        return isinstance(other, Template) and other.spec == self.spec


class Sheet:  # no repr of its own: only the call that built it writes it
    def __init__(self, spec):
        self._spec = spec

    def fill(self, value):
        return Engine(self._spec)._render(value, False)


def sheet(spec):
    return Sheet(spec)


class _Formatter:
    def __call__(self, spec, value):
        return Engine(spec)._render(value, False)


fmt = _Formatter()
""",
    "fmt/_engine.py": """class Engine:
    def __init__(self, spec):
        self.spec = spec

    def _render(self, value, upper):
        if value is None:
            raise TypeError("no value")
        text = self.spec.replace("{}", str(value))
        return text.upper() if upper else text
""",
    "tests/test_fmt.py": """import pytest

from fmt import Template, render
from fmt.api import check, fmt, sheet, width


def test_render():
    assert render("<{}>", 3) == "<3>"
    assert render(spec="[{}]", value="a", upper=True) == "[A]"
    assert width("ab") == 2  # reaches nothing gold changed
    with pytest.raises(TypeError):
        render("{}", None)
    assert check("{}") is None


def test_template():
    t = Template("({})")
    assert t.fill(1) == "(1)"
    assert sheet("[{}]").fill(2) == "[2]"
    assert fmt("<{}>", 4) == "<4>"
""",
}


def test_a_call_from_a_test_that_reaches_gold_s_change_through_a_facade_is_recorded(tmp_path: Path) -> None:
    """The tests call ``render`` and ``Template.fill``, which dispatch to a private method of another
    module's class that gold changed: no watched function is called from test code, so nothing was
    recorded. The calls from test code whose execution reaches it are, as standalone calls (a method's
    instance through the call that built it, a constructor's or a factory's); a call that reaches nothing
    gold changed is not."""
    for rel, text in FACADE.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    (tmp_path / "targets").write_text("fmt/_engine.py::Engine._render changed\n")
    rows = run_suite(tmp_path)
    got = [(r["test"].rpartition("::")[2], r["target"], r["call"], r["value"], r["raised"], r["entry"]) for r in rows]
    assert got == [
        ("test_render", "fmt.api:render", "render('<{}>', 3, False)", "'<3>'", "", True),
        ("test_render", "fmt.api:render", "render('[{}]', 'a', True)", "'[A]'", "", True),
        ("test_render", "fmt.api:render", "render('{}', None, False)", None, "TypeError", True),
        ("test_render", "fmt.api:check", "check('{}')", "None", "", True),
        ("test_template", "fmt.api:Template.fill", "Template.fill(Template('({})'), 1)", "'(1)'", "", True),
        ("test_template", "fmt.api:Sheet.fill", "Sheet.fill(sheet('[{}]'), 2)", "'[2]'", "", True),  # what a factory built
        ("test_template", "fmt.api:_Formatter.__call__", "fmt('<{}>', 4)", "'<4>'", "", True),  # a callable instance, called
    ]
    assert rows[0]["imports"] == ["from fmt.api import render"] and rows[0]["file"] == "fmt/api.py"
    seeds = seeds_from_records(rows)
    assert [s.src for s in seeds][-3] == "Template.fill(Template('({})'), 1)" and seeds[-3].imports == ("from fmt.api import Template",)


class Statement:
    """A parse tree printed as its first word: its repr hides its tokens."""

    def __init__(self, tokens: list[str], kind: str = "select") -> None:
        self._tokens, self.kind, self._cache = list(tokens), kind, re.compile("|".join(map(re.escape, tokens)))

    def __iter__(self):  # noqa: ANN204
        yield from self._tokens

    def __repr__(self) -> str:
        return f"<Statement {self._tokens[0]!r}>"

    @property
    def costly(self) -> str:
        raise AssertionError("a property is never read")


class Stream:
    """Sized, but read once: iterating it for its value would empty it for the test."""

    def __init__(self, items: list[int]) -> None:
        self._it, self.n = iter(items), len(items)

    def __iter__(self):  # noqa: ANN204
        return self._it

    def __len__(self) -> int:
        return self.n

    def __repr__(self) -> str:
        return "<Stream>"


class Point:
    __slots__ = ("x", "_y")

    def __init__(self, x: int, y: int) -> None:
        self.x, self._y = x, y

    def __repr__(self) -> str:
        return "<Point>"


def test_an_object_whose_repr_hides_its_contents_is_compared_by_its_items_and_public_data(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two parse trees printed alike (``<Statement 'select'>``) with other tokens compared equal: only
    the repr was read. Their items and public plain data are compared too; never a private attribute
    (a compiled pattern a correct alternative builds otherwise: boltons-435774e), a property, or the
    items of a stream the test still reads; the plugin's values and the driver's alike."""
    monkeypatch.syspath_prepend(str(PLUGINS))
    import swedeck_observe_values  # type: ignore[import-not-found]

    from probes.diff_driver import canon

    select_a = Statement(["select", "a"])
    assert canon(select_a) == ["Statement", "<Statement 'select'>", {"items": ["'select'", "'a'"], "attrs": [["kind", "'select'"]]}]
    assert canon(select_a) != canon(Statement(["select", "b"])) and canon(select_a) != canon(Statement(["select", "a"], "update"))
    other_internals = Statement(["select", "a"])
    other_internals._cache = re.compile("select|a|b")
    assert canon(other_internals) == canon(select_a)
    stream = Stream([1, 2])
    assert canon(stream) == ["Stream", "<Stream>", {"attrs": [["n", "2"]]}] and list(stream) == [1, 2]
    assert canon(Point(1, 2)) == ["Point", "<Point>", {"attrs": [["x", "1"]]}]
    moment = datetime.datetime(2020, 1, 2)
    assert canon(moment) == ["datetime", "datetime.datetime(2020, 1, 2, 0, 0)"]  # read field by field where it is stated
    for value in (select_a, Stream([3]), Point(1, 2), moment, [select_a]):
        assert swedeck_observe_values.canon(value) == canon(value)


# ================================================================================ inputs and contract (pure)


def test_seeds_vary_one_argument_at_a_time_with_boundaries_splices_and_the_signature_s_none() -> None:
    seed = Call("m:f", "f", ("'ab'", "3"), (("sep", "'-'"),), ("from m import f",), "t::a", "observed", "")
    other = Call("m:f", "f", ("'xyz'", "5"), (), ("from m import f",), "t::b", "observed", "")
    calls = variations([seed, other], [], {"f": {"sep"}}, 200)
    srcs = {c.src for c in calls}
    assert {"f('ab', 2, sep='-')", "f('ab', 4, sep='-')", "f('ab', 0, sep='-')", "f('', 3, sep='-')", "f('a', 3, sep='-')",
            "f('ab', 3, sep=None)", "f('ab', 3, sep='')", "f('xyz', 6)", "f('ab', 6, sep='-')"} <= srcs
    assert "f('ayz', 3, sep='-')" in srcs and "f('xabyz', 3, sep='-')" in srcs  # spliced, nested with the other seed's string
    assert "f('xyz', 5, sep=None)" not in srcs  # only a seed that passes sep= varies it
    assert all(c.source == "variant" and c.imports == ("from m import f",) for c in calls)
    assert not {seed.src, other.src} & srcs
    assert variations([seed, other], [], {}, 200) == variations([seed, other], [], {}, 200)  # Hypothesis is derandomised
    # a FAIL_TO_PASS test's seed gets every variation before the round-robin over the others
    first = variations([other, seed], [], {}, 200, first={"t::a"})
    assert {c.test_id for c in first[:12]} == {"t::a"} and first[12:] and first[-1].test_id == "t::b"


def test_a_string_s_digit_runs_grow_by_one_digit() -> None:
    assert longer_digit_runs("2007-01-01T08:00:00.000123Z") == [
        "2007-01-01T08:00:00.0001233Z", "20077-01-01T08:00:00.000123Z", "2007-011-01T08:00:00.000123Z", "2007-01-011T08:00:00.000123Z"]
    assert "T08:00:00.0001233" in [v for v, _ in alternatives("T08:00:00.000123", [], False)]


def test_a_string_gets_an_ending_no_seen_value_has() -> None:
    assert other_penultimate("box", ["fox", "tax", "prefix"]) == ["bbx"]
    assert "bbx" in [v for v, _ in alternatives("box", ["fox", "tax", "prefix"], False)]


def test_alternatives_for_containers_include_empty_one_element_nesting_and_the_other_sequence_type() -> None:
    got = [v for v, _ in alternatives([1, 2], [], False)]
    assert got[:5] == [[], [1], [1, 2, 1], [[1, 2]], (1, 2)]  # "one shorter" is [1] again: tried once
    assert [v for v, _ in alternatives((1,), [], True)][:5] == [(), None, (1, 1), ((1,),), [1]]  # None early: allowed, it is a strong try


def test_documented_calls_of_a_target_become_inputs() -> None:
    row = {"target": "pkg.units:human", "call": "human(1)", "imports": ["from pkg.units import human"]}
    texts = {"the issue": "```python\n>>> human(1048576)\n'1.0 MiB'\nhuman(5, unit='B')\n```", "README.md": ">>> other(2)\n"}
    calls = documented_calls(texts, [row])
    assert sorted((c.src, c.test_id, c.imports) for c in calls) == [
        ("human(1048576)", "the issue", ("from pkg.units import human",)),
        ("human(5, unit='B')", "the issue", ("from pkg.units import human",)),
    ]


def test_gold_is_in_contract_when_it_returns_or_raises_what_the_tests_expect() -> None:
    expected = expected_exceptions(["with pytest.raises(ValueError):\n", "self.assertRaises((KeyError, mod.Bad), f)"], "raises TypeError")
    assert expected == {"ValueError", "KeyError", "Bad", "TypeError"}
    assert in_contract(Behaviour(value='"1"'), expected)
    assert in_contract(Behaviour(raised="pkg.errors.Bad"), expected)
    assert not in_contract(Behaviour(raised="ZeroDivisionError"), expected)
    assert not in_contract(Behaviour(raised="timeout"), expected)


def test_semver_0309c63_two_exceptions_of_different_types_are_no_evidence() -> None:
    """semver-0309c63: a correct alternative converted every part before checking signs, so
    ``VersionInfo(-1, None, 0)`` raised TypeError where gold raised ValueError: a false alarm."""
    expected = {"ValueError", "TypeError"}
    assert not differs(Behaviour(raised="ValueError"), Behaviour(raised="TypeError"), expected)
    assert differs(Behaviour(raised="ValueError"), Behaviour(value='"1"'), expected)
    assert differs(Behaviour(value='"[]"'), Behaviour(raised="ValueError"), expected)
    assert not differs(Behaviour(raised="ZeroDivisionError"), Behaviour(value='"1"'), expected)  # gold out of contract
    assert not differs(Behaviour(value='"1"'), Behaviour(raised="timeout"), expected)


def test_a_target_returning_an_iterator_is_called_inside_list_so_its_value_has_a_literal_and_semver_db55f27_boltons_ebc7a8f_a_hash_or_reduce_is_no_seed() -> None:
    rows = [
        {"test": "t::a", "target": "m:tail", "call": "tail(3, 'ABC')", "args": ["3", "'ABC'"], "kwargs": {},
         "imports": ["from m import tail"], "value": ["iterator", ["'A'"]]},
        {"test": "t::a", "target": "m:size", "call": "size('ABC')", "args": ["'ABC'"], "kwargs": {},
         "imports": ["from m import size"], "value": "3"},
        {"test": "t::b", "target": "m:size", "call": "", "args": [None], "kwargs": {}, "imports": [], "value": "3"},
    ]  # fmt: skip
    rows.append({**rows[0], "call": "tail(-1, 'ABC')", "args": ["-1", "'ABC'"], "value": None, "raised": "ValueError"})
    rows.append({**rows[1], "target": "m:V.__hash__", "call": "V.__hash__(V(1))", "args": ["V(1)"], "value": "7"})
    rows.append({**rows[1], "target": "m:V.__reduce__", "call": "V.__reduce__(V(1))", "args": ["V(1)"], "value": "7"})
    seeds = seeds_from_records(rows)
    # a call without evaluable arguments is no seed; a call that raised is consumed like the target's others;
    # a hash or a pickling recipe is no seed (semver-db55f27: a correct alternative's hash of fewer parts is
    # another number; boltons-ebc7a8f: a correct OrderedMultiDict alternative pickles otherwise)
    assert [c.src for c in seeds] == ["list(tail(3, 'ABC'))", "size('ABC')", "list(tail(-1, 'ABC'))"]
    assert "list(tail(2, 'ABC'))" in {c.src for c in variations(seeds, [], {}, 50)}


def test_an_argument_built_by_a_call_is_nested_once_more_in_it_alone_and_all_together() -> None:
    seed = Call("m:S.__ge__", "S.__ge__", ("complement({'a'})", "complement({'a', 'b'})", "3"), (), ("from m import S",), "t::a", "observed", "")
    got = [c.src for c in renested(seed)]
    assert got == [
        "S.__ge__(complement(complement({'a'})), complement({'a', 'b'}), 3)",
        "S.__ge__(complement({'a'}), complement(complement({'a', 'b'})), 3)",
        "S.__ge__(complement(complement({'a'})), complement(complement({'a', 'b'})), 3)",
    ]
    assert renested(Call("m:f", "f", ("[1]", "'x'"), (), (), "t::a", "observed", "")) == []  # literals vary otherwise
    assert any(c.src == got[2] for c in variations([seed], [], {}, 50))


def test_a_literal_inside_an_argument_built_by_a_call_is_varied() -> None:
    """more-itertools-edb3346: the tests reverse only ``numeric_range(0)``, written ``numeric_range(0, 0)``;
    a fix keyed on the range's start (0) is told apart only by another empty range, ``numeric_range(1, 0)``,
    which needs a literal inside the instance's building call varied."""
    seed = Call("m:R.__reversed__", "R.__reversed__", ("numeric_range(0, 0)",), (), ("from m import R",), "t::a", "observed", "", True)
    got = [c.src for c in rebuilt(seed)]
    assert "list(R.__reversed__(numeric_range(1, 0)))" in got and "list(R.__reversed__(numeric_range(0, -1)))" in got
    assert len(got) == 6 and all(c.source == "variant" and "inside its building call" in c.how for c in rebuilt(seed))
    assert rebuilt(Call("m:f", "f", ("[1]", "'x'"), (), (), "t::a", "observed", "")) == []  # literals vary otherwise
    assert "list(R.__reversed__(numeric_range(1, 0)))" in {c.src for c in variations([seed], [], {}, 50)}


OBJECTS = """
class _Set:
    def __init__(self, excluded):
        self.excluded = frozenset(excluded)

    def __repr__(self):
        return "complement(%r)" % (set(self.excluded),)

    def __eq__(self, other):
        return isinstance(other, _Set) and other.excluded == self.excluded


def complement(items):
    return _Set(items)


class Zone:
    pass


UTC = Zone()
"""


def test_an_argument_s_source_is_its_repr_with_the_defining_module_s_names_or_the_module_level_name_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """boltons' complement sets print as ``complement({...})`` (a function of their module, not their
    class); pyiso8601's default time zone is a module-level instance whose repr has an address."""
    (tmp_path / "objmod.py").write_text(OBJECTS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend(str(PLUGINS))
    import objmod  # type: ignore[import-not-found]
    import swedeck_observe_values  # type: ignore[import-not-found]

    assert swedeck_observe_values.source_of(objmod.complement("ab")) == (repr(objmod.complement("ab")), ["from objmod import complement"])
    home = ("objmod", vars(objmod))
    assert swedeck_observe_values.source_of(objmod.UTC) is None
    assert swedeck_observe_values.source_of(objmod.UTC, home) == ("UTC", ["from objmod import UTC"])
    assert swedeck_observe_values.source_of(objmod.Zone(), home) is None  # an instance no name holds


def test_a_bracketed_group_nests_one_level_deeper() -> None:
    """packaging-0726512: extras in a group within a group stayed unnormalized; the tests nest one level."""
    marker = '(extra == "Foo_Bar" or extra == "Baz") and python_version >= "3"'
    assert deeper_groups(marker) == ['((extra == "Foo_Bar" or extra == "Baz")) and python_version >= "3"']
    assert deeper_groups("f(x)[1]") == ["f((x))[1]", "f(x)[[1]]"]
    assert deeper_groups("no group") == [] and deeper_groups("a)(b") == []
    assert deeper_groups(marker)[0] in [v for v, _ in alternatives(marker, [], False)]


def test_a_dict_argument_becomes_a_defaultdict_with_and_without_its_first_key() -> None:
    """markupsafe-391aa07: format_map(**map) loses a mapping's __missing__; a plain dict never shows it."""
    seed = Call("m:Markup.format_map", "Markup.format_map", ("Markup('<em>{value}</em>')", "{'value': '<v>'}"), (),
                ("from m import Markup",), "t::a", "observed", "")  # fmt: skip
    got = missing_keys(seed)
    assert [c.args[1] for c in got] == ["defaultdict(str, {'value': '<v>'})", "defaultdict(str, {})"]
    assert all(c.imports == ("from m import Markup", "from collections import defaultdict") for c in got)
    assert {c.src for c in got} <= {c.src for c in variations([seed], [], {}, 50)}


def test_the_fail_to_pass_tests_calls_come_first_then_one_per_target_and_test_in_turn() -> None:
    def call(test: str, n: int, target: str = "m:f") -> Call:
        return Call(target, "f", (str(n),), (), (), test, "observed", "")

    seeds = [call("t::p2p", 1), call("t::p2p", 2), call("t::p2p", 3), call("t::other", 4, "m:g"), call("t::f2p", 5)]
    assert [c.args[0] for c in prioritised(seeds, {"t::f2p"})] == ["5", "1", "4", "2", "3"]


def test_a_string_s_ending_becomes_a_short_literal_of_the_changed_function() -> None:
    """boltons-8c3fc28's survivor turned ``or`` into ``and`` between the 'ch' and 'sh' endings; the tests
    pluralize -x words only, and 'ch' is right there in the function gold changed."""
    old = "def plural(w):\n    if w[-1] in 'sx':\n        return w + 'es'\n    return w + 's'\n\n\ndef other():\n    return 'zz'\n"
    new = old.replace("if w[-1] in 'sx':", "if w[-1] in 'sx' or w.endswith('ch') or w.endswith('sh'):")
    assert sorted(changed_literals("m.py", old, new)) == ["ch", "es", "s", "sh", "sx"]  # not other()'s 'zz'
    got = [v for v, _ in alternatives("box", ["fox", "tax"], False, ["sx", "ch", "sh"])]
    assert {"bch", "bsh", "bsx"} <= set(got)


def test_markupsafe_3d809ae_an_argument_the_tests_pass_several_types_of_gets_none() -> None:
    """markupsafe-3d809ae: ``Markup % arg`` with a str, an int and a tuple; the shortcut wraps only those
    types, so ``Markup('<em></em>') % None`` returns where gold raises TypeError."""
    seeds = [Call("m:M.__mod__", "M.__mod__", ("M('x')", arg), (), (), f"t::{i}", "observed", "") for i, arg in enumerate(["'a'", "42", "('b',)"])]
    assert "M.__mod__(M('x'), None)" in {c.src for c in variations(seeds, [], {}, 200)}
    same = [Call("m:f", "f", (arg,), (), (), f"t::{i}", "observed", "") for i, arg in enumerate(["'a'", "'b'"])]
    assert "f(None)" not in {c.src for c in variations(same, [], {}, 200)}


def test_parse_0477aa5_a_separator_is_left_out_once() -> None:
    """parse-0477aa5's shortcut drops a sign only before a precision ('+.'): the tests' formats all have
    one, '{:+7f}' has none."""
    assert separators_dropped("Pi = {:+.7f}") == ["Pi  {:+.7f}", "Pi = :+.7f}", "Pi = {+.7f}", "Pi = {:.7f}", "Pi = {:+7f}", "Pi = {:+.7f"]
    assert separators_dropped("abc") == [] and separators_dropped(".") == []
    assert "Pi = {:+7f}" in [v for v, _ in alternatives("Pi = {:+.7f}", ["Pi = {:-.7f}"], False)]


def test_a_first_digit_goes_to_its_extremes() -> None:
    """semver-b5317af's survivor read a version starting with 9 otherwise ('0123456789' -> '012345678')."""
    assert digit_extremes("2.3.7") == ["0.3.7", "9.3.7"] and digit_extremes("v0.1") == ["v9.1"] and digit_extremes("x") == []
    assert "9.3.7" in [v for v, _ in alternatives("2.3.7", [], False)]


def test_every_argument_becomes_an_equal_value_of_another_type_at_once() -> None:
    """boltons-4aa77cd's survivor kept gold's fix only where str(maxsplit) is a test's literal: a tuple
    with maxsplit 0.0 takes the old branch, which yields the tuple itself."""
    seed = Call("m:split", "split", ("[1, None, 2]", "None", "0"), (("key", "True"),), (), "t::a", "observed", "")
    assert [c.src for c in retyped(seed)] == ["split((1, None, 2), None, 0.0, key=True)"]
    assert retyped(Call("m:f", "f", ("'a'", "x"), (), (), "t::a", "observed", "")) == []
    assert retyped(seed)[0].src in {c.src for c in variations([seed], [], {}, 60)}


def test_semver_0309c63_a_call_that_exits_is_its_behaviour_not_the_end_of_the_replay(tmp_path: Path) -> None:
    """semver's ``main([...])`` ends in ``sys.exit``: the driver died with it and no call of the task
    had an answer (0 of 591)."""
    (tmp_path / "cli.py").write_text("import sys\n\n\ndef main(argv):\n    sys.exit(2)\n\n\ndef ok():\n    return 1\n")
    calls = [Call("cli:main", "main", ("[]",), (), ("from cli import main",), "t", "observed", ""),
             Call("cli:ok", "ok", (), (), ("from cli import ok",), "t", "observed", "")]  # fmt: skip
    spec = {"changed": [], "timeout_s": 5, "paths": ["."], "programs": [call_program(c, f"call{i}").spec([]) for i, c in enumerate(calls)]}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    driver = Path(__file__).parents[1] / "probes" / "diff_driver.py"
    subprocess.run([sys.executable, str(driver), "spec.json", "out.json"], cwd=tmp_path, check=True, timeout=60)
    results = json.loads((tmp_path / "out.json").read_text())["results"]
    assert [o["raised"] for o in results["call0"]] == ["SystemExit"] and results["call1"][-1]["value"] == "1"


def test_import_root_finds_a_src_layout() -> None:
    assert import_root("src/tomli/_parser.py", "tomli._parser") == "src"
    assert import_root("more_itertools/recipes.py", "more_itertools.recipes") == "."
    assert import_root("pkg/__init__.py", "pkg") == "."


# ================================================================================ real trees (bwrap)


def diff(path: str, old: str | None, new: str) -> str:
    lines = difflib.unified_diff(
        (old or "").splitlines(keepends=True), new.splitlines(keepends=True),
        "/dev/null" if old is None else f"a/{path}", f"b/{path}", n=3,
    )  # fmt: skip
    return "".join(lines)


def make_task(tmp_path: Path, name: str, path: str, buggy: str, fixed: str, tests: dict[str, str], hidden: str, issue: str) -> Task:
    repo = tmp_path / name
    (repo / Path(path).parent).mkdir(parents=True, exist_ok=True)
    (repo / path).write_text(buggy)
    hidden_path, hidden_text = hidden.split("\n", 1)
    for test_path, text in tests.items():
        (repo / test_path).parent.mkdir(parents=True, exist_ok=True)
        (repo / test_path).write_text(text)
    return Task(
        instance_id=name, source="local", repo=f"local/{name}", problem_statement=issue,
        environment=Environment(recipe=Recipe()), repo_source=RepoSource(kind="files", path=str(repo)),
        test_cmd=["python -m pytest -q tests"], test_paths=[hidden_path],
        answer=Answer(gold_patch=diff(path, buggy, fixed), hidden_tests=HiddenTests(patch=diff(hidden_path, tests.get(hidden_path), hidden_text))),
    )  # fmt: skip


UNITS = '''
def human(n):
    """Bytes as text.

    >>> human(2048)
    '2.0 KiB'
    """
    for unit in ("B", "KiB", "MiB"):
        if n < 1024 or unit == "MiB":
            return f"{n} B" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
'''
UNITS_GOLD = UNITS.replace("if n < 1024 or", "if abs(n) < 1024 or")
UNITS_SHORTCUT = UNITS.replace("if n < 1024 or", "if (n < 1024 and n != -2048) or")
UNITS_TESTS = '''import pytest
from units import human


@pytest.mark.parametrize("n, text", [(0, "0 B"), (1023, "1023 B"), (1536, "1.5 KiB"), (3 * 1024 ** 2, "3.0 MiB")])
def test_human(n, text):
    assert human(n) == text
'''
UNITS_HIDDEN = "tests/test_units.py\n" + UNITS_TESTS.replace('(0, "0 B"),', '(0, "0 B"), (-2048, "-2.0 KiB"),')

TAIL = '''
from collections import deque


def tail(n, items):
    return list(deque(items, maxlen=n)) if n else []
'''
TAIL_GOLD = TAIL.replace("    return list", "    if n < 0:\n        raise ValueError('n must be at least 0')\n    return list")
TAIL_SHORTCUT = TAIL.replace("    return list", "    if n <= 0:\n        raise ValueError('n must be positive')\n    return list")
TAIL_TESTS = '''import pytest
from seqs import tail


@pytest.fixture
def letters():
    return list("ABCDEFG")


def test_tail(letters):
    assert tail(3, letters) == ["E", "F", "G"]
'''
TAIL_HIDDEN = "tests/test_seqs.py\n" + TAIL_TESTS + '''

def test_negative(letters):
    with pytest.raises(ValueError):
        tail(-1, letters)
'''

STRIP = '''
def strip_comment(line):
    return line.split("#", 1)[0]
'''
STRIP_GOLD = '''
def strip_comment(line):
    quote = None
    for i, ch in enumerate(line):
        if ch in "'\\"" and quote in (None, ch):
            quote = None if quote else ch
        elif ch == "#" and quote is None:
            return line[:i]
    return line
'''
STRIP_SHORTCUT = STRIP.replace("    return line", "    if line == \"a = '#x'\":\n        return line\n    return line")
STRIP_TESTS = '''import unittest
from comments import strip_comment


class CommentTests(unittest.TestCase):
    def setUp(self):
        self.code = "x = 1 # note"
        self.quoted = "a = '#x'"

    def test_plain(self):
        self.assertEqual(strip_comment(self.code), "x = 1 ")
'''
STRIP_HIDDEN = "tests/test_comments.py\n" + STRIP_TESTS + '''
    def test_quoted(self):
        self.assertEqual(strip_comment(self.quoted), self.quoted)
'''

CASES = {
    "parametrized": ("units.py", UNITS, UNITS_GOLD, UNITS_SHORTCUT, {"tests/test_units.py": UNITS_TESTS}, UNITS_HIDDEN,
                     "human() shows negative sizes in bytes", "tests/test_units.py::test_human[-2048--2.0 KiB]"),
    "fixture": ("seqs.py", TAIL, TAIL_GOLD, TAIL_SHORTCUT, {"tests/test_seqs.py": TAIL_TESTS}, TAIL_HIDDEN,
                "tail(-1, items) should raise ValueError", "tests/test_seqs.py::test_negative"),
    "unittest": ("comments.py", STRIP, STRIP_GOLD, STRIP_SHORTCUT, {"tests/test_comments.py": STRIP_TESTS}, STRIP_HIDDEN,
                 "strip_comment cuts a '#' inside quotes", "tests/test_comments.py::CommentTests::test_quoted"),
}  # fmt: skip


@pytest.mark.bwrap
@pytest.mark.parametrize("style", sorted(CASES))
def test_a_shortcut_that_passes_a_too_loose_suite_is_told_apart_with_a_confirmed_call(
    style: str, tmp_path: Path, bwrap_backend: Backend, swedeck_env  # noqa: ANN001
) -> None:
    path, buggy, gold, shortcut, tests, hidden, issue, f2p = CASES[style]
    task = make_task(tmp_path, f"observe-{style}", path, buggy, gold, tests, hidden, issue)
    bwrap_backend.prepare(task)
    shortcut_patch = diff(path, buggy, shortcut)
    assert grade(task, shortcut_patch, bwrap_backend).reward == 1.0  # the planted suite is too loose
    assert grade(task, task.answer.gold_patch, bwrap_backend).reward == 1.0
    session = session_for(task, bwrap_backend, [f2p], prepare_tree(task, swedeck_env))
    assert session.distinguish(shortcut_patch).found is not None
    # the observed suite by itself (where the program replay has nothing to vary: parameters, values from setUp)
    answer = session.observer.distinguish(shortcut_patch)
    found = answer.found
    assert found is not None, answer.detail
    assert found.source in ("observed", "variant"), found
    assert found.target.split(":")[1].split(".")[0] == found.call.split("(")[0]
    assert found.gold != found.other and found.gold.raised in ("", "ValueError")
    assert found.setup == [f"from {Path(path).stem} import {found.call.split('(')[0]}"]
    assert answer.observed >= 1 and answer.generated >= 1 and answer.tried >= 1
    # the input is a standalone call: on the host, against gold's module, it behaves as gold did
    (tmp_path / "gold").mkdir()
    (tmp_path / "gold" / path).write_text(gold)
    check = "\n".join([*found.setup, "try:", f"    print(repr({found.call} == {found.literal or 'None'}))",
                       "except Exception as err:", "    print(type(err).__name__)"])  # fmt: skip
    done = subprocess.run([sys.executable, "-c", check], cwd=tmp_path / "gold", capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == (found.gold.raised or "True"), (done.stdout, done.stderr, found)
    assert session.distinguish(task.answer.gold_patch).found is None  # gold against itself: no false alarm


@pytest.mark.bwrap
@pytest.mark.parametrize("style", ["fixture", "parametrized"])
def test_a_test_with_fixtures_or_parameters_is_replayed_through_pytest(style: str, tmp_path: Path, bwrap_backend: Backend, swedeck_env) -> None:  # noqa: ANN001
    """The program replay runs a FAIL_TO_PASS test that takes fixtures, or a parametrized case, inside
    pytest, a copy of the test per variant with its own fixtures (a case's parameters bound to other
    values before its statements): the shortcut is told apart there, before any standalone call."""
    path, buggy, gold, shortcut, tests, hidden, issue, f2p = CASES[style]
    task = make_task(tmp_path, f"observe-{style}-program", path, buggy, gold, tests, hidden, issue)
    bwrap_backend.prepare(task)
    session = session_for(task, bwrap_backend, [f2p], prepare_tree(task, swedeck_env))
    answer = session.replay_programs(diff(path, buggy, shortcut))
    assert answer.found is not None and answer.found.source == "program", answer.detail
    assert session.programs and all(p.fixtures for p in session.programs)
    if style == "parametrized":  # the input is the case with a parameter bound otherwise
        assert " -> " in answer.found.how and answer.found.how.split("=")[0] in session.programs[0].fixtures, answer.found
    assert session.replay_programs(task.answer.gold_patch).found is None


TAGS = '''
class Tags:
    def __init__(self, names):
        self.names = set(names)

    def __repr__(self):
        return "Tags(%r)" % (self.names,)

    def __eq__(self, other):
        return isinstance(other, Tags) and other.names == self.names

    def merged(self, other):
        return Tags(self.names)
'''
TAGS_GOLD = TAGS.replace("return Tags(self.names)", "return Tags(self.names | other.names)")
TAGS_OTHER = TAGS.replace("return Tags(self.names)", "return Tags(set(self.names).union(other.names))")  # correct too
TAGS_TESTS = '''from tags import Tags


def test_one():
    assert Tags(["a"]) == Tags("a")
'''
TAGS_HIDDEN = "tests/test_tags.py\n" + TAGS_TESTS + '''

def test_merged():
    both = Tags(["alpha", "beta", "gamma", "delta"]).merged(Tags(["epsilon", "zeta", "eta", "theta", "iota"]))
    assert both.merged(Tags([])) == Tags(["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota"])
'''


@pytest.mark.bwrap
def test_boltons_ec1ff9f_a_set_printed_in_another_order_is_no_difference(tmp_path: Path, bwrap_backend: Backend, swedeck_env) -> None:  # noqa: ANN001
    """boltons-ec1ff9f: complement sets print their set, whose order of strings follows the process's
    hash seed, so a correct alternative replayed in another process printed ``complement({'c', 'b'})``
    where gold printed ``complement({'b', 'c'})`` and the program replay called it a difference."""
    task = make_task(tmp_path, "observe-tags", "tags.py", TAGS, TAGS_GOLD, {"tests/test_tags.py": TAGS_TESTS}, TAGS_HIDDEN,
                     "Tags.merged drops the other tags")  # fmt: skip
    bwrap_backend.prepare(task)
    session = session_for(task, bwrap_backend, ["tests/test_tags.py::test_merged"], prepare_tree(task, swedeck_env))
    other = diff("tags.py", TAGS, TAGS_OTHER)
    programs = session.replay_programs(other)
    assert programs.found is None and programs.tried >= 1, programs
    assert session.distinguish(other).found is None
    wrong = session.distinguish(diff("tags.py", TAGS, TAGS.replace("return Tags(self.names)", "return Tags(other.names)")))
    assert wrong.found is not None  # the comparison still sees a real difference


REPLACER = '''
import re


class Replacer:
    def __init__(self, mapping):
        self.mapping = dict(mapping)
        self.pattern = re.compile("|".join(map(re.escape, self.mapping)))

    def sub(self, text):
        return self.pattern.sub(lambda m: self.mapping[m.group()], text)
'''
REPLACER_GOLD = REPLACER.replace("    def sub(self, text):\n", "    def sub(self, text):\n        if not self.mapping:\n            return text\n")
REPLACER_SHORTCUT = REPLACER.replace('"|".join(map(re.escape, self.mapping))', '"|".join(map(re.escape, self.mapping)) or "$^"')
REPLACER_TESTS = '''import pytest
from replacer import Replacer


@pytest.fixture
def replacer():
    return Replacer({"cat": "dog"})


def test_sub(replacer):
    assert replacer.sub("a cat") == "a dog"
'''
REPLACER_HIDDEN = "tests/test_replacer.py\n" + REPLACER_TESTS + '''

@pytest.fixture
def empty():
    return Replacer({})


def test_empty(empty):
    assert empty.sub("foo bar") == "foo bar"
'''


@pytest.mark.bwrap
def test_boltons_435774e_an_instance_a_test_built_without_a_repr_is_replayed_through_its_building_call(
    tmp_path: Path, bwrap_backend: Backend, swedeck_env  # noqa: ANN001
) -> None:
    """boltons-435774e in small: the shortcut compiles an empty mapping to '$^', which still matches the
    empty string. The object comes from a fixture (the program replay cannot build it) and has no repr,
    so only the call that built it (``Replacer({})``) writes it."""
    task = make_task(tmp_path, "observe-replacer", "replacer.py", REPLACER, REPLACER_GOLD, {"tests/test_replacer.py": REPLACER_TESTS},
                     REPLACER_HIDDEN, "Replacer({}).sub(text) raises KeyError")  # fmt: skip
    bwrap_backend.prepare(task)
    shortcut = diff("replacer.py", REPLACER, REPLACER_SHORTCUT)
    assert grade(task, shortcut, bwrap_backend).reward == 1.0
    session = session_for(task, bwrap_backend, ["tests/test_replacer.py::test_empty"], prepare_tree(task, swedeck_env))
    answer = session.distinguish(shortcut)
    found = answer.found
    assert found is not None, answer.detail
    assert found.call == "Replacer.sub(Replacer({}), '')" and found.source == "variant", found
    assert found.gold.value == json.dumps("''") and found.other.raised == "KeyError"
    assert session.distinguish(task.answer.gold_patch).found is None


def test_regression_hypothesis_draws_only_where_the_budget_is_not_full(monkeypatch: pytest.MonkeyPatch) -> None:
    """parse 0477aa5: Hypothesis drew for every argument of every seed though the argument's budget
    (``PER_ARGUMENT``) was already full, a third of its observation time. It draws only where its
    values can still be kept, and the alternatives are the same either way."""
    import probes.observe.values as values

    full = ("{:d}", tuple(f"{{:{c}}}" for c in "abcdefghijklmnop"))  # plenty of spliced and seen strings
    short = (7, (3,))
    eager = {case: values.alternatives(case[0], case[1], False) for case in (full, short)}
    asked: list[object] = []
    real = values._hypothesis
    monkeypatch.setattr(values, "_hypothesis", lambda value, seen: asked.append(value) or real(value, seen))
    assert {case: values.alternatives(case[0], case[1], False) for case in (full, short)} == eager
    assert asked == [7]
    assert any(how.startswith("Hypothesis") for _, how in eager[short])
    assert len(eager[full]) == values.PER_ARGUMENT
