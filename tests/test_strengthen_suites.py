"""Strengthening on real test suites (bwrap): three small libraries, each with a planted too-loose
FAIL_TO_PASS test in one of the styles real suites use, a shortcut patch that passes it, and the
input that tells the shortcut from gold. Strengthening must add a test in the suite's own style that
kills the shortcut while gold passes, each validated by the one grader:

* ``units``: a ``parametrize`` list with ids checks 0 and 1024 bytes; the shortcut fixes only the
  first unit boundary, so 1 MiB still prints as ``1024.0 KiB``. The fix is a new case of that list.
* ``stock``: a fixture-based test takes all of an item; the shortcut drops the check that taking
  more than there is raises. Taking too much also raises on the buggy tree, so the new function
  (which takes the fixture) runs the original test's check first.
* ``slugs``: a unittest class whose setUp gives the separator; the shortcut collapses only double
  spaces. The fix is a method of the class, run with its setUp.

The distinguishing inputs are written here as the differential engine states them; each shortcut is
graded first, so it is a real survivor of the original suite. End to end (slow), the differential
engine (``probes.differential.session_for``, with the observation engine) finds the input itself on
planted suites of each style, and strengthening turns it into a test that kills the shortcut.
``swedeck curate`` over one of these folders is tested in tests/test_model_free.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import sampled

from curation.decks import strengthened_task
from curation.pipeline1 import Pipeline1Config, process_task
from curation.sources import find_task
from harness.grading.diffs import file_diff
from harness.sandboxes.envs import prepare_tree
from harness.grading.grader import grade
from harness.records import Behaviour, DistinguishingInput, ProbeResult, Status
from judge.strengthen import strengthen

SUITES = {
    "units": {
        "issue": "format_size(1024) prints '1024 B'; a size of exactly one unit should move up to that unit, at every unit.\n",
        "lib": ("units.py", '''\
UNITS = ("B", "KiB", "MiB", "GiB")


def format_size(n):
    if n <= 1024:
        return f"{n} B"
    value = float(n)
    for unit in UNITS[1:]:
        value /= 1024
        if value <= 1024 or unit == UNITS[-1]:
            return f"{value:.1f} {unit}"
'''),
        "gold": [("if n <= 1024:", "if n < 1024:"), ("if value <= 1024 or", "if value < 1024 or")],
        "shortcut": [("if n <= 1024:", "if n < 1024:")],
        "tests": ("tests/test_units.py", '''\
import pytest

import units


def test_small():
    assert units.format_size(10) == "10 B"


@pytest.mark.parametrize(
    "n, expected",
    [
        (0, "0 B"),
        (1024, "1.0 KiB"),
    ],
    ids=["zero", "one-kib"],
)
def test_format_size(n, expected):
    assert units.format_size(n) == expected
'''),
        "f2p": ["tests/test_units.py::test_format_size[one-kib]"],
        "input": ("tests/test_units.py::test_format_size[one-kib]", "units.format_size(1048576)", "'1.0 MiB'", "'1024.0 KiB'"),
    },
    "stock": {
        "issue": "Stock.take raises when taking exactly what is left; it should leave zero, and raise only when taking more than there is.\n",
        "lib": ("stock.py", '''\
class Stock:
    def __init__(self, items):
        self.items = dict(items)

    def take(self, name, n):
        have = self.items.get(name, 0)
        if n >= have:
            raise ValueError(f"only {have} {name} left")
        self.items[name] = have - n
        return self.items[name]
'''),
        "gold": [("if n >= have:", "if n > have:")],
        "shortcut": [("        if n >= have:\n            raise ValueError(f\"only {have} {name} left\")\n", "")],
        "tests": ("tests/test_stock.py", '''\
import pytest

import stock


@pytest.fixture
def shelf():
    return stock.Stock({"apple": 3, "pear": 1})


def test_take_some(shelf):
    assert shelf.take("apple", 1) == 2


def test_take_all(shelf):
    assert shelf.take("apple", 3) == 0
'''),
        "f2p": ["tests/test_stock.py::test_take_all"],
        "input": ("tests/test_stock.py::test_take_all", "shelf.take('apple', 4)", "raise:ValueError", "-1"),
    },
    "slugs": {
        "issue": "slugify('a  b', '-') gives 'a--b': runs of whitespace should become one separator.\n",
        "lib": ("slugs.py", '''\
def slugify(text, sep):
    return text.strip().replace(" ", sep)
'''),
        "gold": [("    return text.strip().replace(\" \", sep)\n", "    return sep.join(text.split())\n")],
        "shortcut": [("text.strip().replace(\" \", sep)", "text.strip().replace(\"  \", \" \").replace(\" \", sep)")],
        "tests": ("tests/test_slugs.py", '''\
import unittest

import slugs


class SlugTests(unittest.TestCase):
    def setUp(self):
        self.sep = "-"

    def test_single(self):
        self.assertEqual(slugs.slugify("a b", self.sep), "a-b")

    def test_collapses_runs(self):
        self.assertEqual(slugs.slugify("a  b", self.sep), "a-b")
'''),
        "f2p": ["tests/test_slugs.py::SlugTests::test_collapses_runs"],
        "input": ("tests/test_slugs.py::SlugTests::test_collapses_runs", "slugs.slugify('a   b', self.sep)", "'a-b'", "'a--b'"),
    },
}


def _edit(text: str, edits: list[tuple[str, str]]) -> str:
    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    return text


def task_folder(root: Path, name: str) -> Path:
    """A local task folder: the library at the buggy commit, its tests patch adding the planted test
    (the file's other tests pass on both trees) and the gold patch."""
    suite = SUITES[name]
    lib_path, lib = suite["lib"]
    test_path, tests = suite["tests"]
    folder = root / f"local__{name}-1"
    (folder / "repo").mkdir(parents=True)
    (folder / "repo" / lib_path).write_text(lib)
    (folder / "task.toml").write_text(f'instance_id = "local__{name}-1"\ntest_cmd = ["python -m pytest {test_path}"]\n\n'
                                      '[environment]\nworkdir = "/testbed"\n\n[environment.recipe]\ninstall = []\n')  # fmt: skip
    (folder / "issue.md").write_text(suite["issue"])
    (folder / "gold.patch").write_text(file_diff(lib_path, lib, _edit(lib, suite["gold"])))
    (folder / "tests.patch").write_text(file_diff(test_path, None, tests))
    return folder


def shortcut(name: str) -> str:
    lib_path, lib = SUITES[name]["lib"]
    return file_diff(lib_path, lib, _edit(lib, SUITES[name]["shortcut"]))


def survivor(name: str, task_hash: str, patch: str) -> ProbeResult:
    test_id, call, gold, other = SUITES[name]["input"]

    def behaviour(spec: str) -> Behaviour:
        return Behaviour(raised=spec.removeprefix("raise:")) if spec.startswith("raise:") else Behaviour(value=spec)

    d = DistinguishingInput(test_id=test_id, how="hand-written, as the engine states it", setup=[], call=call,
                            gold=behaviour(gold), other=behaviour(other), literal="" if gold.startswith("raise:") else gold)  # fmt: skip
    return ProbeResult(config_hash="test", task_hash=task_hash, instance_id=f"local__{name}-1", probe_id=f"shortcut-{name}",
                       kind="plausible_wrong", origin="model_free", operator="shortcut", description="hand-written shortcut",
                       patch=patch, reward=1.0, reason="ok", selected_reward=None, executions=0, differing=[], log_path="",
                       distinguishing=d)  # fmt: skip


@pytest.mark.bwrap
@pytest.mark.parametrize("name", sampled(list(SUITES), {"units"}))  # about 90 s each on a loaded machine
def test_strengthening_adds_a_test_in_the_suites_style_that_kills_the_shortcut(name: str, bwrap_backend, swedeck_env, tmp_path: Path) -> None:  # noqa: ANN001
    backend = bwrap_backend
    task = find_task(f"local__{name}-1", [task_folder(tmp_path / "tasks", name)])
    p1 = process_task(task, backend, Pipeline1Config(runs=1), "test", tmp_path)
    assert (p1.decision, p1.fail_to_pass) == ("keep", SUITES[name]["f2p"]), p1.detail
    patch = shortcut(name)
    assert grade(task, patch, backend).reward == 1.0  # the planted test is too loose: the shortcut passes it
    stamp = {"config_hash": "test", "task_hash": task.task_hash(), "instance_id": task.instance_id}
    record = strengthen(task, p1, [survivor(name, task.task_hash(), patch)], backend, stamp, prepare_tree(task, swedeck_env),
                        gold_runs=2, log_dir=tmp_path / "logs")  # fmt: skip
    assert record.status == "repaired" and record.killed == [f"shortcut-{name}"], record.reason
    # the survivor's tests (the footprint's, which need not kill it, are tested in tests/test_footprint.py)
    from_survivor = [t for t in record.tests if not t.found_by.startswith("the fix's footprint")]
    (kept,) = [t for t in from_survivor if not t.rejected_at]
    if name == "units":  # a new case of the parametrized test, in its list and its ids
        case = kept.test_id.rpartition("[")[2].rstrip("]")
        assert kept.test_id == f"tests/test_units.py::test_format_size[{case}]" and case.startswith("strengthened_")
        assert kept.code == f"pytest.param(1048576, '1.0 MiB', id={case!r})" and [t.rejected_at for t in from_survivor] == [""]
    elif name == "stock":  # a function taking the fixture, after the original check (the buggy tree raises too)
        assert kept.code.splitlines()[0].endswith("(shelf):") and kept.test_id.startswith("tests/test_stock.py::test_strengthened_")
        assert kept.code.splitlines()[2:] == ['    assert shelf.take("apple", 3) == 0', "    with pytest.raises(ValueError):",
                                             "        shelf.take('apple', 4)"]  # fmt: skip
        assert [t.rejected_at for t in from_survivor] == ["fails_on_buggy", ""]
    else:  # a method of the unittest class, with its setUp
        assert kept.test_id.startswith("tests/test_slugs.py::SlugTests::test_strengthened_")
        lines = kept.code.splitlines()
        assert lines[2] == "    self.assertEqual(slugs.slugify('a   b', self.sep), 'a-b')", kept.code
        # then gold's behaviour on neighbours of the input that the buggy tree or the shortcut gets wrong
        assert "neighbours" in kept.found_by and all(line.startswith("    self.assertEqual(slugs.slugify(") for line in lines[3:]), kept.code
    strong = strengthened_task(task, record)
    expected = {k: Status(v) for k, v in record.expected_status.items()}
    assert grade(strong, task.answer.gold_patch, backend, expected=expected).reward == 1.0
    assert grade(strong, patch, backend, expected=expected).reward == 0.0
    assert grade(strong, "", backend, expected=expected).statuses[kept.test_id] == Status.FAILED


# the fixture style of tests/test_observe.py, with a bug its hidden test fails on (deque's maxlen=-1
# raises ValueError on the buggy tree too, so Pipeline 1 finds no FAIL_TO_PASS test there) and an
# assertion for Pipeline 1 to bind (a pytest.raises block alone has none)
TAIL = """
def tail(n, items):
    return list(items)[-n:] if n else []
"""
TAIL_CASE = (
    "seqs.py", TAIL, TAIL.replace("    return list", "    if n < 0:\n        raise ValueError('n must be at least 0')\n    return list"),
    TAIL.replace("    return list", "    if n <= 0:\n        raise ValueError('n must be at least 0')\n    return list"),
    {"tests/test_seqs.py": "import pytest\nfrom seqs import tail\n\n\n@pytest.fixture\ndef letters():\n    return list('ABCDEFG')\n\n\n"
                           "def test_tail(letters):\n    assert tail(3, letters) == ['E', 'F', 'G']\n"},
    "tests/test_seqs.py\nimport pytest\nfrom seqs import tail\n\n\n@pytest.fixture\ndef letters():\n    return list('ABCDEFG')\n\n\n"
    "def test_tail(letters):\n    assert tail(3, letters) == ['E', 'F', 'G']\n\n\n"
    "def test_negative(letters):\n    with pytest.raises(ValueError) as info:\n        tail(-1, letters)\n    assert 'at least' in str(info.value)\n",
    "tail(-1, items) should raise ValueError", "tests/test_seqs.py::test_negative",
)  # fmt: skip


@pytest.mark.slow
@pytest.mark.bwrap
@pytest.mark.parametrize("style", ["parametrized", "fixture", "unittest"])
def test_the_engines_input_strengthens_a_too_loose_suite_end_to_end(style: str, bwrap_backend, swedeck_env, tmp_path: Path) -> None:  # noqa: ANN001
    """Probe -> differential engine -> strengthening, on the observation engine's own planted suites
    (tests/test_observe.py): the input it confirms for the shortcut becomes a test that kills it."""
    from test_observe import CASES, diff, make_task

    from probes.differential import session_for

    path, buggy, gold, cut, tests, hidden, issue, f2p = CASES[style] if style != "fixture" else TAIL_CASE
    task = make_task(tmp_path, f"observe-{style}", path, buggy, gold, tests, hidden, issue)
    backend = bwrap_backend
    p1 = process_task(task, backend, Pipeline1Config(runs=1), "test", tmp_path)
    assert (p1.decision, p1.fail_to_pass) == ("keep", [f2p]), p1.detail
    patch = diff(path, buggy, cut)
    assert grade(task, patch, backend).reward == 1.0
    tree = prepare_tree(task, swedeck_env)
    found = session_for(task, backend, p1.fail_to_pass, tree).distinguish(patch).found
    assert found is not None
    probe = survivor("units", task.task_hash(), patch).model_copy(update={"instance_id": task.instance_id, "distinguishing": found})
    stamp = {"config_hash": "test", "task_hash": task.task_hash(), "instance_id": task.instance_id}
    record = strengthen(task, p1, [probe], backend, stamp, tree, gold_runs=2, log_dir=tmp_path / "logs")
    assert record.status == "repaired", (record.reason, found, [(t.test_id, t.rejected_at, t.code) for t in record.tests])
    kept = [t for t in record.tests if not t.rejected_at]
    shape = {"parametrized": "::test_human[strengthened_", "fixture": "tests/test_seqs.py::test_strengthened_",
             "unittest": "tests/test_comments.py::CommentTests::test_strengthened_"}[style]  # fmt: skip
    # the input in the suite's style; a new parametrize case may get a function with the input's neighbours beside it
    # (and the footprint's own tests)
    (styled,) = [t for t in kept if shape in t.test_id]
    assert all(t is styled or "neighbours" in t.found_by or t.found_by.startswith("the fix's footprint") for t in kept), [(t.test_id, t.code) for t in kept]
    strong = strengthened_task(task, record)
    expected = {k: Status(v) for k, v in record.expected_status.items()}
    assert grade(strong, task.answer.gold_patch, backend, expected=expected).reward == 1.0
    assert grade(strong, patch, backend, expected=expected).reward == 0.0
