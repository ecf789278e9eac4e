"""Parsers for compiled languages' test runners: Go, cargo (Rust), GoogleTest, doctest, CTest and
other C/C++ harnesses, the Tcl suites of Redis and Valkey, automake's test driver (jq), MicroPython's
``run-tests.py``, XCTest (Swift) and ``dotnet test`` (C#)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from harness.grading.parsers.common import (
    XF,
    XP,
    E,
    F,
    P,
    S,
    decolor,
    json_lines,
    record,
    word_lines,
)
from harness.records import Status

# ---------------------------------------------------------------------------------------- Go

_GO_RESULT = re.compile(
    r"^\s*--- (?P<word>PASS|FAIL|SKIP): (?P<name>\S+) \(\d+(?:\.\d+)?s\)$"
)
_GO_STATUS = {"PASS": Status.PASSED, "FAIL": Status.FAILED, "SKIP": Status.SKIPPED,
              "pass": Status.PASSED, "fail": Status.FAILED, "skip": Status.SKIPPED}  # fmt: skip


def parse_gotest(text: str) -> dict[str, Status]:
    """Statuses from ``go test -v`` (``--- PASS: TestX/sub (0.00s)``) or ``go test -json`` output,
    keyed by test name (subtests as ``TestX/sub``) as SWE-rebench's labels are; a name in several
    packages keeps its worst outcome. With ``-json`` only the events count: a test's own output is
    wrapped inside them and cannot pose as a result line."""
    statuses: dict[str, Status] = {}
    events = [e for e in json_lines(text) if "Action" in e]
    if events:
        for event in events:
            test, action = event.get("Test"), event.get("Action")
            if isinstance(test, str) and action in ("pass", "fail", "skip"):
                record(statuses, test, _GO_STATUS[str(action)])
        return statuses
    for line in decolor(text).splitlines():
        match = _GO_RESULT.match(line.rstrip())
        if match is not None:
            record(statuses, match["name"], _GO_STATUS[match["word"]])
    return statuses


# ---------------------------------------------------------------------------------------- cargo test

_CARGO_RESULT = re.compile(
    r"^test (?P<name>.+?)(?: - should panic)? \.\.\. (?P<word>ok|FAILED|ignored)$"
)
_CARGO_CAPTURED = re.compile(r"^---- .+ std(?:out|err) ----$")
_CARGO_STATUS = {
    "ok": Status.PASSED,
    "FAILED": Status.FAILED,
    "ignored": Status.SKIPPED,
}


def parse_cargo(text: str) -> dict[str, Status]:
    """Statuses from ``cargo test`` (libtest) output: ``test path::name ... ok|FAILED|ignored``, doc
    tests as ``src/lib.rs - item (line 3)``. A failing test's captured output, printed between
    ``---- name stdout ----`` and the ``failures:`` list, is not read."""
    statuses: dict[str, Status] = {}
    captured = False
    for line in decolor(text).splitlines():
        line = line.rstrip()
        if _CARGO_CAPTURED.match(line):
            captured = True
        elif line == "failures:":
            captured = False
        elif not captured and (match := _CARGO_RESULT.match(line)) is not None:
            record(statuses, match["name"], _CARGO_STATUS[match["word"]])
    return statuses


# ---------------------------------------------------------------------------------------- GoogleTest

# "[       OK ] Suite.Test (0 ms)", "[  FAILED  ] Suite.Test (1 ms)", "[  SKIPPED ] Suite.Test (0 ms)";
# the run's closing list repeats failures without a time, and a parameterised failure adds its
# parameter: "[  FAILED  ] P/Suite.Test/0, where GetParam() = 3 (0 ms)".
parse_googletest = word_lines(
    r"^\[\s*(?P<word>OK|FAILED|SKIPPED)\s*\] (?P<name>[\w/.]+)(?:, where .*?)?(?: \(\d+ ms\))?$",
    {"OK": P, "FAILED": F, "SKIPPED": S},
)


# ---------------------------------------------------------------------------------------- doctest


def _doctest_status(section: ET.Element) -> Status:
    """A test case's or subcase's outcome from its own children: an exception it threw is an error
    (doctest's JUnit reporter says so too), a failed expression a failure."""
    if section.find("Exception") is not None:
        return E
    if any(e.get("success") == "false" for e in section.findall("Expression")):
        return F
    results = section.find("OverallResultsAsserts")
    return F if results is not None and results.get("test_case_success") == "false" and not section.findall("SubCase") else P


def parse_doctest(text: str) -> dict[str, Status]:
    """Statuses from doctest's XML reporter (``-s -r=xml``) printed into the log: a subcase is keyed
    ``test case > subcase`` as SWE-bench keys it, a test case without subcases by its name;
    ``skipped="true"`` skips it. Output the tests print lands inside the XML: a report it makes
    unreadable counts as no test run, never as an exception in the grader."""
    start, end = text.find("<doctest"), text.find("</doctest>")
    if start < 0 or end < 0:
        return {}
    try:
        report = ET.fromstring(text[start : end + len("</doctest>")])
    except ET.ParseError:
        return {}
    statuses: dict[str, Status] = {}
    for case in report.iter("TestCase"):
        name = case.get("name", "")
        if case.get("skipped") == "true":
            record(statuses, name, S)
            continue
        subcases = case.findall(".//SubCase")
        for subcase in subcases:
            record(statuses, f"{name} > {subcase.get('name', '')}", _doctest_status(subcase))
        if not subcases:
            record(statuses, name, _doctest_status(case))
    return statuses


# ---------------------------------------------------------------------------------------- CTest and others

# "1/4 Test #1: adds .............................   Passed    0.00 sec",
# "2/4 Test #2: fails ............................***Failed    0.01 sec", "***Skipped", "***Timeout",
# "***Not Run (Disabled)", "***Exception: SegFault"
parse_ctest = word_lines(
    r"^\d+/\d+ Test +#\d+: (?P<name>.+?) \.*(?:\*\*\*)?\s*(?P<word>Passed|Failed|Skipped|Timeout|Not Run|Exception)\b",
    {
        "Passed": P,
        "Failed": F,
        "Skipped": S,
        "Not Run": S,
        "Timeout": E,
        "Exception": E,
    },
)
# A harness that prints "Test <name>    passed|failed|skipped" (SWE-rebench's parse_log_cpp_v2)
parse_test_word = word_lines(
    r"^Test\s+(?P<name>.+?)\s+(?P<word>passed|failed|skipped)$",
    {"passed": P, "failed": F, "skipped": S},
)
# "name ... OK" harnesses: "[12/414] File: save jpeg... OK" (C++, SWE-rebench's parse_log_cpp_v3)
_DOTS_PROGRESS = re.compile(r"\[\d+/\d+\]\s*")
_DOTS_WORD = re.compile(r"\s*(?P<word>ok|OK|PASSED|FAILED|FAIL|failed|SKIPPED|ignored|ERROR)\b")
_DOTS_STATUS = {"ok": P, "OK": P, "PASSED": P, "FAILED": F, "FAIL": F, "failed": F, "SKIPPED": S, "ignored": S,
                "ERROR": E}  # fmt: skip


def parse_dots_result(text: str) -> dict[str, Status]:
    """The name is the shortest text before a ``...`` that a result word follows (blanks around the
    dots dropped), as a lazy ``(?P<name>.+?)\\s*\\.\\.\\.`` reads it; found by visiting each ``...`` once,
    since that regex rescanned a run of blanks from each of its positions (quadratic in a long one)."""
    statuses: dict[str, Status] = {}
    for line in decolor(text).splitlines():
        line = line.strip()
        progress = _DOTS_PROGRESS.match(line)
        start = progress.end() if progress else 0
        dots = line.find("...", start + 1)
        while dots >= 0:
            if (word := _DOTS_WORD.match(line, dots + 3)) is not None and (name := line[start:dots].rstrip()):
                record(statuses, name, _DOTS_STATUS[word["word"]])
                break
            dots = line.find("...", dots + 1)
    return statuses

# Redis and Valkey's Tcl suite: "[ok]: name (2 ms)", "[err]: name in tests/unit/x.tcl", "[skip]: name",
# "[ignore]: name", "[exception]: ..." (the run stopped)
parse_redis = word_lines(
    r"^\[(?P<word>ok|err|skip|ignore|exception)\]: (?P<name>.+?)(?: in \S+)?(?: \(\d+ ms\))?$",
    {"ok": P, "err": F, "skip": S, "ignore": S, "exception": E},
)
# automake's parallel test driver (jq's make check): "PASS: tests/jqtest", "FAIL: tests/shtest", "XFAIL: ..."
_AUTOMAKE_RESULT = re.compile(r"^(?P<word>PASS|FAIL|SKIP|XFAIL|XPASS|ERROR): (?P<name>\S.*?)\s*$")
_AUTOMAKE_WORDS = {"PASS": P, "FAIL": F, "SKIP": S, "XFAIL": XF, "XPASS": XP, "ERROR": E}


def _automake_section(lines: list[str], i: int) -> re.Match[str] | None:
    """The header of a test-suite.log section at line ``i``: ``FAIL: tests/x`` (the test's log name),
    underlined with as many ``=`` and followed by a blank line, as the driver writes the file."""
    header = _AUTOMAKE_RESULT.match(lines[i])
    if header is None or i + 2 >= len(lines):
        return None
    underline = lines[i + 1].rstrip()
    if underline != "=" * len(lines[i].rstrip()) or lines[i + 2].strip():
        return None
    return header


def parse_automake(text: str) -> dict[str, Status]:
    """Statuses from automake's parallel test driver, the line it prints per test during ``make check``
    (``PASS: tests/jqtest``, ``XFAIL: tests/known.test``), keyed by the test's name as printed.

    A test-suite.log printed into the log (``cat test-suite.log`` after a failure, ``make check
    VERBOSE=1``) is not read: it has a section per test that did not pass, a ``FAIL: tests/x`` header
    (the log file's name, without the test's extension: another key) underlined with ``=``, then the
    test's own output, which may print anything, result lines included, then the driver's closing
    ``FAIL tests/x.test (exit status: 1)``. A section runs to the last such closing line of its test
    before the next section, so output the test printed cannot end it early."""
    lines = decolor(text).splitlines()
    statuses: dict[str, Status] = {}
    headers = [(i, header) for i in range(len(lines)) if (header := _automake_section(lines, i)) is not None]
    skip_to: dict[int, int] = {}
    for n, (start, header) in enumerate(headers):
        end = headers[n + 1][0] if n + 1 < len(headers) else len(lines)
        closing = re.compile(
            rf"^{header['word']} {re.escape(header['name'])}(?:\.[^\s/]+)? \(exit status: -?\d+\)$"
        )
        last = max((j for j in range(start + 2, end) if closing.match(lines[j].strip())), default=end - 1)
        skip_to[start] = last + 1
    i = 0
    while i < len(lines):
        if i in skip_to:
            i = skip_to[i]
            continue
        if (result := _AUTOMAKE_RESULT.match(lines[i].strip())) is not None:
            record(statuses, result["name"], _AUTOMAKE_WORDS[result["word"]])
        i += 1
    return statuses


# MicroPython's tests/run-tests.py: "pass  basics/int.py", "FAIL  basics/x.py", "skip  extmod/y.py"
parse_micropython = word_lines(
    r"^(?P<word>pass|FAIL|skip)\s+(?P<name>\S.*)$", {"pass": P, "FAIL": F, "skip": S}
)
# XCTest on Linux: "Test Case 'Suite.testX' passed (0.001 seconds)"; on macOS "'-[Suite testX]'"
parse_xctest = word_lines(
    r"^Test Case '(?P<name>[^']+)' (?P<word>passed|failed|skipped) \([\d.]+ seconds\)$",
    {"passed": P, "failed": F, "skipped": S},
)
# dotnet test (VSTest console logger, -v normal): "  Passed Ns.Class.Method [3 ms]", "  Failed ...",
# "  Skipped ..."; xUnit's own runner: "[xUnit.net 00:00:01.23]     Ns.Class.Method [FAIL]"
_DOTNET = word_lines(
    r"^(?P<word>Passed|Failed|Skipped) (?P<name>.+?)(?: \[[^\]]+\])?$",
    {"Passed": P, "Failed": F, "Skipped": S},
)
_XUNIT = word_lines(
    r"^\[xUnit\.net [\d:.]+\]\s+(?P<name>.+?) \[(?P<word>FAIL|SKIP)\]$",
    {"FAIL": F, "SKIP": S},
)


def parse_dotnet(text: str) -> dict[str, Status]:
    statuses = _DOTNET(text)
    for test_id, status in _XUNIT(text).items():
        record(statuses, test_id, status)
    return statuses
