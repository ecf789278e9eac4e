"""Parsers for the remaining languages' test runners: Ruby (Minitest, test-unit, RSpec, Cucumber), PHP
(PHPUnit's testdox, Pest), Julia's Test, R (testthat, ``R CMD check``), Dart, Lua (plenary.nvim)."""

from __future__ import annotations

import re

from harness.grading.parsers.common import (
    E,
    F,
    P,
    Parser,
    S,
    decolor,
    json_lines,
    record,
    word_lines,
)
from harness.records import Status

# ---------------------------------------------------------------------------------------- Ruby

_MINITEST_WORD = {".": P, "F": F, "E": E, "S": S}
# "Class#test_x = " is printed when the test starts, "0.00 s = ." when it ends, so output the test
# prints lands between them, and the result may end a later line.
_MINITEST_START = re.compile(r"^(?P<name>[A-Z][\w:]*#.+?) = ")
_MINITEST_RESULT = re.compile(r"(?:^| = )[\d.]+ s = (?P<word>[.FES])$")


def minitest(shoulda: bool) -> Parser:
    """A parser for ``ruby -Itest test.rb -v`` (Minitest's verbose lines, ``Class#test_x = 0.00 s = .``),
    keyed ``Class#test_x``. A result goes to the test started last; one the test printed itself can
    only make it worse. Shoulda names end with a period (``test_: a post should render. ``); with
    ``shoulda`` it is cut, as SWE-bench's ``parse_log_minitest`` keys them."""

    def parse(text: str) -> dict[str, Status]:
        statuses: dict[str, Status] = {}
        current: str | None = None
        for line in decolor(text).splitlines():
            line = line.strip()
            if (start := _MINITEST_START.match(line)) is not None:
                name = start["name"].strip()
                current = name.removesuffix(".").strip() if shoulda else name
            if (
                current is not None
                and (result := _MINITEST_RESULT.search(line)) is not None
            ):
                record(statuses, current, _MINITEST_WORD[result["word"]])
        return statuses

    return parse


_SPEC_REPORTER = re.compile(
    r"^\s+(?P<name>test\S*(?: \S+)*?)\s+(?P<word>PASS|FAIL|ERROR|SKIP)(?: \([\d.]+s\))?$"
)
_SPEC_SUITE = re.compile(r"^[A-Z][\w:]*$")
_SPEC_WORD = {"PASS": P, "FAIL": F, "ERROR": E, "SKIP": S}


def parse_minitest_spec_reporter(text: str) -> dict[str, Status]:
    """Statuses from minitest-reporters' SpecReporter: a suite name at the margin, then one
    ``  test_x   PASS (0.02s)`` line per test, keyed ``Suite::test_x`` (SWE-rebench's ``parse_log_ruby_v1``)."""
    statuses: dict[str, Status] = {}
    suite: str | None = None
    for line in decolor(text).splitlines():
        line = line.rstrip()
        if _SPEC_SUITE.match(line):
            suite = line
        elif (test := _SPEC_REPORTER.match(line)) is not None:
            record(
                statuses,
                f"{suite}::{test['name']}" if suite else test["name"],
                _SPEC_WORD[test["word"]],
            )
    return statuses


# test-unit's verbose runner: "  test_adds:\t\t\t.: (0.000291)", "  test_fails:\t\t\tF" (the traceback
# follows), O omission, P pending, N notification; ``test "a b"`` names print as "test: a b".
parse_test_unit = word_lines(
    r"^(?:test: )?(?P<name>.+?):\s+(?P<word>[.EFOPN])(?::\s.*)?$",
    {".": P, "E": E, "F": F, "O": S, "P": S, "N": P},
)
# RSpec's JSON report rendered by jq, one example a line: "<description>[ - <id>] - passed|failed|pending"
parse_rspec_lines = word_lines(
    r"^(?P<name>.+) - (?P<word>passed|failed|pending)$",
    {"passed": P, "failed": F, "pending": S},
)
_CUCUMBER_SCENARIO = re.compile(r"^(?P<name>.+?) (?P<steps>[.FPU\-]+)(?: \([\d.]+s\))?$")


def parse_cucumber(text: str) -> dict[str, Status]:
    """Statuses from ``cucumber --format progress`` with jekyll's scenario lines, which SWE-bench's
    ``parse_log_cucumber`` reads: ``features/x.feature:8  Scenario: Name ..F (0.01s)``, one progress mark
    per step (``.`` passed, ``F`` failed, ``-`` skipped, ``P`` pending, ``U`` undefined), keyed by the
    text before the marks. A failed step fails the scenario; a pending or undefined one, which a
    non-strict run does not fail, skips it."""
    statuses: dict[str, Status] = {}
    for line in decolor(text).splitlines():
        if (match := _CUCUMBER_SCENARIO.match(line.strip())) is None:
            continue
        steps = match["steps"]
        status = F if "F" in steps else S if "P" in steps or "U" in steps or set(steps) == {"-"} else P
        record(statuses, match["name"], status)
    return statuses


# ---------------------------------------------------------------------------------------- PHP

_TESTDOX_SUITE = re.compile(r"^(?P<suite>\w[^(]*?)(?: \(.+\))?$")
_TESTDOX_TEST = re.compile(
    r"^ (?P<mark>[✔✘↩∅☢]) (?P<name>.+?)(?:\s+\[\d+(?:\.\d+)?\s*m?s\])?$"
)
_TESTDOX_MARK = {"✔": P, "✘": F, "↩": S, "∅": S, "☢": F}


def parse_phpunit_testdox(text: str) -> dict[str, Status]:
    """Statuses from ``phpunit --testdox``: a class heading (``Calc`` or, from PHPUnit 10, ``Calc
    (Tests\\CalcTest)``) and one `` ✔ Adds`` line per test, keyed ``Calc > Adds`` as SWE-bench keys them.
    Testdox marks a failure and an error alike (✘); incomplete (∅) counts as skipped, risky (☢) as failed."""
    statuses: dict[str, Status] = {}
    suite = ""
    for line in decolor(text).splitlines():
        line = line.rstrip()
        if (test := _TESTDOX_TEST.match(line)) is not None:
            record(statuses, f"{suite} > {test['name']}", _TESTDOX_MARK[test["mark"]])
        elif (heading := _TESTDOX_SUITE.match(line)) is not None:
            suite = heading["suite"]
    return statuses


# Pest (and Collision's printer for PHPUnit): "  ✓ it adds  0.02s", "  ⨯ it fails", "  - it is skipped  → reason";
# SWE-rebench's parse_log_php_v1 keys the text after the mark without the time.
parse_pest = word_lines(
    r"^(?P<word>[✓✔⨯x\-]) (?P<name>.(?>\s*\S)*?)(?:\s++→.*)?(?:\s{2,}+\d+(?:\.\d+)?s)?$",
    {"✓": P, "✔": P, "⨯": F, "x": F, "-": S},
)

# ---------------------------------------------------------------------------------------- Julia

_JULIA_HEADER = re.compile(r"^Test Summary:\s*\|(?P<columns>.*)$")
_JULIA_ROW = re.compile(r"^(?P<name>\S.*?)\s*\|(?P<counts>[\s\d]*?)(?:\s+[\d.]+m?s)?$")


def parse_julia(text: str) -> dict[str, Status]:
    """Statuses per test set from the summary tables of Julia's ``Test``: each header names its
    columns (``Pass  Fail  Error  Broken  Total  Time``), each row gives a set's counts in them. A set
    with errors is ERROR, with failures FAILED, else PASSED (broken tests are known failures)."""
    statuses: dict[str, Status] = {}
    columns: list[tuple[str, int]] = []
    for line in decolor(text).splitlines():
        if (header := _JULIA_HEADER.match(line)) is not None:
            offset = line.index("|") + 1
            columns = [
                (m[0], offset + m.end()) for m in re.finditer(r"\w+", header["columns"])
            ]
            continue
        row = _JULIA_ROW.match(line.strip()) if columns else None
        if row is None or "|" not in line:
            continue
        counts = {name: int(word) for name, end in columns if (word := line[:end].split()[-1]).isdigit()
                  and line[end - len(word) : end] == word}  # fmt: skip
        if "Total" not in counts:
            continue
        status = E if counts.get("Error") else F if counts.get("Fail") else P
        record(statuses, row["name"], status)
    return statuses


# ---------------------------------------------------------------------------------------- R

_TESTTHAT_CONTEXT = re.compile(
    r"^(?P<mark>[✔✖⠏]) \|[\s\dFWSE]*\|\s+(?P<name>.+?)(?:\s+\[[\d.]+\s*\w+\])?$"
)
_TESTTHAT_PROBLEM = re.compile(
    r"^(?:── )?(?P<word>Failure|Error|Skip) \(.+?\): (?P<name>.+?)(?: ─+)?$"
)
_TESTTHAT_WORD = {"Failure": F, "Error": E, "Skip": S}


def parse_testthat(text: str) -> dict[str, Status]:
    """Statuses from testthat's progress reporter: one line per file context (``✔ |  3 | calc``,
    ``✖ | 1 2 | calc``), and a ``Failure (test-calc.R:5:3): fails`` header per failing test (``Error``
    for one that raised, ``Skip`` for a skipped one), keyed by context or test name as SWE-rebench's
    ``parse_log_r`` keys them. Passing tests are named only through their context."""
    statuses: dict[str, Status] = {}
    for line in decolor(text).splitlines():
        line = line.strip()
        if (context := _TESTTHAT_CONTEXT.match(line)) is not None and context[
            "mark"
        ] != "⠏":
            record(statuses, context["name"], P if context["mark"] == "✔" else F)
        elif (problem := _TESTTHAT_PROBLEM.match(line)) is not None:
            record(statuses, problem["name"], _TESTTHAT_WORD[problem["word"]])
    return statuses


_R_CHECK = re.compile(r"^\* checking (?P<name>.+?) \.\.\.(?P<rest>.*)$")
# " OK", " [12s/13s] OK" (the check's timing, as R's own reader of check logs allows it)
_R_CHECK_RESULT = re.compile(r"^ (?:\[[^ ]*\] )?(?P<word>[A-Z]+)$")
_R_CHECK_WORD = {"OK": P, "NOTE": P, "NOTES": P, "WARNING": F, "WARNINGS": F, "ERROR": E, "ERRORS": E,
                 "FAIL": F, "FAILED": F, "SKIPPED": S}  # fmt: skip


def parse_r_check(text: str) -> dict[str, Status]:
    """Statuses per check from ``R CMD check``: ``* checking whether package can be installed ... OK``,
    keyed by the check's text, its word mapped as SWE-rebench's ``parse_log_r_v2`` maps it. A check
    whose word comes on a later line (``* checking tests ...``, then ``Running 'x.R'`` lines, or a
    warning printed right after the dots) gets that word. Check lines start at the line's first
    column: output R shows indented (a failing test's ``Complete output:``) is not read as checks."""
    statuses: dict[str, Status] = {}
    pending: str | None = None
    for line in decolor(text).splitlines():
        line = line.rstrip()
        if (check := _R_CHECK.match(line)) is not None:
            result = _R_CHECK_RESULT.match(check["rest"])
            pending = None if result else check["name"]
            if result is not None:
                record(statuses, check["name"], _R_CHECK_WORD.get(result["word"], P))
        elif (
            pending is not None
            and line.strip()
            and (word := line.strip().strip(".:!").split()[0].upper()) in _R_CHECK_WORD
        ):
            record(statuses, pending, _R_CHECK_WORD[word])
            pending = None
    return statuses


# ---------------------------------------------------------------------------------------- Dart

_DART_RESULT = {"success": P, "failure": F, "error": E}


def parse_dart_json(text: str) -> dict[str, Status]:
    """Statuses from ``dart test --reporter json``: ``testStart`` events name a test by id,
    ``testDone`` events give its result (``skipped`` set for a skipped test); hidden tests and the
    ``loading ...`` pseudo-tests are not tests."""
    names: dict[object, str] = {}
    statuses: dict[str, Status] = {}
    for event in json_lines(text):
        if event.get("type") == "testStart" and isinstance(
            test := event.get("test"), dict
        ):
            name = test.get("name") or ""
            if name and not name.startswith("loading "):
                names[test.get("id")] = name
        elif (
            event.get("type") == "testDone"
            and not event.get("hidden")
            and event.get("testID") in names
        ):
            status = (
                S
                if event.get("skipped")
                else _DART_RESULT.get(str(event.get("result")))
            )
            if status is not None:
                record(statuses, names[event["testID"]], status)
    return statuses


_DART_LINE = re.compile(
    r"^(?:\[[\w-]+\]:\s+)?\d+:\d+ \+(?P<passed>\d+)(?: ~(?P<skipped>\d+))?(?: -(?P<failed>\d+))?: "
    r"(?P<name>(?:loading )?/?[^:]+\.dart(?:: .+?)?)(?P<error> \[E\])?$"
)


def parse_dart_expanded(text: str) -> dict[str, Status]:
    """Statuses from ``dart test``'s expanded reporter, where each line repeats the running counts
    (``00:01 +3 ~1 -1: test/calc_test.dart: fails [E]``): a test whose line is marked ``[E]`` failed
    (a file that failed to load is keyed by its path and is an ERROR), one that raised the skip count
    was skipped, any other that finished passed. Keyed ``path: name`` as SWE-rebench's Dart parsers key it."""
    statuses: dict[str, Status] = {}
    previous = (0, 0)
    for line in decolor(text).splitlines():
        match = _DART_LINE.match(line.strip())
        if match is None:
            continue
        counts = (int(match["passed"]), int(match["skipped"] or 0))
        name = match["name"]
        if name.startswith("loading "):
            if match["error"]:
                record(statuses, name.removeprefix("loading "), E)
        elif match["error"]:
            record(statuses, name, F)
        elif counts[1] > previous[1]:
            record(statuses, name, S)
        elif name not in statuses:
            record(statuses, name, P)
        previous = counts
    return statuses


# ---------------------------------------------------------------------------------------- Lua

# plenary.nvim's busted: "Success: || calc adds", "Fail: || calc fails", "Skipped: || ..." (the colon
# is optional in older versions; the summary counters have no "||")
parse_plenary = word_lines(
    r"^(?P<word>Success|Fail|Failed|Skip|Skipped|Errors?)\s*:?\s*\|\|\s*(?P<name>.+?)$",
    {
        "Success": P,
        "Fail": F,
        "Failed": F,
        "Skip": S,
        "Skipped": S,
        "Error": E,
        "Errors": E,
    },
)
