"""What every log parser shares: colour stripping, the worst-outcome rule, JSON and JUnit found inside a
log, and ``word_lines``, the one implementation behind the many formats that print one line per test."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from harness.records import Status

Parser = Callable[[str], dict[str, Status]]

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")

# A test reported twice (a failure and then a teardown error, a pass and then a failed subtest) ends
# with its worst outcome; PASSED ranks lowest so a forged or stray "pass" line can never hide a failure.
SEVERITY = {
    Status.PASSED: 0,
    Status.XPASS: 1,
    Status.XFAIL: 2,
    Status.SKIPPED: 3,
    Status.FAILED: 4,
    Status.ERROR: 5,
}

P, F, E, S, XF, XP = (
    Status.PASSED,
    Status.FAILED,
    Status.ERROR,
    Status.SKIPPED,
    Status.XFAIL,
    Status.XPASS,
)


def decolor(text: str) -> str:
    """Drop ANSI escape sequences and carriage returns, which runners add around status words."""
    return _ANSI.sub("", text).replace("\r", "")


def record(statuses: dict[str, Status], test_id: str, status: Status) -> None:
    """Store ``status`` for ``test_id`` unless a worse outcome is already known for it."""
    known = statuses.get(test_id)
    if known is None or SEVERITY[status] >= SEVERITY[known]:
        statuses[test_id] = status


def word_lines(
    pattern: str, words: Mapping[str, Status], *, strip: bool = True
) -> Parser:
    """A parser for formats that print one result line per test: ``pattern`` matches such a line
    (after colours are dropped and, with ``strip``, surrounding blanks) with the groups ``name`` and
    ``word``, and ``words`` maps the runner's result word to a status. Lines whose word is not in
    ``words`` name no result."""
    regex = re.compile(pattern)

    def parse(text: str) -> dict[str, Status]:
        statuses: dict[str, Status] = {}
        for line in decolor(text).splitlines():
            match = regex.match(line.strip() if strip else line.rstrip())
            if match is not None and match["word"] in words and match["name"].strip():
                record(statuses, match["name"].strip(), words[match["word"]])
        return statuses

    return parse


def json_documents(text: str) -> Iterator[dict[str, Any]]:
    """Every JSON object in ``text`` that starts on a line of its own (reporters print around them)."""
    decoder = json.JSONDecoder()
    for match in re.finditer(r"^\{", text, re.MULTILINE):
        try:
            document, _ = decoder.raw_decode(text, match.start())
        except json.JSONDecodeError:
            continue
        if isinstance(document, dict):
            yield document


def json_lines(text: str) -> Iterator[dict[str, Any]]:
    """Each one-line JSON object in ``text`` (event streams: ``go test -json``, Dart's ``--reporter json``)."""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(event, dict):
                yield event


# ---------------------------------------------------------------------------------------- JUnit in a log


def junit_status(case: ET.Element) -> Status:
    """The outcome of one ``<testcase>``; a non-strict XPASS is written as a plain pass and stays PASSED."""
    children = {child.tag: child for child in case}
    if "error" in children:
        return Status.ERROR
    if "failure" in children:
        return Status.FAILED
    if "skipped" in children:
        return (
            Status.XFAIL
            if children["skipped"].get("type") == "pytest.xfail"
            else Status.SKIPPED
        )
    return Status.PASSED


_JUNIT_START = re.compile(r"<testsuites?\b")
_JUNIT_END = re.compile(
    r"</testsuites>|</testsuite>(?!\s*<testsuite\b|\s*</testsuites>)"
)


def junit_documents(text: str) -> Iterator[ET.Element]:
    """Each JUnit report a test command printed (``cat target/surefire-reports/*.xml``), in order."""
    pos = 0
    while (start := _JUNIT_START.search(text, pos)) is not None:
        end = _JUNIT_END.search(text, start.end())
        if end is None:
            return
        pos = end.end()
        try:
            yield ET.fromstring(text[start.start() : end.end()])
        except ET.ParseError:
            continue  # interleaved with other output: its tests count as not run


def junit_in_log(key: str) -> Parser:
    """A parser for JUnit reports printed into the log, keying each test by the ``key`` template over
    ``classname`` and ``name`` as the corpus parser of that name does (``{classname}::{name}`` for
    SWE-rebench's combined reports, ``{classname} {name}`` for its ``parse_log_junit``,
    ``{name} ({classname})`` for Gradle's); a test without a classname is keyed by its name."""

    def parse(text: str) -> dict[str, Status]:
        statuses: dict[str, Status] = {}
        for root in junit_documents(text):
            for case in root.iter("testcase"):
                classname, name = case.get("classname") or "", case.get("name") or ""
                test_id = (
                    key.format(classname=classname, name=name) if classname else name
                )
                record(statuses, test_id, junit_status(case))
        return statuses

    return parse
