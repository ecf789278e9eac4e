"""Tests for curation.assertions and the swedeck_assertions pytest plugin.

The sample-corpus tests build each kept task's buggy and gold trees, really run the task's tests with the
plugin loaded, and require the binding assertions to equal the labels exactly. The plugin tests run
pytest on small scratch projects; the pure functions are checked on hand-written sources and logs.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest
from conftest import sampled

from curation.assertion_sites import Site, assertion_sites, normalise, source_hash
from curation.assertions import (
    SiteOutcome,
    Event,
    assertion_outcomes,
    binding_assertions,
    binding_keys,
    location,
    parse_events,
    record_key,
    records_for_run,
)
from harness import records as rec
from harness.grading.parsers import parse_junit
from harness.records import Status

ROOT = Path(__file__).resolve().parents[1]
PLUGIN_DIR = ROOT / "harness" / "grading" / "plugins"
SAMPLE = ROOT / "data" / "sample"
LABELS = tomllib.loads((SAMPLE / "labels.toml").read_text())["tasks"]
KEPT = sorted(name for name, label in LABELS.items() if label["p1_decision"] == "keep" and label["binding_asserts"])


# ------------------------------------------------------------------------------------------ running pytest


def instrumented_env(log: Path | None, extra_addopts: str = "") -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "SWEDECK_"))}
    env["PYTHONPATH"] = str(PLUGIN_DIR)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    addopts = "-p no:cacheprovider"
    if log is not None:
        addopts += " -p swedeck_assertions -o enable_assertion_pass_hook=true"
        env["SWEDECK_ASSERT_LOG"] = str(log)
    env["PYTEST_ADDOPTS"] = f"{addopts} {extra_addopts}".strip()
    return env


def run_pytest(tree: Path, argv: list[str], log: Path | None) -> dict[str, Status]:
    """Run ``argv`` (a pytest command line) in ``tree`` and return the JUnit statuses."""
    junit = tree.parent / f"{tree.name}-{len(list(tree.parent.glob('*.xml')))}.xml"
    if argv[:1] in (["python"], ["python3"]):
        argv = [sys.executable, *argv[1:]]
    env = instrumented_env(log, f"-o junit_family=xunit1 --junitxml={junit}")
    proc = subprocess.run(argv, cwd=tree, env=env, capture_output=True, text=True, timeout=300)
    assert junit.exists(), f"pytest wrote no JUnit report:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return parse_junit(junit.read_text())


def build_tree(task_dir: Path, dest: Path, *, gold: bool) -> Path:
    task = tomllib.loads((task_dir / "task.toml").read_text())
    source = task.get("repo_source", {"kind": "files"})
    if source["kind"] == "bundle":
        subprocess.run(["git", "clone", "-q", str(task_dir / source["path"]), str(dest)], check=True)
        subprocess.run(["git", "checkout", "-q", source["ref"]], cwd=dest, check=True)
    else:
        shutil.copytree(task_dir / "repo", dest)
        # its own repository, so that `git apply` cannot resolve paths against an enclosing one
        subprocess.run(["git", "init", "-q"], cwd=dest, check=True)
    for patch in (["gold.patch"] if gold else []) + ["tests.patch"]:
        subprocess.run(["git", "apply", str(task_dir / patch)], cwd=dest, check=True)
    return dest


def run_tree(task_dir: Path, tree: Path) -> tuple[dict[str, Status], list[Event], list[Site]]:
    task = tomllib.loads((task_dir / "task.toml").read_text())
    log = tree.parent / f"{tree.name}.jsonl"
    statuses: dict[str, Status] = {}
    test_files: set[str] = set()
    for command in task["test_cmd"]:
        argv = shlex.split(command)
        test_files |= {a for a in argv if a.endswith(".py")}
        statuses |= run_pytest(tree, argv, log)
    events = parse_events(log.read_text() if log.exists() else "")
    files = test_files | {e.file for e in events if (tree / e.file).is_file()}
    sites = [s for f in sorted(files) for s in assertion_sites((tree / f).read_text(), f)]
    return statuses, events, sites


# ------------------------------------------------------------------------------------------ the sample corpus


@pytest.mark.parametrize("name", sampled(KEPT, {"sample__jsonptr-1", "sample__iniparse-1", "sample__moneyfmt-1"}))
def test_binding_assertions_match_labels(name: str, tmp_path: Path) -> None:
    task_dir = SAMPLE / name
    label = LABELS[name]
    buggy_statuses, buggy_events, buggy_sites = run_tree(task_dir, build_tree(task_dir, tmp_path / "buggy", gold=False))
    gold_statuses, gold_events, gold_sites = run_tree(task_dir, build_tree(task_dir, tmp_path / "gold", gold=True))

    f2p = {t for t, s in gold_statuses.items() if s == Status.PASSED and buggy_statuses.get(t) != Status.PASSED}
    assert f2p == set(label["fail_to_pass"])

    # the plugin and tree-sitter agree on every assertion the events name
    for events, sites in ((buggy_events, buggy_sites), (gold_events, gold_sites)):
        known = {(s.file, s.line): s.source for s in sites}
        for event in events:
            assert known.get((event.file, event.line)) == event.source, event

    buggy = assertion_outcomes(buggy_events, buggy_sites, buggy_statuses)
    gold = assertion_outcomes(gold_events, gold_sites, gold_statuses)
    binding = binding_assertions(buggy, gold, f2p)
    assert {location(r) for r in binding} == set(label["binding_asserts"])
    # every gold record of a FAIL_TO_PASS test is keyed identically on buggy, or is a helper site
    # that the buggy run never reached
    buggy_keys = {record_key(r) for r in buggy}
    assert all(
        r.qualname and record_key(r) in buggy_keys for r in gold if r.test_id in f2p and r.assert_file == r.test_file
    )


# ------------------------------------------------------------------------------------------ assertion_sites

SOURCE = """\
import unittest
import pytest

assert SETTING, "module level"


def _check(values):
    for v in values:
        assert v > 0
    for v in values:
        assert v > 0


def test_loop():
    for i in range(3):
        assert i >= 0
    assert (1 ==
            1), "two lines"
    assert 2 == \\
        2
    with pytest.raises(ValueError):
        int("x")
    pytest.raises(ValueError, int, "x")
    mock.assert_called_once()
    assert_resolves({}, "")

    def inner():
        assert True
    inner()


class TestThing(unittest.TestCase):
    def test_a(self):
        self.assertEqual(
            [1], [1])
        self.assertEqual([1], [1])
        with self.assertRaises(KeyError) as cm:
            {}["x"]
        self.fail("never")
        other.assertEqual(1, 1)

    @pytest.mark.skip
    def test_b(self):
        self.assertTrue(True)
"""


def test_assertion_sites_kinds_lines_and_qualnames() -> None:
    sites = assertion_sites(SOURCE, "tests/test_x.py")
    got = [(s.line, s.end_line, s.qualname, s.kind, s.occurrence) for s in sites]
    assert got == [
        (4, 4, "<module>", "assert", 0),
        (9, 9, "_check", "assert", 0),
        (11, 11, "_check", "assert", 1),
        (16, 16, "test_loop", "assert", 0),
        (17, 18, "test_loop", "assert", 0),
        (19, 20, "test_loop", "assert", 0),
        (21, 21, "test_loop", "raises", 0),
        (23, 23, "test_loop", "raises", 0),
        (28, 28, "test_loop.<locals>.inner", "assert", 0),
        (34, 35, "TestThing.test_a", "unittest", 0),
        (36, 36, "TestThing.test_a", "unittest", 1),
        (37, 37, "TestThing.test_a", "unittest", 0),
        (39, 39, "TestThing.test_a", "unittest", 0),
        (44, 44, "TestThing.test_b", "unittest", 0),
    ]
    by_line = {s.line: s for s in sites}
    assert by_line[17].source == 'assert (1 == 1), "two lines"'
    assert by_line[19].source == "assert 2 == 2"
    assert by_line[34].source == by_line[36].source == "self.assertEqual([1], [1])"
    assert by_line[34].source_hash == source_hash("self.assertEqual([1], [1])") == by_line[36].source_hash
    assert len(by_line[34].source_hash) == 12
    assert by_line[37].source == "self.assertRaises(KeyError)"


def test_assertion_sites_survive_syntax_errors() -> None:
    sites = assertion_sites("def broken(:\n    pass\n\n\ndef test_a():\n    assert y\n", "t.py")
    assert [(s.line, s.qualname, s.source) for s in sites] == [(6, "test_a", "assert y")]


@pytest.fixture
def plugin(monkeypatch: pytest.MonkeyPatch):  # noqa: ANN201
    """A copy of the assertion plugin loaded as its own module, with no log to write (its helper
    modules imported afresh from its folder)."""
    import importlib.util

    monkeypatch.delenv("SWEDECK_ASSERT_LOG", raising=False)
    monkeypatch.syspath_prepend(str(PLUGIN_DIR))
    for name in [m for m in sys.modules if m.startswith("swedeck_assertions")]:
        monkeypatch.delitem(sys.modules, name)
    spec = importlib.util.spec_from_file_location("_plugin_copy", PLUGIN_DIR / "swedeck_assertions.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_grader_knows_the_plugins_announcement(plugin) -> None:  # noqa: ANN001
    """The plugin travels alone into sandboxes, so the grader keeps its own copy of the line that says
    the tests ran instrumented; the two must be the same."""
    from harness.grading.reports import ASSERTIONS_LOADED

    assert plugin.ANNOUNCE == ASSERTIONS_LOADED.encode()


def test_normalise_matches_the_plugin(plugin) -> None:  # noqa: ANN001
    samples = {
        "assert  a ==\\\n    b,\t'm'": "assert a == b, 'm'",
        "self.assertEqual(\n    [1], [1])": "self.assertEqual([1], [1])",
        "assert f(x) == [\n    a,\n    b,\n]": "assert f(x) == [a, b,]",
        "assert (a\r\n   and b)": "assert (a and b)",
    }
    for text, expected in samples.items():
        assert normalise(text) == plugin.normalise(text) == expected


# ------------------------------------------------------------------------------------------ parse_events


def _line(nodeid: str, file: str, line: int, source: str, outcome: str) -> str:
    return json.dumps({"nodeid": nodeid, "file": file, "line": line, "source": source, "outcome": outcome})


def test_parse_events_tolerates_a_truncated_last_line() -> None:
    good = _line("t.py::test_a", "t.py", 3, "assert x", "passed")
    cut = _line("t.py::test_a", "t.py", 4, "assert y", "failed")[:25]
    events = parse_events(f"{good}\n{good}\n{cut}")
    assert events == [Event("t.py::test_a", "t.py", 3, "assert x", "passed")] * 2
    assert parse_events("") == []
    assert parse_events(f"{good}\n\n") == events[:1]


def test_parse_events_rejects_a_malformed_complete_line() -> None:
    good = _line("t.py::test_a", "t.py", 3, "assert x", "passed")
    with pytest.raises(ValueError, match="line 1"):
        parse_events(f'{{"nodeid": 1\n{good}\n')
    with pytest.raises(ValueError, match="line 2"):
        parse_events(f"{good}\n{_line('t.py::test_a', 't.py', 3, 'assert x', 'maybe')}\n")


# ------------------------------------------------------------------------------------------ assertion_outcomes

TEST_SOURCE = """\
from helpers import check


def test_loop():
    for i in range(3):
        assert i < 2
    assert "never"


def test_helper():
    check(1)
    assert True
"""

HELPER_SOURCE = """\
def check(x):
    assert x > 0
    assert x < 10
"""


def _sites() -> list[Site]:
    return assertion_sites(TEST_SOURCE, "tests/test_t.py") + assertion_sites(HELPER_SOURCE, "tests/helpers.py")


def _events(*rows: tuple[str, str, int, str]) -> list[Event]:
    sites = {(s.file, s.line): s.source for s in _sites()}
    return [
        Event(f"tests/test_t.py::{test}", file, line, sites.get((file, line), "assert z"), outcome)
        for test, file, line, outcome in rows
    ]  # type: ignore[arg-type]


def _table(records: list[SiteOutcome]) -> set[tuple[str, str, int, int, int, str]]:
    return {(r.test_id.split("::")[1], r.assert_file, r.line, r.passed, r.failed, r.status) for r in records}


def test_outcomes_count_loops_and_mark_unreached_sites() -> None:
    events = _events(
        ("test_loop", "tests/test_t.py", 6, "passed"),
        ("test_loop", "tests/test_t.py", 6, "passed"),
        ("test_loop", "tests/test_t.py", 6, "failed"),
        ("test_helper", "tests/helpers.py", 2, "passed"),
        ("test_helper", "tests/helpers.py", 3, "passed"),
        ("test_helper", "tests/test_t.py", 12, "passed"),
    )
    ids = ["tests/test_t.py::test_loop", "tests/test_t.py::test_helper", "tests/test_t.py::test_skipped"]
    records = assertion_outcomes(events, _sites(), ids)
    assert _table(records) == {
        ("test_loop", "tests/test_t.py", 6, 2, 1, "failed"),
        ("test_loop", "tests/test_t.py", 7, 0, 0, "not_reached"),
        ("test_helper", "tests/helpers.py", 2, 1, 0, "passed"),
        ("test_helper", "tests/helpers.py", 3, 1, 0, "passed"),
        ("test_helper", "tests/test_t.py", 12, 1, 0, "passed"),
    }
    helper = next(r for r in records if r.assert_file == "tests/helpers.py" and r.line == 2)
    assert helper.qualname == "check" and helper.test_file == "tests/test_t.py"
    assert helper.key == (
        "tests/test_t.py",
        "tests/test_t.py::test_helper",
        "tests/helpers.py",
        2,
        helper.source_hash,
        0,
    )


def test_outcomes_for_events_outside_known_sites_and_parametrised_ids() -> None:
    events = [
        Event("tests/test_t.py::test_loop[a::b-1]", "tests/test_t.py", 6, "assert i < 2", "passed"),
        Event("tests/test_t.py::test_loop[a::b-1]", "lib/other.py", 40, "assert ok", "failed"),
        Event("tests/test_t.py::test_loop[a::b-1]", "tests/test_t.py", 99, "assert_allclose(a, b)", "failed"),
    ]
    records = assertion_outcomes(events, _sites(), [])
    assert _table(records) == {
        ("test_loop[a", "tests/test_t.py", 6, 1, 0, "passed"),
        ("test_loop[a", "tests/test_t.py", 7, 0, 0, "not_reached"),
        ("test_loop[a", "lib/other.py", 40, 0, 1, "failed"),
        ("test_loop[a", "tests/test_t.py", 99, 0, 1, "failed"),
    }
    made = next(r for r in records if r.assert_file == "lib/other.py")
    assert made.source_hash == source_hash("assert ok") and made.kind == "assert"
    assert next(r.kind for r in records if r.line == 99) == "call"
    assert {r.qualname for r in records if r.line in (6, 7)} == {"test_loop"}


def test_outcomes_keep_pytest_raises_in_either_spelling_unless_left_out() -> None:
    source = "from pytest import raises\nimport pytest\n\ndef test_r():\n    with pytest.raises(E):\n        f()\n"
    source += "    raises(E, f)\n    other(E)\n"
    sites = assertion_sites(source, "t.py")
    assert [(s.kind, s.line, s.source) for s in sites] == [("raises", 5, "pytest.raises(E)"), ("raises", 7, "raises(E, f)")]
    events = [Event("t.py::test_r", "t.py", 7, "raises(E, f)", "failed")]
    records = assertion_outcomes(events, sites, ["t.py::test_r"])
    assert {(r.line, r.kind, r.status) for r in records} == {(5, "raises", "not_reached"), (7, "raises", "failed")}
    assert [r.line for r in assertion_outcomes([], sites, ["t.py::test_r"], kinds={"assert"})] == []


# ------------------------------------------------------------------------------------------ binding_assertions


def _record(test: str, line: int, status: str, file: str = "tests/test_t.py") -> SiteOutcome:
    return SiteOutcome(
        test_file="tests/test_t.py", test_id=f"tests/test_t.py::{test}", assert_file=file, line=line, end_line=line,
        qualname=test, kind="assert", source="assert x", source_hash=source_hash("assert x"), occurrence=0,
        passed=int(status == "passed"), failed=int(status == "failed"), status=status,  # type: ignore[arg-type]
    )  # fmt: skip


def test_binding_assertions() -> None:
    buggy = [
        _record("test_f", 1, "passed"),
        _record("test_f", 2, "failed"),
        _record("test_f", 3, "not_reached"),
        _record("test_p", 1, "failed"),
    ]
    gold = [
        _record("test_f", 1, "passed"),
        _record("test_f", 2, "passed"),
        _record("test_f", 3, "passed"),
        _record("test_f", 4, "passed", file="tests/helpers.py"),  # only reached on gold
        _record("test_f", 5, "failed"),
        _record("test_p", 1, "passed"),  # not a FAIL_TO_PASS test
    ]
    binding = binding_assertions(buggy, gold, {"tests/test_t.py::test_f"})
    assert [location(r) for r in binding] == ["tests/helpers.py:4", "tests/test_t.py:2", "tests/test_t.py:3"]
    assert binding_assertions(buggy, gold, set()) == []


def test_binding_raises_only_where_nothing_else_binds_boltons_c1c25da() -> None:
    """boltons c1c25da: the FAIL_TO_PASS test's assert passes on both trees and its only failing check
    on buggy is ``with raises(ValueError)`` (DID NOT RAISE); Pipeline 1 rejected it for no binding
    assertion while the plugin did not record pytest.raises."""
    f2p = {"tests/test_t.py::test_f"}

    def raises(line: int, status: str) -> SiteOutcome:
        return _record("test_f", line, status).model_copy(update={"kind": "raises", "source": "raises(ValueError)"})

    buggy = [_record("test_f", 1, "passed"), raises(2, "failed"), raises(3, "not_reached")]
    gold = [_record("test_f", 1, "passed"), raises(2, "passed"), raises(3, "passed")]
    assert [location(r) for r in binding_assertions(buggy, gold, f2p)] == ["tests/test_t.py:2", "tests/test_t.py:3"]
    # where an assert binds, the raises sites are left out: the labelled binding sites stay as they were
    buggy.append(_record("test_f", 4, "failed"))
    gold.append(_record("test_f", 4, "passed"))
    assert [location(r) for r in binding_assertions(buggy, gold, f2p)] == ["tests/test_t.py:4"]


def test_records_for_run_and_binding_keys_across_attempts() -> None:
    stamp = {"config_hash": "c", "task_hash": "t", "instance_id": "i"}
    sources = {"tests/test_t.py": TEST_SOURCE, "tests/helpers.py": HELPER_SOURCE}

    def trial(rows: list[tuple[str, str, int, str]], statuses: dict[str, Status]) -> rec.TestRun:
        log = "".join(_line(f"tests/test_t.py::{t}", f, n, "", o) + "\n" for t, f, n, o in rows)
        return rec.TestRun(
            instance_id="i", backend="local", outcome="ok", statuses=statuses, assert_events=log, test_sources=sources
        )

    ids = {"tests/test_t.py::test_loop": Status.FAILED, "tests/test_t.py::test_helper": Status.FAILED}
    buggy = trial([("test_helper", "tests/helpers.py", 2, "failed")], ids)
    passing = [
        ("test_loop", "tests/test_t.py", 6, "passed"),
        ("test_loop", "tests/test_t.py", 7, "passed"),
        ("test_helper", "tests/helpers.py", 2, "passed"),
        ("test_helper", "tests/helpers.py", 3, "passed"),
        ("test_helper", "tests/test_t.py", 12, "passed"),
    ]
    gold_ids = dict.fromkeys(ids, Status.PASSED)
    records = records_for_run(buggy, "buggy", 0, stamp) + records_for_run(trial(passing, gold_ids), "gold", 0, stamp)
    assert all(isinstance(r, rec.AssertionRecord) and r.instance_id == "i" for r in records)
    f2p = list(ids)
    expected = [
        "tests/helpers.py:2",
        "tests/helpers.py:3",
        "tests/test_t.py:12",
        "tests/test_t.py:6",
        "tests/test_t.py:7",
    ]
    assert binding_keys(records, f2p) == expected
    # a second gold run in which the helper's second assert fails: it no longer binds
    flaky = [row if row[1:3] != ("tests/helpers.py", 3) else (*row[:3], "failed") for row in passing]
    records += records_for_run(trial(flaky, gold_ids), "gold", 1, stamp)
    assert binding_keys(records, f2p) == [x for x in expected if x != "tests/helpers.py:3"]
    assert binding_keys([r for r in records if r.tree == "gold"], f2p) == []


# ------------------------------------------------------------------------------------------ the plugin itself

SCRATCH = {
    "conftest.py": 'import pytest\n\npytest.register_assert_rewrite("helpers")\n',
    "helpers.py": textwrap.dedent("""\
        def check_positive(x):
            assert x > 0
            assert x < 100


        def unregistered(x):
            pass
        """),
    "plain_helpers.py": "def plain_check(x):\n    assert x > 0\n",
    "test_bare.py": textwrap.dedent("""\
        import os
        import pytest
        from helpers import check_positive
        from plain_helpers import plain_check


        def test_loop():
            for i in range(3):
                assert i < 5
            assert (1 ==
                    1)


        def test_fails_midway():
            assert 1 == 1
            assert 1 == 2, "boom"
            assert 3 == 3


        def test_helper():
            check_positive(5)
            check_positive(500)
            assert True


        def test_plain_helper_failure():
            plain_check(-1)


        def test_raises_block():
            with pytest.raises(ZeroDivisionError):
                1 / 0


        def test_error_inside_assert():
            assert {}["missing"] == 1


        @pytest.mark.skip
        def test_skipped():
            assert False


        @pytest.mark.xfail
        def test_xfail():
            assert 0 == 1


        def test_zz_exit():
            assert "before exit"
            os._exit(3)
        """),
    "test_raises.py": textwrap.dedent("""\
        import pytest
        from pytest import raises


        def test_block_did_not_raise():
            assert 1 == 1
            with raises(ValueError):
                int("4")


        def test_block_raised():
            with pytest.raises(ValueError, match="invalid"):
                int("x")


        def test_call_forms():
            pytest.raises(ValueError, int, "x")
            raises(ValueError, int, "4")


        def test_other_exception_escapes():
            with pytest.raises(KeyError):
                int("x")
        """),
    "test_unit.py": textwrap.dedent("""\
        import unittest


        class T(unittest.TestCase):
            def test_equal(self):
                self.assertEqual([1, 2], [1, 2])
                self.assertIn(1, [1])
                self.assertEqual(
                    {"a": 1},
                    {"a": 2},
                )

            def test_raises_forms(self):
                self.assertRaises(KeyError, {}.__getitem__, "x")
                with self.assertRaises(KeyError) as cm:
                    {}["y"]
                self.assertEqual(cm.exception.args, ("y",))
                with self.assertRaises(KeyError):
                    pass

            def test_true_and_fail(self):
                self.assertTrue(True)
                self.fail("explicit")

            def test_bare_assert_in_unittest(self):
                assert 1 + 1 == 2
                assert 1 + 1 == 3
        """),
}


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("scratch")
    for name, text in SCRATCH.items():
        (root / name).write_text(text)
    (root / "pytest.ini").write_text("[pytest]\n")
    return root


def _run_scratch(
    root: Path, log: Path | None, *args: str
) -> tuple[subprocess.CompletedProcess[str], dict[str, Status]]:
    junit = root / f"junit-{len(list(root.glob('junit-*.xml')))}.xml"
    env = instrumented_env(log, f"-o junit_family=xunit1 --junitxml={junit}")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", *args], cwd=root, env=env, capture_output=True, text=True, timeout=120
    )
    statuses = parse_junit(junit.read_text()) if junit.exists() else {}
    return proc, statuses


def _summary(events: list[Event]) -> list[tuple[str, str, int, str]]:
    """Events with counted repeats expanded, in a stable order: the plugin writes the first event of a
    (test, site, outcome) at once and the repeats, counted, when the test ends."""
    return sorted((e.nodeid.split("::")[-1], e.file, e.line, e.outcome) for e in events for _ in range(e.count))


def test_plugin_records_bare_asserts(scratch: Path, tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    proc, _ = _run_scratch(scratch, log, "test_bare.py")
    assert proc.returncode == 3, proc.stdout[-2000:]  # os._exit(3) ended the session
    events = parse_events(log.read_text())
    assert _summary(events) == sorted([
        *[("test_loop", "test_bare.py", 9, "passed")] * 3,
        ("test_loop", "test_bare.py", 10, "passed"),
        ("test_fails_midway", "test_bare.py", 15, "passed"),
        ("test_fails_midway", "test_bare.py", 16, "failed"),
        ("test_helper", "helpers.py", 2, "passed"),
        ("test_helper", "helpers.py", 3, "passed"),
        ("test_helper", "helpers.py", 2, "passed"),
        ("test_helper", "helpers.py", 3, "failed"),
        ("test_plain_helper_failure", "plain_helpers.py", 2, "failed"),
        ("test_raises_block", "test_bare.py", 31, "passed"),
        ("test_error_inside_assert", "test_bare.py", 36, "failed"),
        ("test_xfail", "test_bare.py", 46, "failed"),
        ("test_zz_exit", "test_bare.py", 50, "passed"),  # written before os._exit
    ])
    by_site = {(e.file, e.line): e.source for e in events}
    assert by_site[("test_bare.py", 10)] == "assert (1 == 1)"
    assert by_site[("test_bare.py", 16)] == 'assert 1 == 2, "boom"'


def test_plugin_records_unittest_methods(scratch: Path, tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    proc, statuses = _run_scratch(scratch, log, "test_unit.py")
    assert proc.returncode == 1
    events = parse_events(log.read_text())
    assert _summary(events) == sorted([
        ("test_bare_assert_in_unittest", "test_unit.py", 26, "passed"),
        ("test_bare_assert_in_unittest", "test_unit.py", 27, "failed"),
        ("test_equal", "test_unit.py", 6, "passed"),  # assertEqual -> assertListEqual counts once
        ("test_equal", "test_unit.py", 7, "passed"),
        ("test_equal", "test_unit.py", 8, "failed"),  # assertDictEqual inside, once
        ("test_raises_forms", "test_unit.py", 14, "passed"),
        ("test_raises_forms", "test_unit.py", 15, "passed"),  # recorded when the block exits
        ("test_raises_forms", "test_unit.py", 17, "passed"),
        ("test_raises_forms", "test_unit.py", 18, "failed"),
        ("test_true_and_fail", "test_unit.py", 22, "passed"),
        ("test_true_and_fail", "test_unit.py", 23, "failed"),
    ])
    sites = {(s.file, s.line): s.source for s in assertion_sites(SCRATCH["test_unit.py"], "test_unit.py")}
    assert all(sites[(e.file, e.line)] == e.source for e in events)
    assert statuses["test_unit.py::T::test_raises_forms"] == Status.FAILED


def test_plugin_records_pytest_raises_boltons_c1c25da(scratch: Path, tmp_path: Path) -> None:
    """boltons c1c25da's FAIL_TO_PASS test fails on buggy only in ``with raises(ValueError)`` (imported
    from pytest): the plugin records pytest.raises in both spellings and both forms, DID NOT RAISE and
    an escaping other exception as failed, at the sites tree-sitter finds, without changing outcomes."""
    log = tmp_path / "events.jsonl"
    proc, statuses = _run_scratch(scratch, log, "test_raises.py")
    events = parse_events(log.read_text())
    assert _summary(events) == sorted([
        ("test_block_did_not_raise", "test_raises.py", 6, "passed"),
        ("test_block_did_not_raise", "test_raises.py", 7, "failed"),
        ("test_block_raised", "test_raises.py", 12, "passed"),
        ("test_call_forms", "test_raises.py", 17, "passed"),
        ("test_call_forms", "test_raises.py", 18, "failed"),
        ("test_other_exception_escapes", "test_raises.py", 22, "failed"),
    ])
    sites = {(s.file, s.line): (s.kind, s.source) for s in assertion_sites(SCRATCH["test_raises.py"], "test_raises.py")}
    assert all(sites[(e.file, e.line)][1] == e.source for e in events)
    assert sites[("test_raises.py", 7)] == ("raises", "raises(ValueError)")
    _, plain = _run_scratch(scratch, None, "test_raises.py")
    assert statuses == plain and sorted(s.name for s in plain.values()) == ["FAILED", "FAILED", "FAILED", "PASSED"]
    assert proc.returncode == 1


def test_plugin_index_is_linear_in_a_large_test_file_more_itertools_test_more(plugin, tmp_path: Path) -> None:  # noqa: ANN001
    """more-itertools' 7,043-line tests/test_more.py took ~170 s per instrumented run (2.7 s plain): the
    plugin's source index called ast.get_source_segment per node, which splits the whole file each time.
    The index must match get_source_segment and take well under a second per thousand sites."""
    import ast
    import time

    body = "".join(f"    def test_{i}(self):\n        self.assertEqual(f({i}), 'é{i}'\n            )\n        assert g({i})\n" for i in range(3000))
    path = tmp_path / "test_big.py"
    path.write_text("import unittest\n\nclass T(unittest.TestCase):\n" + body, encoding="utf-8")
    started = time.monotonic()
    import swedeck_assertions_sites  # type: ignore[import-not-found]  # the plugin's source index, imported with it

    entries = swedeck_assertions_sites._index(str(path))
    elapsed = time.monotonic() - started
    text = path.read_text(encoding="utf-8")
    nodes = [n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Assert) or getattr(n, "func", None) is not None and getattr(n.func, "attr", "") == "assertEqual"]
    assert len(entries) == len(nodes) == 6000
    by_start = {(e[0], e[2]): e for e in entries}
    for node in nodes[::150]:  # get_source_segment is the slow reference: a sample of it
        kind = "assert" if isinstance(node, ast.Assert) else "call"
        start, end, _, _, source = by_start[(node.lineno, kind)]
        assert (start, end, source) == (node.lineno, node.end_lineno, plugin.normalise(ast.get_source_segment(text, node)))
    assert elapsed < 15, f"indexing 6,000 sites took {elapsed:.1f} s"


def test_plugin_never_changes_outcomes_and_is_silent_without_its_variable(scratch: Path, tmp_path: Path) -> None:
    args = ("test_unit.py", "test_bare.py", "--deselect", "test_bare.py::test_zz_exit")
    log = tmp_path / "events.jsonl"
    with_plugin, instrumented = _run_scratch(scratch, log, *args)
    without_plugin, plain = _run_scratch(scratch, None, *args)
    assert instrumented == plain and len(plain) == 12
    assert with_plugin.returncode == without_plugin.returncode == 1
    # loaded but with no log named: nothing is written anywhere, outcomes unchanged
    env = instrumented_env(tmp_path / "unused.jsonl")
    del env["SWEDECK_ASSERT_LOG"]
    proc = subprocess.run([sys.executable, "-m", "pytest", *args], cwd=scratch, env=env, capture_output=True, text=True)
    assert proc.returncode == 1 and "8 failed" in proc.stdout
    assert not (tmp_path / "unused.jsonl").exists()


def test_plugin_ignores_rewritten_caches_written_without_the_pass_hook(scratch: Path, tmp_path: Path) -> None:
    root = tmp_path / "project"
    shutil.copytree(scratch, root, ignore=shutil.ignore_patterns("junit-*.xml", "__pycache__"))
    env = instrumented_env(None)
    del env["PYTHONDONTWRITEBYTECODE"]  # a plain run that leaves rewritten pycs behind
    subprocess.run(
        [sys.executable, "-m", "pytest", "test_bare.py", "-k", "loop"], cwd=root, env=env, capture_output=True
    )
    assert list((root / "__pycache__").glob("test_bare.*pytest*.pyc"))
    log = tmp_path / "events.jsonl"
    _run_scratch(root, log, "test_bare.py", "-k", "loop")
    assert _summary(parse_events(log.read_text())) == [
        *[("test_loop", "test_bare.py", 9, "passed")] * 3,
        ("test_loop", "test_bare.py", 10, "passed"),
    ]
