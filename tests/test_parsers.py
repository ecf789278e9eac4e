"""Tests for harness.grading.parsers, mostly on output produced by really running pytest and unittest."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from curation.sources import load_rows
from harness.grading.diffs import is_r2e_test_path
from harness.grading.parsers import (
    PARSERS,
    UnsupportedParser,
    check_parser,
    decolor,
    parse_cargo,
    parse_gotest,
    parse_jest,
    parse_jest_json,
    parse_junit,
    parse_maven,
    parse_mocha_json,
    parse_pytest,
    parse_r2e,
    parse_sympy,
    parse_unittest,
    r2e_keys,
    resolve_parser,
    uses_junit,
)
from harness.records import Status

P, F, E, S, XF, XP = (Status.PASSED, Status.FAILED, Status.ERROR, Status.SKIPPED, Status.XFAIL, Status.XPASS)

# ---------------------------------------------------------------------------------------- real pytest run

SCRATCH_TESTS = '''
import unittest

import pytest


@pytest.fixture
def broken():
    raise RuntimeError("fixture boom")


@pytest.fixture
def bad_teardown():
    yield 1
    raise RuntimeError("teardown boom")


def test_pass():
    # Runs before the summary with -s: none of this may change a status.
    print("PASSED tests/test_x.py::test_fail")
    print("=========================== short test summary info ============================")
    print("PASSED tests/test_x.py::test_fail")
    print("PASSED tests/test_x.py::test_ghost")


def test_fail():
    assert 1 == 2, "nope - really"


def test_error(broken):
    pass


def test_fail_then_teardown(bad_teardown):
    assert False


def test_pass_then_teardown(bad_teardown):
    pass


def test_skip():
    pytest.skip("not today")


@pytest.mark.skip(reason="marked")
def test_skip_mark():
    pass


@pytest.mark.xfail(reason="known bug")
def test_xfail():
    assert False


@pytest.mark.xfail(reason="should fail")
def test_xpass():
    pass


@pytest.mark.xfail(strict=True)
def test_xpass_strict():
    pass


@pytest.mark.parametrize("v", ["a b", "x - y", "[nested]", "c::d", "[", "1-2"])
def test_param(v):
    assert v not in ("x - y", "[")


class TestA:
    def test_b(self):
        pass

    def test_c(self):
        assert 0

    class TestInner:
        def test_d(self):
            pass


class TestUnit(unittest.TestCase):
    def test_sub(self):
        for i in range(2):
            with self.subTest(i=i):
                self.assertEqual(i, 0)
'''

EXPECTED_JUNIT = {
    "tests/test_broken.py": E,
    "tests/test_x.py::test_pass": P,
    "tests/test_x.py::test_fail": F,
    "tests/test_x.py::test_error": E,
    "tests/test_x.py::test_fail_then_teardown": E,
    "tests/test_x.py::test_pass_then_teardown": E,
    "tests/test_x.py::test_skip": S,
    "tests/test_x.py::test_skip_mark": S,
    "tests/test_x.py::test_xfail": XF,
    "tests/test_x.py::test_xpass": P,
    "tests/test_x.py::test_xpass_strict": F,
    "tests/test_x.py::test_param[a b]": P,
    "tests/test_x.py::test_param[x - y]": F,
    "tests/test_x.py::test_param[[nested]]": P,
    "tests/test_x.py::test_param[c::d]": P,
    "tests/test_x.py::test_param[[]": F,
    "tests/test_x.py::test_param[1-2]": P,
    "tests/test_x.py::TestA::test_b": P,
    "tests/test_x.py::TestA::test_c": F,
    "tests/test_x.py::TestA::TestInner::test_d": P,
    "tests/test_x.py::TestUnit::test_sub": F,
}


def _run(cwd: Path, *args: str) -> str:
    """Run a module in ``cwd`` with plugin autoloading off, so the output does not depend on this host."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    done = subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    return done.stdout + done.stderr


@pytest.fixture(scope="module")
def pytest_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """(terminal output, JUnit xunit1 XML) of one pytest 9 run over every outcome pytest has."""
    root = tmp_path_factory.mktemp("scratch")
    (root / "pytest.ini").write_text("[pytest]\n")
    (root / "tests").mkdir()
    (root / "tests" / "test_x.py").write_text(SCRATCH_TESTS)
    (root / "tests" / "test_broken.py").write_text("import nonexistent_module_xyz\n\ndef test_z():\n    pass\n")
    text = _run(
        root, "-m", "pytest", "-rA", "-s", "--color=yes", "-p", "no:cacheprovider",
        "--continue-on-collection-errors", "-o", "junit_family=xunit1", "--junitxml=report.xml", "tests",
    )
    return text, (root / "report.xml").read_text()


def test_junit_report_of_real_run(pytest_run: tuple[str, str]) -> None:
    assert parse_junit(pytest_run[1]) == EXPECTED_JUNIT


def test_text_and_junit_agree_on_real_run(pytest_run: tuple[str, str]) -> None:
    text, xml = pytest_run
    assert "\x1b[" in text  # --color=yes really coloured the summary
    from_text, from_junit = parse_pytest(text), parse_junit(xml)
    # Documented differences: the text summary names no skipped test, and JUnit writes a non-strict
    # XPASS as a plain pass.
    skipped = {test_id for test_id, status in from_junit.items() if status is S}
    assert set(from_junit) - set(from_text) == skipped
    assert set(from_text) == set(from_junit) - skipped
    assert from_text["tests/test_x.py::test_xpass"] is XP
    for test_id, status in from_text.items():
        assert from_junit[test_id] is (P if status is XP else status), test_id


def test_forged_lines_before_summary_are_ignored(pytest_run: tuple[str, str]) -> None:
    text = pytest_run[0]
    assert "PASSED tests/test_x.py::test_ghost" in text  # the forgery really reached the log
    statuses = parse_pytest(text)
    assert statuses["tests/test_x.py::test_fail"] is F
    assert "tests/test_x.py::test_ghost" not in statuses


def test_unittest_subtest_failure_fails_parent(pytest_run: tuple[str, str]) -> None:
    # pytest 9 lists the parent as PASSED and the subtest as SUBFAILED(i=1).
    assert "SUBFAILED" in decolor(pytest_run[0])
    assert parse_pytest(pytest_run[0])["tests/test_x.py::TestUnit::test_sub"] is F


def test_xunit2_report_gives_the_same_ids(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text(SCRATCH_TESTS)
    _run(tmp_path, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "junit_family=xunit2",
         "--junitxml=report.xml", "tests")
    xunit2 = (tmp_path / "report.xml").read_text()
    assert 'file="' not in xunit2
    expected = {k: v for k, v in EXPECTED_JUNIT.items() if k != "tests/test_broken.py"}
    assert parse_junit(xunit2) == expected


# ---------------------------------------------------------------------------------------- real runner logs

# Logs written by really running each runner (data/fixtures/logs/make_logs.py); expected.json holds the
# statuses the runner itself reported, read from its structured output, not by harness.grading.parsers.
LOGS = Path(__file__).resolve().parents[1] / "data" / "fixtures" / "logs"


def _cases(runner: str) -> list[str]:
    return sorted(p.name for p in (LOGS / runner).iterdir() if p.is_dir())


def _expected(case: Path) -> dict[str, Status]:
    return {k: Status(v) for k, v in json.loads((case / "expected.json").read_text())["statuses"].items()}


@pytest.mark.parametrize("case", _cases("pytest"))
def test_real_pytest_logs_text_and_junit_give_the_runners_statuses(case: str) -> None:
    """pytest 6.2, 7.4 (pytest-subtests), 8 and 9 runs with pytester and pytest.main inside tests:
    the outer summary alone is read, so an honest run shows no line the JUnit report lacks."""
    folder = LOGS / "pytest" / case
    text = (folder / "log.txt").read_text()
    assert text.count("short test summary info") == 4  # three nested sessions printed theirs
    expected = _expected(folder)
    from_junit = parse_junit((folder / "report.xml").read_text())
    # JUnit writes a non-strict XPASS as a pass, and the text summary names no skipped test
    assert from_junit == {k: P if v is XP else v for k, v in expected.items()}
    assert parse_pytest(text) == {k: v for k, v in expected.items() if v is not S}


def test_real_pytest_logs_cover_the_formats_that_looked_forged() -> None:
    logs = {case: decolor((LOGS / "pytest" / case / "log.txt").read_text()) for case in _cases("pytest")}
    assert "XPASS tests/test_outcomes.py::test_xpass_reason should fail" in logs["pytest6.2"]
    assert "[check] (i=1) SUBFAIL tests/test_subtests.py::test_sub_fixture - " in logs["pytest7.4"]
    assert "SUBFAILED(i=1) tests/test_unit.py::TestUnit::test_sub - " in logs["pytest9"]
    assert parse_pytest(logs["pytest7.4"])["tests/test_subtests.py::test_sub_fixture"] is F


@pytest.mark.parametrize(("runner", "case"), [(r, c) for r in ("unittest", "django") for c in _cases(r)])
def test_real_unittest_and_django_logs(runner: str, case: str) -> None:
    """unittest on Python 3.8-3.13 and Django 3.2 (Python 3.8) and 5 (Python 3.12)."""
    folder = LOGS / runner / case
    assert resolve_parser("parse_log_django" if runner == "django" else "unittest")(
        (folder / "log.txt").read_text()
    ) == _expected(folder)


def test_bare_error_after_failing_setup_test_data_is_not_given_to_the_previous_test() -> None:
    log = (LOGS / "django" / "django3.2" / "log.txt").read_text()
    assert "... ok\nERROR\n" in log  # Python 3.8 prints the setUpClass error with no description
    statuses = parse_unittest(log)
    assert statuses["app.tests.AFirstTests.test_zz_last"] is P
    assert statuses["app.tests.BrokenSetupTests.setUpClass"] is E


def test_subtest_failure_then_expected_failure_on_one_line_keeps_the_xfail() -> None:
    log = (LOGS / "django" / "django3.2" / "log.txt").read_text()
    assert "test_sub (app.tests.AFirstTests) ... test_sub_known (app.tests.AFirstTests) ... expected failure" in log
    statuses = parse_unittest(log)
    assert statuses["app.tests.AFirstTests.test_sub"] is F
    assert statuses["app.tests.AFirstTests.test_sub_known"] is XF


# (runner folder, case) -> the corpus parser name that reads that output
OTHER_RUNNERS = {
    ("sympy", "sympy1.12"): "parse_log_sympy",
    ("go", "test-v"): "parse_log_gotest",
    ("go", "test-json"): "parse_log_gotest",
    ("cargo", "cargo-test"): "parse_log_cargo",
    ("jest", "verbose"): "parse_log_jest",
    ("jest", "json"): "parse_log_jest_json",
    ("mocha", "json"): "mocha_json",
}


@pytest.mark.parametrize(("runner", "case"), OTHER_RUNNERS)
def test_real_logs_of_other_runners(runner: str, case: str) -> None:
    folder = LOGS / runner / case
    assert resolve_parser(OTHER_RUNNERS[runner, case])((folder / "log.txt").read_text()) == _expected(folder)


def test_result_lines_a_test_prints_cannot_hide_its_failure() -> None:
    """Each fixture has a failing test that prints a passing result line for itself or another test."""
    go = (LOGS / "go" / "test-v" / "log.txt").read_text()
    assert "--- PASS: TestFail (0.00s)" in go and parse_gotest(go)["TestFail"] is F
    cargo = (LOGS / "cargo" / "cargo-test" / "log.txt").read_text()
    assert "test tests::passes ... FAILED" in cargo and parse_cargo(cargo)["tests::passes"] is P


def test_real_maven_log() -> None:
    """Surefire names passing tests only in its XML reports; the console gives classes and failures."""
    folder = LOGS / "maven" / "surefire"
    expected = _expected(folder)
    console = parse_maven((folder / "log.txt").read_text())
    assert console == {
        "com.example.CalcTest": F,
        "com.example.OtherTest": P,
        **{test_id: s for test_id, s in expected.items() if s in (F, E)},
    }
    reports = "".join((folder / f"report{i}.xml").read_text() for i in range(2))
    assert parse_maven(reports) == expected


# ---------------------------------------------------------------------------------------- pytest text by hand

SUMMARY = "=========================== short test summary info ============================"


def test_pytest_text_outside_summary_is_ignored() -> None:
    log = "\n".join([
        "tests/test_a.py::test_one PASSED",
        "PASSED tests/test_a.py::test_forged",
        SUMMARY,
        "PASSED tests/test_a.py::test_one",
        "==================== 1 passed in 0.01s ====================",
        "PASSED tests/test_a.py::test_after_the_session",
    ])
    assert parse_pytest(log) == {"tests/test_a.py::test_one": P}
    assert parse_pytest("PASSED tests/test_a.py::test_one\n") == {}


def test_pytest_text_reads_only_the_last_session_and_quiet_mode() -> None:
    log = "\n".join([
        SUMMARY,
        "FAILED tests/test_a.py::test_one - assert 0",
        "1 failed in 0.02s",  # -q statistics line, no "=" frame
        "some other command's output: PASSED nothing",
        SUMMARY,
        "XFAIL tests/test_b.py::test_two - reason: flaky",
        "SKIPPED [3] tests/test_b.py:12: no network",
        "===== 1 xfailed, 3 skipped in 1.20 seconds =====",
    ])
    # The first session's JUnit report was overwritten by the second's, so only the second counts.
    assert parse_pytest(log) == {"tests/test_b.py::test_two": XF}


def test_pytest_text_worst_status_wins_and_cr_is_dropped() -> None:
    log = "\r\n".join([
        SUMMARY,
        "\x1b[32mPASSED\x1b[0m tests/test_a.py::test_one",
        "ERROR tests/test_a.py::test_one - RuntimeError: teardown",
        "FAILED tests/test_a.py::test_one - assert 0",
        "SKIPPED tests/test_a.py::test_named_skip - no id-less form here",
        "=== 1 failed, 1 skipped, 1 error in 0.1s ===",
    ])
    assert parse_pytest(log) == {"tests/test_a.py::test_one": E, "tests/test_a.py::test_named_skip": S}


@pytest.mark.parametrize(
    ("line", "test_id"),
    [
        ("FAILED t.py::test_p[x - y] - AssertionError: x - y", "t.py::test_p[x - y]"),
        ("FAILED t.py::test_p[[a] - b] - msg [with] - brackets", "t.py::test_p[[a] - b]"),
        ("FAILED t.py::test_p[[] - AssertionError: assert '[' != '['", "t.py::test_p[[]"),
        ("FAILED t.py::test_p[]] - AssertionError: ']' - x", "t.py::test_p[]]"),
        ("FAILED t.py::test_plain - assert [1] - [2]", "t.py::test_plain"),
        ("ERROR t.py", "t.py"),
        ("PASSED t.py::test_p[] - x]", "t.py::test_p[] - x]"),
        ("XPASS t.py::TestA::test_b[a b-1] - should fail", "t.py::TestA::test_b[a b-1]"),
        ("FAILED t.py::test_strict - [XPASS(strict)] ", "t.py::test_strict"),
    ],
)
def test_pytest_message_is_stripped_only_outside_brackets(line: str, test_id: str) -> None:
    assert list(parse_pytest(f"{SUMMARY}\n{line}\n")) == [test_id]


# ---------------------------------------------------------------------------------------- JUnit by hand


def test_junit_bare_testsuite_inherited_tests_and_collection_errors() -> None:
    xml = """<?xml version="1.0" encoding="utf-8"?>
    <testsuite name="pytest" tests="4">
      <testcase classname="tests.test_x.TestChild" name="test_inherited" file="tests/base.py" line="3"/>
      <testcase classname="pkg.v1.2.test_y" name="test_z[a-b]" file="pkg/v1.2/test_y.py" line="1"/>
      <testcase classname="tests.test_old" name=""><error message="collection failure"/></testcase>
      <testcase classname="" name="tests.test_new"><error message="collection failure"/></testcase>
      <testcase classname="tests.test_x" name="test_s"><skipped type="pytest.skip" message="x"/></testcase>
    </testsuite>"""
    assert parse_junit(xml) == {
        "tests/test_x.py::TestChild::test_inherited": P,
        "pkg/v1.2/test_y.py::test_z[a-b]": P,
        "tests/test_old.py": E,
        "tests/test_new.py": E,
        "tests/test_x.py::test_s": S,
    }


@pytest.mark.parametrize("xml", ["<testsuites><testsuite>", "", "<html><body/></html>"])
def test_junit_rejects_broken_reports(xml: str) -> None:
    with pytest.raises(ValueError, match="JUnit"):
        parse_junit(xml)


# ---------------------------------------------------------------------------------------- unittest / Django

UNITTEST_MODULE = '''
import unittest


class TestX(unittest.TestCase):
    def test_ok(self):
        pass

    def test_fail(self):
        self.assertEqual(1, 2)

    def test_error(self):
        raise RuntimeError("boom")

    @unittest.skip("not today")
    def test_skip(self):
        pass

    @unittest.expectedFailure
    def test_xfail(self):
        self.fail()

    @unittest.expectedFailure
    def test_xpass(self):
        pass

    def test_doc(self):
        """Fails (ticket.123) ... ok, says the docstring."""
        self.fail()

    def test_sub(self):
        for i in range(2):
            with self.subTest(i=i):
                self.assertEqual(i, 0)

    def test_prints(self):
        print("ok")
        print("test_ok (pkg.test_u.TestX.test_ok) ... FAIL")
        self.fail()


class TestBrokenSetup(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        raise RuntimeError("class boom")

    def test_never(self):
        pass
'''


def test_unittest_real_run(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "test_u.py").write_text(UNITTEST_MODULE)
    log = _run(tmp_path, "-m", "unittest", "-v", "pkg.test_u")
    assert "\nFails (ticket.123) ... ok, says the docstring. ... FAIL" in log
    assert parse_unittest(log) == {
        "pkg.test_u.TestBrokenSetup.setUpClass": E,
        "pkg.test_u.TestX.test_ok": F,  # forged by test_prints; worse outcome wins, as for pytest
        "pkg.test_u.TestX.test_fail": F,
        "pkg.test_u.TestX.test_error": E,
        "pkg.test_u.TestX.test_skip": S,
        "pkg.test_u.TestX.test_xfail": XF,
        "pkg.test_u.TestX.test_xpass": XP,
        "pkg.test_u.TestX.test_doc": F,
        "pkg.test_u.TestX.test_sub": F,
        "pkg.test_u.TestX.test_prints": F,
    }


DJANGO_LOG = """\
Testing against Django installed in '/testbed/django' with up to 8 processes
Importing application admin_views
Operations to perform:
  Apply all migrations: admin, sites
Running migrations:
  Applying admin.0001_initial... OK
System check identified no issues (0 silenced).
test_add_view (admin_views.tests.AdminViewBasicTest) ... ok
test_change_view (admin_views.tests.AdminViewBasicTest)
Regression test for #12345 (ticket.link) ... ok
test_delete_view (admin_views.tests.AdminViewBasicTest)
The delete view ... FAIL
test_history_view (admin_views.tests.AdminViewBasicTest) ... System check identified no issues (0 silenced).
ok
test_new_style (admin_views.tests.AdminViewBasicTest.test_new_style) ... ERROR
test_skipped (admin_views.tests.SkipTest) ... skipped "Database doesn't support feature(s): x"
test_known_bug (admin_views.tests.SkipTest) ... expected failure

======================================================================
ERROR: test_new_style (admin_views.tests.AdminViewBasicTest.test_new_style)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/testbed/tests/admin_views/tests.py", line 10, in test_new_style
    raise ValueError("x ... ok")
ValueError: x ... ok

======================================================================
FAIL: test_delete_view (admin_views.tests.AdminViewBasicTest)
The delete view
----------------------------------------------------------------------
AssertionError: 1 != 2

----------------------------------------------------------------------
Ran 7 tests in 0.100s

FAILED (failures=1, errors=1, skipped=1, expected failures=1)
"""


def test_django_verbosity_2_log() -> None:
    assert parse_unittest(DJANGO_LOG) == {
        "admin_views.tests.AdminViewBasicTest.test_add_view": P,
        "admin_views.tests.AdminViewBasicTest.test_change_view": P,
        "admin_views.tests.AdminViewBasicTest.test_delete_view": F,
        "admin_views.tests.AdminViewBasicTest.test_history_view": P,
        "admin_views.tests.AdminViewBasicTest.test_new_style": E,
        "admin_views.tests.SkipTest.test_skipped": S,
        "admin_views.tests.SkipTest.test_known_bug": XF,
    }


# ---------------------------------------------------------------------------------------- R2E-Gym


def test_r2e_semantics() -> None:
    log = "\n".join([
        "PASSED r2e_tests/test_1.py::test_forged_before_summary",
        "=========== \x1b[1mshort test summary info\x1b[0m ===========",
        "\x1b[32mPASSED\x1b[0m r2e_tests/test_1.py::TestA::test_b[x]",
        "PASSED r2e_tests/test_1.py::test_p[c::d]",
        "FAILED r2e_tests/test_1.py::test_p[x - y] - AssertionError",
        "ERROR r2e_tests/test_1.py::TestA::test_e - RuntimeError: boom",
        "ERROR r2e_tests/test_2.py",
        "XFAIL r2e_tests/test_1.py::test_xfail - reason",
        "XPASS r2e_tests/test_1.py::test_xpass",
        "SKIPPED [1] r2e_tests/test_1.py:3: skip",
        "FAILED r2e_tests/test_1.py::test_says_PASSED - assert 0",
        "===== 2 failed, 2 passed in 0.1s =====",
    ])
    assert parse_r2e(log) == {
        "TestA.test_b[x]": P,
        "test_p[c.d]": P,
        "test_p[x": F,  # R2E-Gym cuts at the first " - ", brackets or not
        "TestA.test_e": E,
        "": E,
        "test_says_PASSED": P,  # substring classification, PASSED first
    }


def test_r2e_key_rule_cuts_both_sides_alike() -> None:
    """R2E-Gym cuts parsed and expected keys at " - " before comparing; its parser leaves PASSED ids
    whole, so the corpus's expected map holds the uncut id."""
    log = f"{SUMMARY}\nPASSED r2e_tests/test_1.py::test_space[a]b - c]\nFAILED r2e_tests/test_1.py::test_f - x\n"
    expected = {"test_space[a]b - c]": P, "test_f": F}
    assert parse_r2e(log) == r2e_keys(expected) == {"test_space[a]b": P, "test_f": F}
    # two keys that collapse into one: the later in sorted order wins, on both sides
    assert r2e_keys({"t[a - 2]": F, "t[a - 1]": P}) == {"t[a": F}


def test_r2e_test_path_includes_a_top_level_test_folder() -> None:
    assert is_r2e_test_path("test_data/helpers.py") and is_r2e_test_path("test_x.py")
    assert not is_r2e_test_path("src/latest_data/x.py")


def test_r2e_needs_the_summary_marker() -> None:
    assert parse_r2e("PASSED r2e_tests/test_1.py::test_a\n") == {}


# ---------------------------------------------------------------------------------------- registry

# Every parser name SWE-bench (MAP_REPO_TO_PARSER, Python, Go, Rust, Jest), SWE-rebench V2 (the names
# implemented here), R2E-Gym, Scale-SWE and swedeck's own task folders use, with the runner output it reads.
CORPUS_PARSERS = {
    **dict.fromkeys(
        ["pytest", "parse_log_pytest", "parse_log_pytest_options", "parse_log_pytest_v2", "parse_log_pytest_nebo",
         "parse_log_seaborn", "parse_log_matplotlib", "parse_log_astroid", "parse_log_flask", "parse_log_marshmallow",
         "parse_log_pvlib", "parse_log_pyvista", "parse_log_sqlfluff", "parse_log_xarray", "parse_log_pydicom",
         "parse_log_requests", "parse_log_pylint", "parse_log_astropy", "parse_log_scikit", "parse_log_sphinx"],
        parse_pytest,
    ),
    "junit": parse_junit,
    "unittest": parse_unittest,
    "django": parse_unittest,
    "parse_log_django": parse_unittest,
    "parse_log_sympy": parse_sympy,
    "parse_log_gotest": parse_gotest,
    "parse_log_cargo": parse_cargo,
    "parse_log_jest": parse_jest,
    "parse_log_jest_json": parse_jest_json,
    "mocha_json": parse_mocha_json,
    "parse_java_mvn": parse_maven,
    "parse_log_java_mvn": parse_maven,
    "r2e": parse_r2e,
    "parse_log_r2e": parse_r2e,
}  # fmt: skip


@pytest.mark.parametrize(("name", "parser"), CORPUS_PARSERS.items())
def test_every_corpus_parser_name_resolves(name: str, parser: object) -> None:
    assert resolve_parser(name) is parser
    assert check_parser(name) in PARSERS
    assert uses_junit(name) is (parser is parse_pytest)


def test_junit_reports_in_a_log_keep_the_corpus_key_spelling() -> None:
    xml = (LOGS / "maven" / "surefire" / "report0.xml").read_text()
    log = f"[INFO] cat reports\n{xml}\nsome trailing output\n"
    assert resolve_parser("parse_combined_test_reports")(log)["com.example.CalcTest::fails"] is F
    assert resolve_parser("parse_log_junit")(log)["com.example.CalcTest fails"] is F


@pytest.mark.parametrize("name", ["parse_log_nobody_writes", "nope"])
def test_unsupported_parser_is_its_own_error(name: str) -> None:
    with pytest.raises(UnsupportedParser, match=f"{name!r} is not implemented; supported: .*parse_log_sympy"):
        resolve_parser(name)
    with pytest.raises(ValueError):
        uses_junit(name)


def test_unsupported_parser_is_a_load_error_of_its_own_per_task() -> None:
    rows = [json.loads(line) for line in (LOGS.parent / "swe_rebench_v2.jsonl").read_text().splitlines()]
    good = load_rows("swe_rebench_v2", rows, "f").tasks[0]
    row = next(r for r in rows if r["instance_id"] == good.instance_id)
    config = json.loads(row["install_config"]) if isinstance(row["install_config"], str) else row["install_config"]
    unsupported = {**row, "install_config": {**config, "log_parser": "parse_log_nobody_writes"}}
    result = load_rows("swe_rebench_v2", [row, unsupported], "f")
    assert [t.instance_id for t in result.tasks] == [good.instance_id]
    [error] = result.errors
    assert (error.location, error.field, error.stage) == ("f#row1", "log_parser", "unsupported_parser")
    assert "parse_log_nobody_writes" in error.message


def test_decolor() -> None:
    assert decolor("\x1b[1;31mFAILED\x1b[0m a\r\n\x1b[2K") == "FAILED a\n"
