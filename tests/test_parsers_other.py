"""Parsers of the non-Python runners: every parser name the corpora use resolves, and each
implementation gives the runner's own statuses on a log it wrote (data/fixtures/logs/make_logs.py),
or, where the runner cannot be installed here, on a log written from the format the upstream parser
and the runner document (marked below)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.grading.parsers import PARSERS, check_parser, resolve_parser
from harness.records import Status

P, F, E, S, XF = (
    Status.PASSED,
    Status.FAILED,
    Status.ERROR,
    Status.SKIPPED,
    Status.XFAIL,
)
LOGS = Path(__file__).resolve().parents[1] / "data" / "fixtures" / "logs"

# SWE-rebench V2's NAME_TO_PARSER, lib/agent/log_parsers.py at commit c71902a8cf8d2b725f63d51f199f4d3e56f68d2d
SWE_REBENCH_V2 = [
    "parse_log_pytest",
    "parse_log_pytest_options",
    "parse_log_pytest_v2",
    "parse_log_pytest_nebo",
    "parse_combined_test_reports",
    "parse_log_gotest",
    "parse_log_redis",
    "parse_log_jq",
    "parse_log_doctest",
    "parse_log_micropython_test",
    "parse_log_googletest",
    "parse_log_minitest",
    "parse_log_cucumber",
    "parse_log_ruby_unit",
    "parse_log_rspec_transformed_json",
    "parse_log_cargo",
    "parse_log_phpunit",
    "parse_log_maven",
    "parse_log_ant",
    "parse_log_gradle_custom",
    "parse_log_calypso",
    "parse_log_chart_js",
    "parse_log_marked",
    "parse_log_p5js",
    "parse_log_react_pdf",
    "parse_log_jest",
    "parse_log_jest_json",
    "parse_log_vitest",
    "parse_log_karma",
    "parse_log_tap",
    "parse_log_elixir",
    "parse_log_ruby_v1",
    "parse_log_cpp",
    "parse_log_cpp_v2",
    "parse_log_cpp_v3",
    "parse_log_cpp_v4",
    "parse_lue_nvim",
    "parse_lua_nvim",
    "parse_log_lua_nvim",
    "parse_java_mvn",
    "parse_log_java_mvn",
    "parse_java_mvn_v2",
    "parse_log_java_mvn_v2",
    "parse_log_php_v1",
    "parse_log_ruby_v2",
    "parse_log_haskell",
    "parse_log_haskell_v2",
    "parse_log_js",
    "parse_log_js_2",
    "parse_log_js_3",
    "parse_log_js_4",
    "parse_log_gradlew_v1",
    "parse_log_julia",
    "parse_log_npx",
    "parse_log_r",
    "parse_log_r_v2",
    "parse_log_lein",
    "parse_log_dart",
    "parse_log_dart_v2",
    "parse_log_dart_v3",
    "parse_log_scala",
    "parse_log_scala_v2",
    "parse_log_scala_v3",
    "parse_log_ocaml",
    "parse_log_ocaml_v2",
    "parse_log_ocaml_v3",
    "parse_log_ocaml_v4",
    "parse_log_ocaml_v5",
    "parse_log_sbt",
    "parse_log_junit",
    "parse_logs_r_junit",
    "parse_logs_kotlin_junit",
    "parse_log_r_junit",
    "parse_log_kotlin_junit",
    "parse_log_swift",
    "parse_log_csharp",
]
# SWE-bench 5's PARSER_REGISTRY, swebench/harness/log_parsers/__init__.py at v5.0.0
# (1c2283a1556d6b40fe00a6a248280199feff93c6, unchanged at 7a21e05772954cc81471ae19d56f436cecf43c54),
# and the functions its MAP_REPO_TO_PARSER_JS names beyond it (parse_plotly_js aside, which no row can name)
SWE_BENCH_5 = [
    "parse_log_pytest",
    "parse_log_pytest_options",
    "parse_log_django",
    "parse_log_pytest_v2",
    "parse_log_seaborn",
    "parse_log_sympy",
    "parse_log_matplotlib",
    "parse_log_astroid",
    "parse_log_flask",
    "parse_log_marshmallow",
    "parse_log_pvlib",
    "parse_log_pyvista",
    "parse_log_sqlfluff",
    "parse_log_xarray",
    "parse_log_pydicom",
    "parse_log_requests",
    "parse_log_pylint",
    "parse_log_astropy",
    "parse_log_scikit",
    "parse_log_sphinx",
    "parse_log_calypso",
    "parse_log_bpmn_js",
    "parse_log_carbon",
    "parse_log_eslint",
    "parse_log_grommet",
    "parse_log_highlightjs",
    "parse_log_lighthouse",
    "parse_log_next",
    "parse_log_openlayers",
    "parse_log_prismjs",
    "parse_log_quarto_cli",
    "parse_log_chart_js",
    "parse_log_marked",
    "parse_log_p5js",
    "parse_log_react_pdf",
    "parse_log_jest",
    "parse_log_jest_json",
    "parse_log_vitest",
    "parse_log_karma",
    "parse_log_tap",
    "parse_log_immutable_js",
    "parse_log_redis",
    "parse_log_jq",
    "parse_log_doctest",
    "parse_log_micropython_test",
    "parse_log_googletest",
    "parse_log_gotest",
    "parse_log_maven",
    "parse_log_ant",
    "parse_log_gradle_custom",
    "parse_log_phpunit",
    "parse_log_minitest",
    "parse_log_cucumber",
    "parse_log_ruby_unit",
    "parse_log_rspec_transformed_json",
    "parse_log_jekyll",
    "parse_log_cargo",
    "parse_log_cypress",
    "parse_log_emotion",
    "parse_log_prettier",
    "parse_log_scratch_gui",
]


@pytest.mark.parametrize("name", sorted({*SWE_REBENCH_V2, *SWE_BENCH_5}))
def test_every_upstream_parser_name_resolves(name: str) -> None:
    assert resolve_parser(name) is PARSERS[check_parser(name)]


def _expected(case: str) -> dict[str, Status]:
    return {
        k: Status(v)
        for k, v in json.loads((LOGS / case / "expected.json").read_text())[
            "statuses"
        ].items()
    }


def _parse(name: str, case: str) -> dict[str, Status]:
    return resolve_parser(name)((LOGS / case / "log.txt").read_text())


# (fixture case written by a real run, corpus parser name that reads it)
REAL_RUNS = [
    ("mocha/spec", "parse_log_js_2"),
    ("mocha/spec", "parse_log_npx"),
    ("tap/node-test", "parse_log_tap"),
    ("jest/files", "parse_log_react_pdf"),
    ("ruby/minitest", "parse_log_ruby_v2"),
    ("ruby/minitest", "parse_log_minitest"),
    ("ruby/test-unit", "parse_log_ruby_unit"),
    ("elixir/trace", "parse_log_elixir"),
    ("googletest/gtest", "parse_log_googletest"),
    ("ctest/ctest", "parse_log_cpp_v4"),
    ("ruby/rspec-id", "parse_log_rspec_transformed_json"),
    ("ruby/rspec-plain", "parse_log_rspec_transformed_json"),
    ("ruby/cucumber", "parse_log_cucumber"),
    ("doctest/xml", "parse_log_doctest"),
    ("gradle/events", "parse_log_gradle_custom"),
    ("gradle/reports", "parse_log_gradlew_v1"),
    ("karma/mocha", "parse_log_karma"),
    ("r/testthat", "parse_log_r"),
    ("ocaml/alcotest", "parse_log_ocaml"),
    ("ocaml/alcotest", "parse_log_ocaml_v3"),
    ("haskell/hspec-specdoc", "parse_log_haskell_v2"),
    ("haskell/hspec-checks", "parse_log_haskell"),
    ("haskell/tasty", "parse_log_haskell"),
    ("lein/test", "parse_log_lein"),
    ("automake/make-check", "parse_log_jq"),
    ("pytest-verbose/names", "parse_log_cpp"),
    ("maven/surefire2", "parse_log_kotlin_junit"),
    ("maven/surefire2", "parse_java_mvn"),
    ("tap/node-tap-buffered", "parse_log_js_3"),
    ("ruby/spec-reporter", "parse_log_ruby_v1"),
    ("ocaml/dune-verbose", "parse_log_ocaml_v2"),
    ("deno/quarto", "parse_log_quarto_cli"),
]


@pytest.mark.parametrize(("case", "name"), REAL_RUNS)
def test_real_runner_logs_give_the_runners_statuses(case: str, name: str) -> None:
    assert _parse(name, case) == _expected(case)


def test_vitest_verbose_names_every_test_it_prints() -> None:
    """Vitest 1 prints no line for skipped and todo tests off a terminal; its JSON report is preferred."""
    expected = _expected("vitest/verbose")
    assert _parse("parse_log_vitest", "vitest/verbose") == {
        k: v for k, v in expected.items() if v is not S
    }


def test_ant_line_formatter_names_every_test_run() -> None:
    """The "[PASS|FAIL|ERR] name" formatter prints nothing for an ignored JUnit 4 test; the test's own
    "[PASS] fails(...)", echoed after its suite, cannot hide the failure."""
    expected = _expected("ant/junit")
    assert expected["skipped(com.example.CalcTest)"] is S
    assert "    [junit] [PASS] fails(com.example.CalcTest)" in (LOGS / "ant/junit/log.txt").read_text()
    assert _parse("parse_log_ant", "ant/junit") == {k: v for k, v in expected.items() if v is not S}


def test_phpunit_testdox_marks_an_error_as_a_failure() -> None:
    expected = _expected("phpunit/testdox")
    assert expected["Calc > Errors"] is E
    assert _parse("parse_log_phpunit", "phpunit/testdox") == {
        **expected,
        "Calc > Errors": F,
    }


def test_result_lines_printed_by_tests_cannot_hide_a_failure() -> None:
    assert (
        "[       OK ] Calc.Fails (0 ms)"
        in (LOGS / "googletest/gtest/log.txt").read_text()
    )
    assert _parse("parse_log_googletest", "googletest/gtest")["Calc.Fails"] is F
    assert "1) test fails (CalcTest)" in (LOGS / "elixir/trace/log.txt").read_text()
    assert (
        _parse("parse_log_elixir", "elixir/trace")["adds"] is P
    )  # a failure report it printed names another test
    assert (
        "CalcTest#test_fails = 0.00 s = ."
        in (LOGS / "ruby/minitest/log.txt").read_text()
    )
    assert _parse("parse_log_ruby_v2", "ruby/minitest")["CalcTest#test_fails"] is F


def test_regression_cucumber_scenario_failing_at_its_first_step_or_pending() -> None:
    """SWE-bench's pattern needs a passed step before the last mark: a scenario whose first step
    failed (``F-``) and pending or undefined ones (``.P-``, ``.U``) were missing from the statuses."""
    log = (LOGS / "ruby/cucumber/log.txt").read_text()
    assert "Scenario: Exploding at once F- (0.01s)" in log
    statuses = _parse("parse_log_cucumber", "ruby/cucumber")
    assert statuses["features/calc.feature:18  Scenario: Exploding at once"] is F
    assert statuses["features/calc.feature:22  Scenario: Pending step"] is S
    assert statuses["features/calc.feature:27  Scenario: Undefined step"] is S


def test_regression_doctest_exception_is_an_error() -> None:
    """A test case that threw was FAILED; doctest's own JUnit reporter calls it an error."""
    assert "<Exception crash=\"false\">" in (LOGS / "doctest/xml/log.txt").read_text()
    assert _parse("parse_log_doctest", "doctest/xml")["throws"] is E


def test_regression_doctest_report_broken_by_test_output_runs_nothing() -> None:
    """A test printing ``a < b`` under ``-r=xml`` made the report unparsable and the parser raise."""
    log = (LOGS / "doctest/xml/log.txt").read_text()
    assert resolve_parser("parse_log_doctest")(log.replace("<TestSuite>", "<TestSuite>\nif a < b", 1)) == {}
    assert _parse("parse_log_doctest", "doctest/xml")["fails"] is F  # it printed a passing <TestCase> of its name


def test_regression_gradle_task_line_is_not_a_test() -> None:
    """Gradle's plain console ends a failed run with the task's line, which was read as a test ':test'."""
    assert ":test FAILED" in (LOGS / "gradle/events/log.txt").read_text().splitlines()
    statuses = _parse("parse_log_gradle_custom", "gradle/events")
    assert ":test" not in statuses
    assert statuses["com.example.CalcTest > fails"] is F  # its printed "... > fails PASSED" is not shown


def test_regression_karma_mocha_reporter_skipped_test_is_skipped() -> None:
    """karma-mocha-reporter prints a skipped test with the pass mark: it was PASSED as 'is skipped (skipped)'."""
    assert "    ✔ is skipped (skipped)" in (LOGS / "karma/mocha/log.txt").read_text()
    statuses = _parse("parse_log_karma", "karma/mocha")
    assert statuses["Calc > is skipped"] is S and "Calc > is skipped (skipped)" not in statuses


@pytest.mark.parametrize("name", ["parse_log_chart_js", "parse_log_bpmn_js", "parse_log_openlayers"])
def test_karma_progress_reporter_names_the_failures(name: str) -> None:
    """Karma's progress reporter names only failing tests ("<browser> <path and title> FAILED")."""
    failed = {k: v for k, v in _expected("karma/progress").items() if v is F}
    assert len(failed) == 3 and _parse(name, "karma/progress") == failed


@pytest.mark.parametrize("name", ["parse_log_ocaml", "parse_log_ocaml_v3"])
def test_regression_alcotest_first_failure_marked_with_an_arrow(name: str) -> None:
    """Alcotest marks a run's first failure "> [FAIL] ...": the line was not read, so the "[OK]" line
    the failing test printed itself made it PASSED."""
    log = (LOGS / "ocaml/alcotest/log.txt").read_text()
    assert "> [FAIL]        calc                 1   fails." in log
    assert "  [OK]          calc                 1   fails." in log
    assert _parse(name, "ocaml/alcotest")["calc 1 fails."] is F


def test_regression_hspec_2_8_pending_line_and_dotted_failure_list() -> None:
    """Hspec 2.8 writes a pending example's reason on a deeper "# PENDING: ..." line, which made the
    example a describe block ('Calc.later.#'), and lists failures as "1) Calc.add fails", which added
    'Calc.add fails' beside 'Calc.add.fails'."""
    log = (LOGS / "haskell/hspec-specdoc/log.txt").read_text()
    assert "    # PENDING: not today" in log and "  1) Calc.add fails" in log
    statuses = _parse("parse_log_haskell_v2", "haskell/hspec-specdoc")
    assert statuses["Calc.later"] is S and statuses["Calc.add.fails"] is F
    assert not [k for k in statuses if "#" in k or k.startswith("Calc.add ")]


def test_regression_hspec_checks_pending_mark() -> None:
    """Hspec's checks formatter marks a pending example "[‐]": it was missing from the statuses."""
    assert "  later [‐]" in (LOGS / "haskell/hspec-checks/log.txt").read_text()
    assert _parse("parse_log_haskell", "haskell/hspec-checks")["later"] is S


def test_regression_lein_fail_line_printed_by_a_test() -> None:
    """A test printing "FAIL in (fine)" failed its passing namespace; clojure.test's own report
    always ends with the file and line."""
    assert "FAIL in (fine)" in (LOGS / "lein/test/log.txt").read_text().splitlines()
    assert _parse("parse_log_lein", "lein/test")["calc.other-test"] is P


def test_regression_automake_test_suite_log_is_not_read() -> None:
    """``cat test-suite.log`` after ``make check`` printed a section per test that did not pass: its
    header (``FAIL: tests/fails``, the log's name without ``.test``) added a key per section, and the
    result lines the test printed itself (``PASS: tests/ghost.test``) were read as results."""
    log = (LOGS / "automake/make-check/log.txt").read_text()
    assert "FAIL: tests/fails\n=================\n" in log and "PASS: tests/ghost.test" in log
    statuses = _parse("parse_log_jq", "automake/make-check")
    assert "tests/fails" not in statuses and "tests/ghost.test" not in statuses
    assert statuses["tests/fails.test"] is F and statuses["tests/known.test"] is XF
    assert statuses == _expected("automake/make-check")


def test_regression_pytest_names_progress_line_printed_by_a_test() -> None:
    """A failing test printed "tests/test_ujson.py::test_ghost PASSED": shown again under "Captured
    stdout call" in the FAILURES section, it was read as a progress line and added test_ghost."""
    log = (LOGS / "pytest-verbose/names/log.txt").read_text()
    assert "Captured stdout call" in log and "\ntests/test_ujson.py::test_ghost PASSED\n" in log
    statuses = _parse("parse_log_cpp", "pytest-verbose/names")
    assert "test_ghost" not in statuses and statuses["test_skipped"] is S
    assert statuses["test_same"] is F  # TestDecode's passed, TestOther's failed


def test_regression_surefire_count_line_printed_by_a_test() -> None:
    """A test printing "Running com.example.GhostTest" and a count line added a passing class
    GhostTest: Surefire 2.20+ names the class on its own count lines (" - in com.example.CalcTest")."""
    log = (LOGS / "maven/surefire2/log.txt").read_text()
    assert "Running com.example.GhostTest\nTests run: 1, Failures: 0, Errors: 0, Skipped: 0\n" in log
    statuses = _parse("parse_log_kotlin_junit", "maven/surefire2")
    assert "com.example.GhostTest" not in statuses and statuses["com.example.CalcTest"] is F
    assert statuses["com.example.LaterTest"] is S  # every test of it ignored


def test_regression_node_tap_buffered_subtests_time_and_lone_brace() -> None:
    """node-tap's "ok 2 - test/other.js # time=23ms {" kept "# time=23ms" in every key (a new key each
    run), and a failed file's "{", on a line of its own after its YAML, opened no block."""
    log = (LOGS / "tap/node-tap-buffered/log.txt").read_text()
    assert "\n  ...\n{\n" in log and "# time=" in log
    statuses = _parse("parse_log_js_3", "tap/node-tap-buffered")
    assert not [k for k in statuses if "#" in k]
    assert statuses["test/calc.js :: fails"] is F and statuses["test/other.js :: other"] is P


def test_r_cmd_check_gives_every_check_r_reads() -> None:
    """R's own reader of a check log skips the first check, which the parser reads too."""
    statuses = _parse("parse_log_r_v2", "r/check")
    assert statuses == {**_expected("r/check"), "for file ‘calc/DESCRIPTION’": P}


def test_regression_r_check_indented_output_and_warning_after_the_dots() -> None:
    """A failing test's output, shown indented under "Complete output:", printed a check line that was
    read as a check; and offline the dependency check prints "...Warning: unable to access index"
    right after its dots, so the check was not read at all."""
    log = (LOGS / "r/check/log.txt").read_text()
    assert "\n  * checking whether the tests lie ... OK\n" in log
    assert "* checking package dependencies ...Warning: unable to access index" in log
    statuses = _parse("parse_log_r_v2", "r/check")
    assert "whether the tests lie" not in statuses and statuses["package dependencies"] is P
    assert statuses["tests"] is E and statuses["Rd \\usage sections"] is F


def test_regression_dune_failed_test_reported_as_a_command() -> None:
    """dune --verbose prints a failing test's output under "Command [2] exited with code 1:", not an
    "Output[2]:" block: the failing executables were missing from the statuses."""
    assert "Command [3] exited with code 2:" in (LOGS / "ocaml/dune-verbose/log.txt").read_text()
    statuses = _parse("parse_log_ocaml_v2", "ocaml/dune-verbose")
    assert statuses["test_io.exe"] is F and statuses["test_quiet.exe"] is F  # the second printed nothing


def test_regression_quarto_temporary_files_and_steps() -> None:
    """Quarto's names hold temporary files (/tmp/3e63...d3.qmd), a new key each run, which SWE-bench's
    parse_log_quarto_cli numbers in order (/tmp/0); and Deno's indented steps ("  first ... ok") were
    read as tests of their own."""
    log = (LOGS / "deno/quarto/log.txt").read_text()
    assert "\n  first ... " in log and ".qmd ... " in log
    statuses = _parse("parse_log_quarto_cli", "deno/quarto")
    assert statuses["[smoke] > render > /tmp/0"] is P and statuses["[smoke] > render > /tmp/1site"] is F
    assert "first" not in statuses and statuses["[unit] > lint"] is F


def test_regression_hunit_text_runner_reports() -> None:
    """runTestTT redraws its counter with carriage returns before each report, which joined the
    counter and "### Failure in: 1:fails" into one line as the grader decodes the log (no report was
    read), and aligns "### Error in:   2:errors" with three spaces. It names no passing test."""
    log = (LOGS / "haskell/hunit/log.txt").read_bytes().decode()
    assert "\r### Failure in: 1:fails\n" in log and "### Error in:   2:errors" in log
    expected = _expected("haskell/hunit")
    assert resolve_parser("parse_log_haskell")(log) == {k: v for k, v in expected.items() if v is not P}


@pytest.mark.parametrize(("case", "name"), [("maven/one-test", "parse_log_maven"), ("maven/reactor", "parse_java_mvn_v2")])
def test_maven_one_test_per_call_and_reactor_summary(case: str, name: str) -> None:
    """SWE-bench's one mvn call per test (the traced -Dtest and its build result) and SWE-rebench's
    reactor summary per module; the Maven parser also reads the classes and failed methods Surefire
    prints in the same log (tested on maven/surefire in test_parsers.py)."""
    expected = _expected(case)
    statuses = _parse(name, case)
    assert {k: statuses.get(k) for k in expected} == expected


def test_mocha_spec_tree_keys_by_describe_path() -> None:
    statuses = _parse("parse_log_calypso", "mocha/spec")
    assert statuses["math - nested - deep - with dash"] is P
    assert statuses["math - fails"] is F and statuses["math - skipped"] is S
    assert _parse("parse_log_highlightjs", "mocha/spec")["math.nested.adds"] is P


def test_jest_verbose_tree_with_describe_path() -> None:
    statuses = _parse("parse_log_calypso", "jest/verbose")
    assert statuses["math - fails"] is F and statuses["math - nested - adds"] is P
    assert statuses["math - skipped"] is S and statuses["top level"] is P


# ---------------------------------------------------------------------------------------- written by hand
# Runners not installable here, where the package registries are Debian bookworm's, PyPI and npm (no
# Maven Central, Packagist, Hackage, LuaRocks, pub.dev, NuGet or release downloads): each log is written
# from the output format the upstream parser's docstring and regexes document (SWE-rebench V2 and
# SWE-bench 5 sources above) and the runner's docs.
#   parse_log_cpp_v2, parse_log_cpp_v3, parse_log_ocaml_v4: a project's own harness prints these lines,
#     there is no runner to install;
#   parse_log_redis: Redis's Tcl suite ships only in its source tree, not in Debian's redis packages;
#   parse_log_micropython_test: MicroPython (tests/run-tests.py) is not in bookworm, PyPI or npm;
#   parse_log_swift, parse_log_csharp: no Swift toolchain in bookworm (its "swift" is OpenStack's), the
#     .NET SDK comes from Microsoft's feed (both are on other kinds of machine, not this one);
#   parse_log_scala, _v2, _v3: ScalaTest, MUnit/uTest and sbt are not in bookworm (Maven Central is out);
#   parse_log_php_v1: Pest comes from Packagist only;
#   parse_log_haskell_v2: Hspec before 2.8 ("fails FAILED [1]"); bookworm has 2.8 (haskell/hspec-specdoc);
#   parse_log_julia, parse_log_dart, parse_log_dart_v3: Julia and the Dart SDK are not in bookworm or npm;
#   parse_log_lua_nvim: plenary.nvim is not in bookworm (neovim is) nor on npm;
#   parse_log_kotlin_junit: see its entry (Surefire before 2.20).

HAND_WRITTEN = {
    "parse_log_cpp_v3": (
        "[1/3] File: save jpeg... OK\n[2/3] image::Threshold (form 1)... FAILED\n[3/3] io::Skip... SKIPPED\n",
        {"File: save jpeg": P, "image::Threshold (form 1)": F, "io::Skip": S},
    ),
    "parse_log_cpp_v2": ("Test adds        passed\nTest fails       failed\nTest later       skipped\n", {"adds": P, "fails": F, "later": S}),
    "parse_log_redis": (
        "[ok]: SET and GET (2 ms)\n[err]: EXPIRE works in tests/unit/expire.tcl\n[skip]: DEBUG only\n[ignore]: Slow\n",
        {"SET and GET": P, "EXPIRE works": F, "DEBUG only": S, "Slow": S},
    ),
    "parse_log_micropython_test": ("pass  basics/int.py\nFAIL  basics/str.py\nskip  extmod/ssl.py\n",
                                   {"basics/int.py": P, "basics/str.py": F, "extmod/ssl.py": S}),
    "parse_log_swift": (
        ("Test Case 'CalcTests.testAdds' started at 2024-01-01 00:00:00.000\n"
        "Test Case 'CalcTests.testAdds' passed (0.001 seconds)\nTest Case 'CalcTests.testFails' failed (0.002 seconds)\n"),
        {"CalcTests.testAdds": P, "CalcTests.testFails": F},
    ),
    "parse_log_csharp": (
        ("  Passed Calc.Tests.Adds [3 ms]\n  Failed Calc.Tests.Fails [5 ms]\n  Skipped Calc.Tests.Later\n"
        "[xUnit.net 00:00:01.23]     Calc.Tests.Other [FAIL]\n"),
        {"Calc.Tests.Adds": P, "Calc.Tests.Fails": F, "Calc.Tests.Later": S, "Calc.Tests.Other": F},
    ),
    "parse_log_scala": (
        ("[info] CalcSpec:\n[info] - should add (5 milliseconds)\n[info] - should fail *** FAILED *** (3 milliseconds)\n"
        "[info] - should wait !!! IGNORED !!!\n"),
        {"should add": P, "should fail": F, "should wait": S},
    ),
    "parse_log_scala_v3": (
        "[info] CalcSpec:\n[info] - adds (5 milliseconds)\n[info] - fails *** FAILED *** (3 milliseconds)\n",
        {"CalcSpec:: adds": P, "CalcSpec:: fails": F},
    ),
    "parse_log_scala_v2": ("  + adds 12ms\n  x fails 3ms\n", {"adds": P, "fails": F}),
    "parse_log_php_v1": (
        "   PASS  Tests\\Unit\\CalcTest\n  ✓ it adds  0.02s\n  ⨯ it fails  0.01s\n  - it waits → later\n",
        {"it adds": P, "it fails": F, "it waits": S},
    ),
    "parse_log_haskell_v2": (
        ("Test suite spec: RUNNING...\n\nCalc\n  add\n    sums\n    fails FAILED [1]\n  later PENDING\n\n"
        "Failures:\n\n  test/CalcSpec.hs:9:5: \n  1) Calc, add, fails\n\nFinished in 0.01 seconds\n"),
        {"Calc.add.sums": P, "Calc.add.fails": F, "Calc.later": S},
    ),
    "parse_log_julia": (
        ("Test Summary: | Pass  Fail  Error  Total  Time\ncalc          |    2     1      1      4  0.5s\n"
        "  adds        |    2                   2  0.0s\n  broken      |          1      1      2  0.1s\n"),
        {"calc": E, "adds": P, "broken": E},
    ),
    "parse_log_dart": (
        ('{"type":"testStart","test":{"id":1,"name":"loading test/calc_test.dart"}}\n'
        '{"type":"testStart","test":{"id":2,"name":"calc adds"}}\n{"type":"testDone","testID":2,"result":"success","skipped":false,"hidden":false}\n'
        '{"type":"testStart","test":{"id":3,"name":"calc fails"}}\n{"type":"testDone","testID":3,"result":"failure","skipped":false,"hidden":false}\n'
        '{"type":"testStart","test":{"id":4,"name":"calc later"}}\n{"type":"testDone","testID":4,"result":"success","skipped":true,"hidden":false}\n'),
        {"calc adds": P, "calc fails": F, "calc later": S},
    ),
    "parse_log_dart_v3": (
        ("00:00 +0: /app/test/calc_test.dart: adds\n00:01 +1: /app/test/calc_test.dart: fails\n"
        "00:01 +1 -1: /app/test/calc_test.dart: fails [E]\n00:01 +1 -1: /app/test/calc_test.dart: later\n"
        "00:01 +1 ~1 -1: /app/test/calc_test.dart: later\n00:02 +1 ~1 -2: loading /app/test/broken_test.dart [E]\n"),
        {"/app/test/calc_test.dart: adds": P, "/app/test/calc_test.dart: fails": F, "/app/test/calc_test.dart: later": S,
         "/app/test/broken_test.dart": E},
    ),
    "parse_log_ocaml_v4": ("PASSED test_adds\nFAILED test_fails    expected 3\nSKIPPED test_later\n",
                           {"test_adds": P, "test_fails": F, "test_later": S}),
    "parse_log_lua_nvim": ("Success: \t||\tcalc adds\nFail:    \t||\tcalc fails\nSuccess: \t2\nFailed : \t1\n",
                           {"calc adds": P, "calc fails": F}),
    # Surefire before 2.20 (Maven 3.8's default 2.12.4): "Running X" and "Tests run: ..." unprefixed, the
    # lines upstream reads; Debian has 2.22.3 only (its 2.12.4 and 2.17 are relocations to it), ~/.m2 holds
    # 2.12.4's plugin without its JUnit providers, and Maven Central is not reachable. A real 2.22.3 log
    # is maven/surefire2 above.
    "parse_log_kotlin_junit": (
        ("Running com.x.CalcTest\nTests run: 3, Failures: 1, Errors: 0, Skipped: 0, Time elapsed: 0.05 sec <<< FAILURE!\n"
        "Running com.x.OtherTest\nTests run: 1, Failures: 0, Errors: 0, Skipped: 0, Time elapsed: 0.01 sec\n"),
        {"com.x.CalcTest": F, "com.x.OtherTest": P},
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", HAND_WRITTEN)
def test_formats_of_runners_not_installable_here(name: str) -> None:
    log, expected = HAND_WRITTEN[name]
    assert resolve_parser(name)(log) == expected
