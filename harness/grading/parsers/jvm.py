"""Parsers for JVM test runners: Maven Surefire's console (every section SWE-bench and SWE-rebench read
from it), Gradle's test events, Ant's JUnit task, ScalaTest and other sbt reporters, Leiningen."""

from __future__ import annotations

import re

from harness.grading.parsers.common import (
    E,
    F,
    P,
    Parser,
    S,
    decolor,
    junit_in_log,
    record,
    word_lines,
)
from harness.records import Status

# ---------------------------------------------------------------------------------------- Maven

_MVN_COUNTS = re.compile(
    r"Tests run: (?P<run>\d+), Failures: (?P<failures>\d+), Errors: (?P<errors>\d+), Skipped: (?P<skipped>\d+)"
)
_MVN_IN_CLASS = re.compile(r" (?:--|-) in (?P<cls>[\w.$]+)$")
# Surefire 2.x (and Kotlin builds on it) names the class on a line of its own first: "Running com.x.CalcTest"
_MVN_RUNNING = re.compile(r"^(?:\[INFO\] )?Running (?P<cls>[\w.$]+)$")
# Surefire 3: "[ERROR] com.x.CalcTest.fails -- Time elapsed: 0.01 s <<< FAILURE!"; 2.x: "fails(com.x.CalcTest)  Time..."
_MVN_METHOD = re.compile(
    r"^(?:\[\w+\] )?(?:(?P<cls>[\w.$]+)\.(?P<method>[\w$\[\]]+)|(?P<method2>[\w$]+)\((?P<cls2>[\w.$]+)\))"
    r"(?:\(\))?\s+(?:--\s+)?Time elapsed: .*<<< (?P<word>FAILURE|ERROR)!$"
)
# A multi-module build's reactor summary: "[INFO] Piranha - HTTP ........ FAILURE [  1.241 s]"
_MVN_MODULE = re.compile(
    r"^\[INFO\] (?P<name>.+?) \.{2,} ?(?P<word>SUCCESS|FAILURE|SKIPPED)\b"
)
_MVN_WORD = {"SUCCESS": P, "FAILURE": F, "SKIPPED": S}
# One test per mvn call, as SWE-bench's Java tasks run them: the shell trace names it ("+ mvn test
# -Dtest=com.x.CalcTest#adds") and the build's result is its status.
_MVN_ONE_TEST = re.compile(r"-Dtest=(?P<name>\S+)")
_MVN_BUILD = re.compile(r"^(?:\[\w+\] )?BUILD (?P<word>SUCCESS|FAILURE)$")
_maven_reports = junit_in_log("{classname}.{name}")


def _class_status(counts: re.Match[str]) -> Status:
    if int(counts["failures"]) + int(counts["errors"]):
        return F
    return S if counts["run"] == counts["skipped"] else P


def parse_maven(text: str) -> dict[str, Status]:
    """Statuses from ``mvn test`` console output. Surefire prints a line per test class and one per
    failing method, never per passing method: classes are keyed ``com.x.CalcTest`` (FAILED when any
    of its tests failed or errored), failing methods ``com.x.CalcTest.fails``, as SWE-rebench's
    ``parse_java_mvn`` keys them. Also read: reactor summary lines (modules, SWE-rebench's
    ``parse_java_mvn_v2``), a ``-Dtest=NAME`` command followed by its build result (SWE-bench's
    ``parse_log_maven``), and Surefire XML reports printed into the log, which name every method.

    Surefire from 2.20 ends each class's count line with `` - in com.x.CalcTest``; in a log that has
    such lines a count line without the class (the run's total, or one a test printed after printing
    ``Running com.x.Ghost``) names no class. Older Surefire names the class on the ``Running`` line."""
    statuses: dict[str, Status] = {}
    running: str | None = None
    one_test: str | None = None
    lines = [line.strip() for line in decolor(text).splitlines()]
    named = any(_MVN_COUNTS.search(line) and _MVN_IN_CLASS.search(line) for line in lines)
    for line in lines:
        if (start := _MVN_RUNNING.match(line)) is not None:
            running = start["cls"]
        elif (counts := _MVN_COUNTS.search(line)) is not None:
            in_class = _MVN_IN_CLASS.search(line)
            cls = in_class["cls"] if in_class else None if named else running
            if cls is not None:
                record(statuses, cls, _class_status(counts))
            running = None
        elif (method := _MVN_METHOD.match(line)) is not None:
            test_id = f"{method['cls'] or method['cls2']}.{method['method'] or method['method2']}"
            record(statuses, test_id, E if method["word"] == "ERROR" else F)
        elif (module := _MVN_MODULE.match(line)) is not None:
            record(statuses, module["name"], _MVN_WORD[module["word"]])
        elif (build := _MVN_BUILD.match(line)) is not None and one_test is not None:
            record(statuses, one_test, _MVN_WORD[build["word"]])
            one_test = None
        if line.startswith("+") and (named := _MVN_ONE_TEST.search(line)) is not None:
            one_test = named["name"]
    for test_id, status in _maven_reports(text).items():
        record(statuses, test_id, status)
    return statuses


# ---------------------------------------------------------------------------------------- Gradle, Ant

# Gradle with test events logged (SWE-bench's init script): "com.x.CalcTest > adds PASSED",
# "com.x.CalcTest > fails FAILED", "com.x.CalcTest > skipped SKIPPED"; a failed task's line in the
# plain console (":test FAILED", from Gradle 5 "> Task :test FAILED") is no test.
# The name grows a blank run and a character at a time, atomically (``.*?\s+`` rescanned a run of
# blanks from each of its positions: quadratic in a long one); it ends on a character either way.
parse_gradle = word_lines(
    r"^(?P<name>[^>\s:](?>\s*\S)*?)\s++(?P<word>PASSED|FAILED|SKIPPED)(?:\s+\(\d+(?:\.\d+)?s\))?$",
    {"PASSED": P, "FAILED": F, "SKIPPED": S},
)
# Ant's JUnit task with a one-line-per-test formatter (Lombok): "[junit] [PASS] name", "[FAIL]", "[ERR]"
parse_ant = word_lines(
    r"^\[junit\]\s+\[(?P<word>PASS|FAIL|ERR)\]\s+(?P<name>.+)$",
    {"PASS": P, "FAIL": F, "ERR": E},
)

# ---------------------------------------------------------------------------------------- Scala

_SCALATEST = re.compile(
    r"^\[info\] - (?P<name>.+?)(?: (?:\*\*\*|!!!) (?P<word>FAILED|CANCELED|IGNORED|PENDING) (?:\*\*\*|!!!))?"
    r"(?: \([^()]*\))?$"
)
_SCALATEST_WORD = {"FAILED": F, "CANCELED": S, "IGNORED": S, "PENDING": S}
_SCALATEST_SUITE = re.compile(r"^\[info\] (?P<suite>[A-Z]\S*:)$")


def scalatest(with_suite: bool) -> Parser:
    """A parser for ScalaTest's sbt output: ``[info] - adds (5 milliseconds)``, ``*** FAILED ***``,
    ``!!! CANCELED !!!``, ``!!! IGNORED !!!``. Keys are the test text, or with ``with_suite`` the suite
    header line and the text (``CalcSpec:: adds``), as SWE-rebench's ``parse_log_scala_v3`` joins them."""

    def parse(text: str) -> dict[str, Status]:
        statuses: dict[str, Status] = {}
        suite: str | None = None
        for line in decolor(text).splitlines():
            line = line.strip()
            if (header := _SCALATEST_SUITE.match(line)) is not None:
                suite = header["suite"]
            elif (test := _SCALATEST.match(line)) is not None:
                name = (
                    f"{suite}: {test['name']}" if with_suite and suite else test["name"]
                )
                record(
                    statuses, name, _SCALATEST_WORD[test["word"]] if test["word"] else P
                )
        return statuses

    return parse


# uTest/MUnit-style lines: "+ name 12ms", "x name 3ms" (SWE-rebench's parse_log_scala_v2)
parse_plus_cross = word_lines(
    r"^(?P<word>[+x])\s++(?P<name>(?>\s*\S)*?)\s++[\d.]++\s*+[mμn]?s$", {"+": P, "x": F}
)
parse_sbt_junit = junit_in_log("{classname} {name}")

# ---------------------------------------------------------------------------------------- Leiningen

_LEIN_NS = re.compile(r"^lein test (?::only )?(?P<ns>[\w.\-]+)")
# "FAIL in (fails) (core_test.clj:5)": clojure.test always names the test and its file and line
_LEIN_BAD = re.compile(r"^(?P<word>FAIL|ERROR) in \(.+\) \(\S+:\d+\)$")


def parse_lein(text: str) -> dict[str, Status]:
    """Statuses per namespace from ``lein test``: ``lein test my.ns`` starts a namespace (``:only
    my.ns/test`` runs one test of it), and a ``FAIL in``/``ERROR in`` report after it fails it."""
    statuses: dict[str, Status] = {}
    namespace: str | None = None
    for line in decolor(text).splitlines():
        line = line.strip()
        if (start := _LEIN_NS.match(line)) is not None:
            namespace = start["ns"].split("/")[0]
            record(statuses, namespace, P)
        elif (bad := _LEIN_BAD.match(line)) is not None and namespace is not None:
            record(statuses, namespace, F if bad["word"] == "FAIL" else E)
    return statuses
