"""Probes that are other implementations of gold's fix (``probes.implementations``): each operator on a
small hand-made diff (what it produces, that the probe behaves like gold on the tests' inputs and unlike
it elsewhere, and that it produces nothing where it does not apply), then a real too-loose task of
``data/real`` graded for real on bwrap."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from test_probes import applied, check_candidates, load, make_gold, make_repo, make_task

from curation.sources import load_sources
from harness.grading.grader import grade
from harness.sandboxes.envs import prepare_tree
from probes.differential import session_for
from probes.generate import plausible_wrong
from probes.implementations import (
    IMPLEMENTATION_OPERATORS,
    adjacent_edit,
    constant_for_variable,
    drop_conjunct,
    drop_normaliser,
    mutmut_mutants,
    narrow_guard,
    one_similar_site,
)
from probes.implementations.calls import calls_in_tests
from probes.pycst import PyFile, python_files
from probes.workspace import change_blocks, hunk_groups, revert_blocks, workspace

Probe = tuple[str, str, Callable[[], "str | None"]]
_REPOS = itertools.count()


def built(tmp_path: Path, base: str, gold: str, make: Callable[[PyFile], Iterator[Probe]]) -> list[tuple[str, str]]:
    """(description, text) of each probe ``make`` builds from gold's ``pkg/mod.py``."""
    tree = make_repo(tmp_path / f"r{next(_REPOS)}", {"pkg/__init__.py": "", "pkg/mod.py": base})
    with workspace(make_task(make_gold(tree, {"pkg/mod.py": gold})), tree) as ws:
        assert ws is not None
        (py,) = [p for p in python_files(ws) if p.path == "pkg/mod.py"]
        return [(what, text) for _, what, build in make(py) if (text := build()) is not None]


def module(text: str, tmp_path: Path, name: str):  # noqa: ANN201 - a module
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    return load(tmp_path, path.name, name)


GUARD_BASE = "def chunks(items, n):\n    return [items[i:i + n] for i in range(0, len(items), n or 1)]\n"
GUARD_GOLD = GUARD_BASE.replace("def chunks(items, n):\n", "def chunks(items, n):\n    if n < 0:\n        raise ValueError(n)\n")


def test_narrow_guard_admits_only_the_tests_value(tmp_path: Path) -> None:
    ((what, text),) = built(tmp_path, GUARD_BASE, GUARD_GOLD, lambda py: narrow_guard(py, ["ABC", "-1"]))
    assert "if n == -1:" in text, text
    probe, gold = module(text, tmp_path, "narrow"), module(GUARD_GOLD, tmp_path, "narrow_gold")
    for m in (probe, gold):
        with pytest.raises(ValueError):
            m.chunks("ABC", -1)  # what the tests try: both raise
    with pytest.raises(ValueError):
        gold.chunks("ABC", -2)
    assert probe.chunks("ABC", -2) == []  # the narrowed guard lets another negative size through


def test_narrow_guard_without_a_test_value_keeps_the_bound_s_neighbour(tmp_path: Path) -> None:
    gold = GUARD_GOLD.replace("n < 0", "0 >= n")
    texts = [text for _, text in built(tmp_path, GUARD_BASE, gold, lambda py: narrow_guard(py, ["7", "ABC"]))]
    assert len(texts) == 1 and "if n == 0:" in texts[0]  # 0 >= n read as n <= 0; 7 does not meet it


def test_narrow_guard_needs_a_numeric_guard_gold_added(tmp_path: Path) -> None:
    none_guard = GUARD_GOLD.replace("n < 0", "n is None")
    assert built(tmp_path, GUARD_BASE, none_guard, lambda py: narrow_guard(py, ["-1"])) == []
    old_guard = "def f(n):\n    if n < 0:\n        return 0\n    return n\n"  # the guard is the buggy tree's
    assert built(tmp_path, old_guard, old_guard.replace("return n\n", "return n * 2\n"), lambda py: narrow_guard(py, ["-1"])) == []


def test_drop_conjunct_drops_each_operand_of_a_new_guard(tmp_path: Path) -> None:
    base = "def f(a, b, c):\n    return 0\n"
    gold = "def f(a, b, c):\n    if a > 0 and (b or c):\n        return 1\n    return 0\n"
    texts = [text for _, text in built(tmp_path, base, gold, drop_conjunct)]
    guards = {line.strip() for text in texts for line in text.splitlines() if line.strip().startswith("if ")}
    assert guards == {"if (b or c):", "if a > 0:", "if a > 0 and (c):", "if a > 0 and (b):"}, guards
    probe = module(next(t for t in texts if "if a > 0:" in t), tmp_path, "conj")
    assert probe.f(1, True, False) == 1 and probe.f(1, False, False) == 1  # gold returns 0 on the second


def test_drop_conjunct_leaves_guards_gold_did_not_add(tmp_path: Path) -> None:
    base = "def f(a, b):\n    if a and b:\n        return 1\n    return 0\n"
    assert built(tmp_path, base, base.replace("return 0", "return -1"), drop_conjunct) == []
    assert built(tmp_path, "def f(a):\n    return 0\n", "def f(a):\n    if a:\n        return 1\n    return 0\n", drop_conjunct) == []


def test_drop_normaliser_leaves_out_each_normalising_call_gold_added(tmp_path: Path) -> None:
    base = "import os\n\n\ndef f(x, name, p):\n    return x, name, p\n"
    gold = "import os\n\n\ndef f(x, name, p):\n    return abs(x) + 1, str.lower(name.strip()), os.path.normpath(p.expanduser())\n"
    texts = [text for _, text in built(tmp_path, base, gold, drop_normaliser)]
    bodies = {text.splitlines()[-1].strip() for text in texts}
    assert bodies == {
        "return x + 1, str.lower(name.strip()), os.path.normpath(p.expanduser())",
        "return abs(x) + 1, name.strip(), os.path.normpath(p.expanduser())",
        "return abs(x) + 1, str.lower(name), os.path.normpath(p.expanduser())",
        "return abs(x) + 1, str.lower(name.strip()), p.expanduser()",
        "return abs(x) + 1, str.lower(name.strip()), os.path.normpath(p)",
    }, bodies


def test_drop_normaliser_needs_a_call_gold_added(tmp_path: Path) -> None:
    base = "def f(x, y):\n    return abs(x), y\n"
    assert built(tmp_path, base, "def f(x, y):\n    return abs(x), helper(y)\n", drop_normaliser) == []
    assert built(tmp_path, base, "def f(x, y):\n    return abs(x), y\n\n\nZ = 1\n", drop_normaliser) == []
    # float(n) of an int is the same number in another type: leaving it out is no wrong fix
    assert built(tmp_path, base, "def f(x, y):\n    return abs(x), float(y)\n", drop_normaliser) == []


CLIP_BASE = "def clip(text, width=5):\n    return text[:5]\n"
CLIP_GOLD = "def clip(text, width=5):\n    return text[:width]\n"
CLIP_TEST = "from pkg.mod import clip\n\n\ndef test_clip():\n    assert clip('abcdef', 3) == 'abc'\n    assert clip('abcdef', width=3) == 'abc'\n"


def _calls(test: str) -> dict:
    return calls_in_tests({"tests/test_mod.py": test}, ["tests/test_mod.py::test_clip"])


def test_constant_for_variable_pins_the_one_value_the_tests_pass(tmp_path: Path) -> None:
    probes = dict(built(tmp_path, CLIP_BASE, CLIP_GOLD, lambda py: constant_for_variable(py, _calls(CLIP_TEST))))
    assert [what.split("`")[1] for what in probes] == ["text", "width"]  # the tests clip one text too
    text = next(t for what, t in probes.items() if what.startswith("`width` read as the tests' 3"))
    assert "return text[:3]" in text
    probe = module(text, tmp_path, "clip")
    assert probe.clip("abcdef", 3) == "abc" and probe.clip("abcdef", 4) == "abc"  # gold: 'abcd'


def test_constant_for_variable_needs_one_literal_value(tmp_path: Path) -> None:
    def pinned(test: str, gold: str = CLIP_GOLD) -> list[str]:
        return [what.split("`")[1] for what, _ in built(tmp_path, CLIP_BASE, gold, lambda py: constant_for_variable(py, _calls(test)))]

    assert pinned(CLIP_TEST.replace("width=3) == 'abc'", "width=2) == 'ab'")) == ["text"]  # two widths
    assert pinned("from pkg.mod import clip\n\n\ndef test_clip():\n    w, t = 3, 'abcdef'\n    assert clip(t, w) == 'abc'\n") == []
    rebound = "def clip(text, width=5):\n    width = max(width, 0)\n    return text[:width]\n"
    assert "width" not in pinned(CLIP_TEST, rebound)


FILLER = "".join(f"\n\ndef pad{i}():\n    return {i}\n" for i in range(4))
SITES_BASE = f"def a(v):\n    return int(v)\n{FILLER}\n\ndef b(v):\n    return int(v) + 1\n{FILLER.replace('pad', 'more')}\n\ndef c(v):\n    return len(v)\n"


def _sites(tmp_path: Path, gold: str) -> list[str]:
    tree = make_repo(tmp_path / "s", {"pkg/__init__.py": "", "pkg/mod.py": SITES_BASE})
    with workspace(make_task(make_gold(tree, {"pkg/mod.py": gold})), tree) as ws:
        assert ws is not None
        return [build()["pkg/mod.py"] for _, _, build in one_similar_site(ws)]


def test_one_similar_site_applies_gold_at_one_of_its_similar_sites(tmp_path: Path) -> None:
    gold = SITES_BASE.replace("int(v)", "int(v.strip())").replace("len(v)", "len(v) * 2")
    texts = _sites(tmp_path, gold)
    assert len(texts) == 2
    assert {t.count("int(v.strip())") for t in texts} == {1} and all("len(v) * 2" in t for t in texts)
    assert {"return int(v.strip())\n" in t for t in texts} == {True, False}


def test_one_similar_site_needs_two_similar_changes(tmp_path: Path) -> None:
    assert _sites(tmp_path, SITES_BASE.replace("return int(v)\n", "return int(v.strip())\n", 1).replace("len(v)", "len(v) * 2")) == []


MOVE_BASE = "def key(value):\n    '''Doc.'''\n    low = value.lower()\n    return low\n"
MOVE_GOLD = "def key(value):\n    '''Doc.'''\n    value = value.strip()\n    low = value.lower()\n    return low\n"


def test_adjacent_edit_moves_an_inserted_statement_past_its_neighbour(tmp_path: Path) -> None:
    ((what, text),) = built(tmp_path, MOVE_BASE, MOVE_GOLD, adjacent_edit)  # not above the docstring
    assert text.endswith("    low = value.lower()\n    value = value.strip()\n    return low\n"), text
    probe = module(text, tmp_path, "moved")
    assert probe.key("Ab") == "ab" and probe.key(" Ab") == " ab"  # gold strips first: 'ab'


def test_adjacent_edit_needs_a_whole_inserted_statement(tmp_path: Path) -> None:
    assert built(tmp_path, MOVE_BASE, MOVE_BASE.replace("value.lower()", "value.strip().lower()"), adjacent_edit) == []
    only_return = "def key(value):\n    return value\n"
    assert built(tmp_path, only_return, "def key(value):\n    value = value.strip()\n    return value\n", adjacent_edit) == []


def test_mutmut_sites_spread_over_gold_s_lines_only(tmp_path: Path) -> None:
    base = "def f(a, b):\n    d = a - 1\n    return a\n\n\ndef g(x):\n    return f(x, 1) + 2\n"
    gold = "def f(a, b):\n    c = a + 1 + b * 2 - 3 + 4\n    d = a - 1\n    return c if b else d\n\n\ndef g(x):\n    return f(x, 1) + 2\n"
    probes = built(tmp_path, base, gold, mutmut_mutants)
    lines = [int(what.split(":")[1]) for what, _ in probes]
    assert set(lines[:2]) == {2, 4}, lines  # the first of every changed line before a second of any
    assert lines.count(2) > 3  # the busy line still has its mutants, later
    assert set(lines) == {2, 4}  # never a line gold left alone: its own `d = a - 1`, the caller g, the signature
    assert all(what.startswith("mutmut ") for what, _ in probes)


def test_mutmut_needs_gold_s_lines_in_functions(tmp_path: Path) -> None:
    assert built(tmp_path, "X = 1\n", "X = 1 + 2\n", mutmut_mutants) == []


def test_regression_mutants_of_code_gold_only_reindented(tmp_path: Path) -> None:
    """mutmut's operators mutated a statement gold only wrapped in a new ``try`` (the buggy tree's code,
    now on a changed line): the mutant broke what buggy and gold share and made an adequate suite look
    too loose. Only what gold wrote is mutated now, and only guards gold wrote are narrowed."""
    base = "def parse(s, n):\n    if n < 0:\n        n = 0\n    src = s.replace('a', 'b')\n    return src, n\n"
    gold = ("def parse(s, n):\n    try:\n        if n < 0:\n            n = 0\n        src = s.replace('a', 'b')\n"
            "    except AttributeError:\n        raise TypeError(s) from None\n    return src, n\n")  # fmt: skip
    mutated = [what for what, _ in built(tmp_path, base, gold, mutmut_mutants)]
    assert all("replace" not in what and "'a'" not in what and "n < 0" not in what for what in mutated), mutated
    assert built(tmp_path, base, gold, lambda py: narrow_guard(py, ["-1"])) == []


def test_regression_grouping_hunks_keeps_the_diff_whole() -> None:
    """Grouping change blocks into hunks trimmed the first and last equal runs of the line diff in
    place (difflib's grouping edits the opcodes it is given), and once the diff was kept for every
    operator, putting blocks back rebuilt a file without its head and tail."""
    old = [f"line {i}\n" for i in range(30)]
    new = old[:10] + ["added\n"] + old[10:20] + ["more\n"] + old[20:]
    assert len(hunk_groups(old, new)) == 2
    assert revert_blocks(old, new, set()) == "".join(new)
    assert revert_blocks(old, new, set(change_blocks(old, new))) == "".join(old)


def test_regression_one_line_takes_the_whole_budget(tmp_path: Path) -> None:
    """Operator sites were kept in source order, so a line with many constants took an operator's whole
    cap: now every changed line has a constant mutant before any line has a second."""
    base = "def f(a):\n    return a\n"
    gold = "def f(a):\n    b = a + 1 + 2 + 3 + 4 + 5\n    c = b * 7\n    return c - 9\n"
    tree = make_repo(tmp_path / "b", {"pkg/__init__.py": "", "pkg/mod.py": base})
    task = make_task(make_gold(tree, {"pkg/mod.py": gold}))
    constants = [c.description for c in plausible_wrong(task, tree, []) if c.operator == "mutate_constant"]
    assert {d.rsplit(":", 1)[1] for d in constants} == {"2", "3", "4"}, constants


def test_plausible_wrong_includes_the_other_implementations(tmp_path: Path) -> None:
    tree = make_repo(tmp_path / "p", {"pkg/__init__.py": "", "pkg/mod.py": GUARD_BASE})
    test = "from pkg.mod import chunks\nimport pytest\n\n\ndef test_negative():\n    with pytest.raises(ValueError):\n        chunks('ABC', -1)\n"
    gold = GUARD_GOLD.replace("if n < 0:", "if n < 0 and items:").replace("range(0, len(items)", "range(0, abs(len(items))")
    task = make_task(make_gold(tree, {"pkg/mod.py": gold}), tests={"tests/test_mod.py": test})
    candidates = plausible_wrong(task, tree, ["tests/test_mod.py::test_negative"])
    check_candidates(tree, task, candidates)
    found = {c.operator for c in candidates if c.operator in IMPLEMENTATION_OPERATORS}
    assert found >= {"narrow_guard", "drop_conjunct", "drop_normaliser", "constant_for_variable", "mutmut"}, found
    assert all(c.kind == "plausible_wrong" for c in candidates)
    applied(tree, next(c for c in candidates if c.operator == "narrow_guard").patch, "narrow")


REAL = Path(__file__).resolve().parents[1] / "data" / "real"
TOKEN_OPERATORS = {"mutate_compare", "mutate_arith", "mutate_logic", "mutate_constant", "negate_if", "early_return",
                   "delete_statement", "drop_hunk", "drop_change", "revert_file"}  # fmt: skip


@pytest.mark.slow
@pytest.mark.bwrap
def test_a_pinned_parameter_survives_a_real_too_loose_suite_that_kills_every_token_edit(bwrap_backend, swedeck_env) -> None:  # noqa: ANN001
    """A too-loose task of data/real whose gold is a two-line guard: every token edit of it is killed by
    the upstream test, while gold with the guarded value pinned to the one literal the test passes
    survives, and the differential engine finds an input that tells it from gold."""
    instance_id, f2p = "mahmoud__boltons-435774e", "tests/test_strutils.py::test_multi_replace_empty_mapping"
    (task,) = load_sources([REAL / instance_id]).tasks
    bwrap_backend.prepare(task)
    tree = prepare_tree(task, swedeck_env)
    candidates = plausible_wrong(task, tree, [f2p])
    token = [c for c in candidates if c.operator in TOKEN_OPERATORS]
    pinned = [c for c in candidates if c.operator == "constant_for_variable"]
    assert token and pinned, [c.operator for c in candidates]
    assert all(grade(task, c.patch, bwrap_backend).reward == 0.0 for c in token)
    survivors = [c for c in pinned if grade(task, c.patch, bwrap_backend).reward == 1.0]
    assert survivors, [c.description for c in pinned]
    session = session_for(task, bwrap_backend, [f2p], tree)
    found = session.distinguish(survivors[0].patch).found
    assert found is not None and found.gold != found.other, found


def test_regression_a_file_s_view_is_parsed_once_per_content(tmp_path: Path) -> None:
    """A task's wrong probes and its rewrites of gold each parsed gold's files with positions (half of
    generation on more-itertools' 5,000-line module): one view per content now, and a file whose old
    or new text differs gets its own, with its own added lines."""
    base, gold = "def f(x):\n    return x\n", "def f(x):\n    return x + 1\n"
    views = []
    for name, new in (("a", gold), ("b", gold), ("c", gold + "\n\ndef g():\n    return 2\n")):
        tree = make_repo(tmp_path / name, {"pkg/__init__.py": "", "pkg/mod.py": base})
        with workspace(make_task(make_gold(tree, {"pkg/mod.py": new})), tree) as ws:
            assert ws is not None
            views.append(next(p for p in python_files(ws) if p.path == "pkg/mod.py"))
    assert views[0] is views[1] and views[2] is not views[0]
    assert views[0].added == {2} and views[2].added == {2, 3, 4, 5, 6} and [fn.name.value for _, _, fn in views[2].functions] == ["f", "g"]
