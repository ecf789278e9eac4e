"""Parsers for Python test runners: pytest (text summary and JUnit XML), unittest and Django, SymPy's
``bin/test``, and R2E-Gym's own pytest parser.

Every parser reads only the part of the output that the test runner itself writes (pytest's short
test summary, unittest's result lines, the JUnit XML file) and, when one id is reported twice, keeps
the worse outcome, so that text printed by the code under test can add noise but never turn a real
failure into a pass. Ids follow the runner's own spelling: pytest node ids
(``tests/test_x.py::TestA::test_b[a b-1]``) for the pytest family and JUnit, dotted paths
(``app.tests.TestX.test_foo``) for unittest and Django. ``parse_r2e`` is the exception: it reproduces
R2E-Gym's parser bug for bug, because R2E-Gym's recorded expectations were produced by it.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Container, Mapping

from harness.grading.parsers.common import decolor, junit_status, record
from harness.records import Status

# ---------------------------------------------------------------------------------------- pytest text

_SUMMARY_RULE = re.compile(r"^=+ short test summary info =+$")
# The final statistics line closes a session: "=== 2 failed, 3 passed in 0.51s ===", "-q" drops the
# "=" frame, pytest < 6 wrote "in 0.51 seconds".
_SESSION_END = re.compile(
    r"^=*\s*(?:no tests ran|\d+ \w+.*?) in \d+(?:\.\d+)? ?s(?:econds)?\b"
)
_SUMMARY_LINE = re.compile(r"^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (.+)$")
_SKIP_SUMMARY = re.compile(
    r"^SKIPPED \[\d+\] "
)  # "SKIPPED [2] path:line: reason" names no test
# A failed subtest: "SUBFAILED[msg] (i=1) id - ..." (pytest 9), "[msg] (i=1) SUBFAIL id - ..." (pytest-subtests
# on pytest 7, the label first)
_SUBTEST_FAILED = re.compile(r"(?:^|[\])] )SUBFAIL(?:ED)?\b")
# where the id starts in either: after pytest 9's word and its description, or after pytest-subtests' word
_SUBTEST_ID = re.compile(r"^SUBFAILED(?:\[[^\]]*\])?(?: ?\([^)]*\))? |(?:^|[\])] )SUBFAIL ")
_MESSAGE_SEP = " - "


def _outer_summary(lines: list[str]) -> list[str]:
    """The lines of the outermost pytest session's short test summary: the last one in the log.

    A section runs from the summary rule to the session's statistics line, pytest's last line.
    Whatever follows the log's last such line is not pytest's (an ``atexit`` hook of the code under
    test prints there) and is never read; a log without one (a run cut short) is read to its end. A test that runs pytest in process
    (``pytester``, ``pytest.main``) prints the inner session's whole output, summary included, into
    the outer log before the outer summary; a fake summary a test prints (with ``-s``) comes before
    it too. Of several sessions run one after another by one command only the last counts, as only
    the last one's JUnit report survives at the shared report path.
    """
    end = next((i for i in range(len(lines) - 1, -1, -1) if _SESSION_END.match(lines[i])), len(lines))
    start = next((i for i in range(end - 1, -1, -1) if _SUMMARY_RULE.match(lines[i])), None)
    return [] if start is None else lines[start + 1 : end]


def _strip_message(rest: str, separator: str = _MESSAGE_SEP) -> str:
    """Cut the message pytest appends to an id at the first ``separator`` outside ``[...]``.

    An id with unbalanced brackets in its parameters (``test_p[[]``) has none; there the first
    separator right after a ``]`` ends the id. Linear in the line: brackets are counted between
    separators by ``str.count``, and the search jumps to the next bracket that can bring the depth
    back to 0.
    """
    depth, counted = 0, 0
    i = rest.find(separator)
    while i >= 0:
        depth += rest.count("[", counted, i) - rest.count("]", counted, i)
        counted = i
        if depth == 0:
            return rest[:i]
        closer = rest.find("]" if depth > 0 else "[", i)
        i = -1 if closer < 0 else rest.find(separator, closer)
    after_bracket = rest.find("]" + separator)  # no separator is outside brackets
    return rest if after_bracket < 0 else rest[: after_bracket + 1]


def _summary_entry(line: str) -> tuple[str, Status] | None:
    """``(id, status)`` for one summary line, or None for lines that name no test."""
    match = _SUMMARY_LINE.match(line)
    if match is None or _SKIP_SUMMARY.match(line):
        return None
    status = Status(match.group(1))
    rest = match.group(2)
    if (
        status is Status.PASSED
    ):  # never carries a message, so the id is taken whole, " - " and all
        return rest, status
    # pytest < 8 writes "XPASS id reason" without the " - "; ids have no space outside brackets
    return _strip_message(rest, " " if status is Status.XPASS else _MESSAGE_SEP), status


def _subtest_parent(line: str, known_ids: Container[str]) -> str | None:
    """The test a failed-subtest line (``SUBFAILED[msg] (params) id - message``, ``[msg] (params)
    SUBFAIL id - message``) belongs to, if pytest reported it too (it reports the parent itself).

    The id starts after the runner's word and its description, and ends where ``_strip_message``
    cuts; one lookup per line, whatever the line holds (matching every known id against every line
    made a crafted log quadratic). A description whose message holds ``]`` hides the id.
    """
    start = _SUBTEST_ID.search(line)
    if start is None:
        return None
    test_id = _strip_message(line[start.end() :])
    return test_id if test_id in known_ids else None


def parse_pytest(text: str) -> dict[str, Status]:
    """Statuses from the short test summary of ``pytest -rA`` output.

    Skipped tests appear only as ``SKIPPED [N] path:line: reason`` and so are absent from the map;
    the JUnit report names them. A failed subtest marks its parent test FAILED, which pytest 9's own
    summary does not do for ``unittest`` subtests (the parent is listed as PASSED).
    """
    statuses: dict[str, Status] = {}
    subtest_failures: list[str] = []
    lines = [line.rstrip() for line in decolor(text).splitlines()]
    for line in _outer_summary(lines):
        entry = _summary_entry(line)
        if entry is not None:
            record(statuses, *entry)
        elif _SUBTEST_FAILED.search(line):
            subtest_failures.append(line)
    for line in subtest_failures:
        parent = _subtest_parent(line, statuses)
        if parent is not None:
            record(statuses, parent, Status.FAILED)
    return statuses


# ---------------------------------------------------------------------------------------- JUnit XML


def _dotted(path: str) -> str:
    """A file path the way pytest's JUnit ``classname`` spells it: ``tests/test_x.py`` -> ``tests.test_x``."""
    return re.sub(r"\.py$", "", path.replace("/", "."))


def _module_path(module: str) -> str:
    """Best guess of the file behind a dotted module when the report has no ``file`` attribute."""
    return module.replace(".", "/") + ".py"


def _split_module(classname: str) -> str:
    """The module part of a dotted ``classname`` when no ``file`` says where it ends.

    pytest collects classes named ``Test*`` and modules are lower case by convention, so the module is
    everything before the first capitalised component.
    """
    parts = classname.split(".")
    end = next(
        (i for i, part in enumerate(parts) if i and part[:1].isupper()), len(parts)
    )
    return ".".join(parts[:end])


def _junit_id(case: ET.Element) -> str:
    """Rebuild the pytest node id that pytest's JUnit writer split into ``classname`` and ``name``.

    ``file`` is only trusted when it matches the start of ``classname``: for a test method inherited
    from a base class in another module it names that other module, not the collected one.
    """
    classname = case.get("classname", "")
    name = case.get("name", "")
    file = case.get("file")
    if (
        not classname or not name
    ):  # a collection error names the module or directory, not a test
        return file or _module_path(classname or name)
    if file and (
        classname == _dotted(file) or classname.startswith(_dotted(file) + ".")
    ):
        module, path = _dotted(file), file
    else:
        module = _split_module(classname)
        path = _module_path(module)
    classes = classname[len(module) :].split(".")[1:]
    return "::".join([path, *classes, name])


def parse_junit(xml: str) -> dict[str, Status]:
    """Statuses from a pytest JUnit XML report (xunit1 preferred; xunit2 ids are reconstructed).

    Raises ValueError when the text is not a JUnit report, so a truncated file is not read as "no tests".
    """
    try:
        root = ET.fromstring(xml)
    except ET.ParseError as exc:
        raise ValueError(f"not well-formed JUnit XML: {exc}") from exc
    if root.tag not in ("testsuites", "testsuite"):
        raise ValueError(
            f"not a JUnit report: root element is <{root.tag}>, not <testsuites> or <testsuite>"
        )
    statuses: dict[str, Status] = {}
    for case in root.iter("testcase"):
        record(statuses, _junit_id(case), junit_status(case))
    return statuses


# ---------------------------------------------------------------------------------------- unittest / Django

_UT_WORDS = r"ok|OK|FAIL|ERROR|skipped\b.*|expected failure|unexpected success"
# "test_foo (app.tests.TestX.test_foo)" (Python >= 3.11) or "test_foo (app.tests.TestX)" (older), a subtest's
# parameters after it, then " ... " and the result; a docstring's first line is printed instead of the dots.
_UT_DESCRIPTION = re.compile(
    r"\s*(?P<name>[^\s()]+) \((?P<where>[\w.]+)\)(?: \(.*?\))?(?P<dots> \.\.\.(?: |$))?"
)
_UT_WORD = re.compile(rf"(?P<word>{_UT_WORDS})")
_UT_RESULT = re.compile(rf" \.\.\. ?(?P<word>{_UT_WORDS})$")
_UT_HEADER = re.compile(
    r"^(?P<word>FAIL|ERROR|UNEXPECTED SUCCESS): (?P<name>[^\s()]+) \((?P<where>[\w.]+)\)"
)
# The runner's last line before its verdict ("OK", "FAILED (failures=1)"): unittest and Django print it
# once all results and failure reports are out.
_UT_RAN = re.compile(r"^Ran \d+ tests? in \d+(?:\.\d+)?s$")
_UT_STATUS = {
    "ok": Status.PASSED,
    "OK": Status.PASSED,
    "FAIL": Status.FAILED,
    "ERROR": Status.ERROR,
    "skipped": Status.SKIPPED,
    "expected failure": Status.XFAIL,
    "unexpected success": Status.XPASS,
    "UNEXPECTED SUCCESS": Status.XPASS,
}


def _unittest_id(name: str, where: str) -> str:
    """The dotted id for both description formats: the parenthesis holds the full path from 3.11 on."""
    return where if where == name or where.endswith(f".{name}") else f"{where}.{name}"


def _unittest_status(word: str) -> Status:
    """Map a result word; ``skipped 'reason'`` carries its reason after the word."""
    return _UT_STATUS["skipped" if word.startswith("skipped") else word]


def _described(line: str) -> tuple[list[str], int, bool]:
    """The tests described at the start of ``line``, where the rest of it starts, and whether a
    docstring line follows the last one.

    Several descriptions share a line before Python 3.11, where a test whose subtests failed prints
    no result word: ``test_sub (m.T) ... test_next (m.T) ... expected failure``.
    """
    ids: list[str] = []
    pos = 0
    while (match := _UT_DESCRIPTION.match(line, pos)) is not None:
        if not match["dots"] and match.end() != len(line):
            break
        ids.append(_unittest_id(match["name"], match["where"]))
        pos = match.end()
        if not match["dots"]:
            return ids, pos, True
    return ids, pos, False


def parse_unittest(text: str) -> dict[str, Status]:
    """Statuses from ``python -m unittest -v`` or Django ``runtests.py --verbosity 2`` output.

    A result word goes to the last described test still waiting for one: output written during the
    test (Django's "System check identified no issues") can push ``ok`` to a later line, a docstring's
    first line is printed between the description and the result, and a word with no test waiting
    (the bare ``ERROR`` of a failing ``setUpClass``/``setUpTestData``) belongs to no test. The
    ``FAIL:``/``ERROR:`` headers before the tracebacks name every failure exactly, so for a test they
    name they outrank the result words, which unittest prints on whatever line is current.

    Nothing after the log's last ``Ran N tests in`` line is read: the runner has reported every test
    by then, and what follows (the verdict, Django's teardown, an ``atexit`` hook of the code under
    test) names none. A log without one (a run cut short) is read to its end. Text the code under test
    prints before that line can only add tests or make one worse (``record`` keeps the worse status),
    and a forged result line is what the canaries are for.
    """
    words: dict[str, Status] = {}
    headers: dict[str, Status] = {}
    pending: str | None = None
    docstring_next = False
    lines = decolor(text).splitlines()
    end = next((i for i in range(len(lines) - 1, -1, -1) if _UT_RAN.match(lines[i].rstrip())), len(lines))
    for line in lines[:end]:
        line = line.rstrip()
        header = _UT_HEADER.match(line)
        if header is not None:
            record(
                headers,
                _unittest_id(header["name"], header["where"]),
                _UT_STATUS[header["word"]],
            )
            pending, docstring_next = (
                None,
                False,
            )  # tracebacks follow; their lines must not be read as results
            continue
        if (
            docstring_next
        ):  # the docstring is free text: only a result at its end counts
            docstring_next = False
            result = _UT_RESULT.search(line)
            word = result["word"] if result else None
        else:
            ids, pos, docstring_next = _described(line)
            pending = ids[-1] if ids else pending
            rest = line[pos:].strip()
            word = rest if _UT_WORD.fullmatch(rest) else None
        if word is not None and pending is not None:
            record(words, pending, _unittest_status(word))
            pending = None
    return words | headers


# ---------------------------------------------------------------------------------------- SymPy bin/test

# "test_name <word>" per test with --verbose; a skip prints its reason before "s", and the file's
# "[OK]"/"[FAIL]" verdict may follow the last test's word. T is a timeout, which the runner counts
# either as a skip or as an exception; it is taken as the worse.
_SYMPY_STATUS = {"ok": Status.PASSED, "F": Status.FAILED, "E": Status.ERROR, "T": Status.ERROR,
                 "f": Status.XFAIL, "X": Status.XPASS, "s": Status.SKIPPED, "w": Status.SKIPPED,
                 "K": Status.SKIPPED}  # fmt: skip
_SYMPY_WORD = r"(?P<word>ok|[FETfXswK])(?: +\[(?:OK|FAIL)\])?$"
_SYMPY_TEST = re.compile(rf"^(?P<name>test_\w+)(?: (?:.* )?{_SYMPY_WORD})?")
_SYMPY_BARE_WORD = re.compile(rf"^{_SYMPY_WORD}")


def parse_sympy(text: str) -> dict[str, Status]:
    """Statuses from SymPy's ``bin/test --verbose`` output, keyed by test function name as SWE-bench's
    labels are (a name in several files keeps its worst outcome). Output a test prints pushes its
    result word to a later line of its own, which goes to the test still waiting for one."""
    statuses: dict[str, Status] = {}
    pending: str | None = None
    for line in decolor(text).splitlines():
        line = line.strip()
        test = _SYMPY_TEST.match(line)
        if test is not None:
            pending = test["name"]
        word = test["word"] if test is not None else None
        if (
            test is None
            and pending is not None
            and (bare := _SYMPY_BARE_WORD.match(line)) is not None
        ):
            word = bare["word"]
        if word is not None and pending is not None:
            record(statuses, pending, _SYMPY_STATUS[word])
            pending = None
    return statuses


# ---------------------------------------------------------------------------------------- R2E-Gym

_R2E_MARKER = "short test summary info"


def _r2e_cut(key: str) -> str:
    return key.split(_MESSAGE_SEP)[0]


def r2e_keys(statuses: Mapping[str, Status]) -> dict[str, Status]:
    """R2E-Gym's reward-time key rule, applied to both its parsed and its expected map before they are
    compared: every key is cut at its first `` - `` (brackets or not), and where two keys collapse to
    one, the later key in sorted order gives the status."""
    return {_r2e_cut(key): statuses[key] for key in sorted(statuses)}


def parse_r2e(text: str) -> dict[str, Status]:
    """R2E-Gym's ``parse_log_pytest`` then its key rule (:func:`r2e_keys`), reproduced exactly because
    its expectations were recorded with them.

    Reads the text between the first and second ``short test summary info`` and classifies each line
    by substring (PASSED, else FAILED, else ERROR); XFAIL, XPASS and SKIPPED lines are dropped. The key
    is the part after the first ``::`` with ``::`` replaced by ``.``.
    """
    text = decolor(text)
    if _R2E_MARKER not in text:
        return {}
    statuses: dict[str, Status] = {}
    for line in text.split(_R2E_MARKER)[1].strip().split("\n"):
        for status in (Status.PASSED, Status.FAILED, Status.ERROR):
            if status.value in line:
                key = ".".join(line.split("::")[1:])
                statuses[key if status is Status.PASSED else _r2e_cut(key)] = status
                break
    return r2e_keys(statuses)


# ---------------------------------------------------------------------------------------- pytest by test name

_PYTEST_VERBOSE = re.compile(
    r"^(?P<id>\S+::\S+) (?P<word>PASSED|FAILED|SKIPPED|ERROR|XFAIL|XPASS)\b"
)


_PYTEST_SECTION = re.compile(r"^={3,} (?P<title>.+?) ={3,}$")


def parse_pytest_names(text: str) -> dict[str, Status]:
    """Statuses keyed by test name alone (the part after the last ``::``), from ``pytest -v``'s
    progress lines and the short test summary, as SWE-rebench's ``parse_log_cpp`` keys the pytest
    suites of C extensions. A name in several files or classes keeps its worst outcome. Progress lines
    are read only before the report's sections (``ERRORS``, ``FAILURES``, ``PASSES``, ...), where the
    output the tests printed is shown, until the next ``test session starts``."""
    statuses: dict[str, Status] = {}
    in_report = False
    for line in decolor(text).splitlines():
        line = line.strip()
        if (section := _PYTEST_SECTION.match(line)) is not None:
            in_report = section["title"] != "test session starts"
        elif not in_report and (match := _PYTEST_VERBOSE.match(line)) is not None:
            record(statuses, match["id"].rsplit("::", 1)[-1], Status(match["word"]))
    for test_id, status in parse_pytest(text).items():
        record(statuses, test_id.rsplit("::", 1)[-1], status)
    return statuses
