"""Parsers for JavaScript test runners: the indented result trees of Jest, Mocha, Vitest, Karma and
``node --test`` reporters, Jest's per-file lines, Karma's failure lines, TAP, and the JSON reports
of Jest and Mocha (preferred wherever a task's command writes them)."""

from __future__ import annotations

import re

from harness.grading.parsers.common import (
    E,
    F,
    P,
    Parser,
    S,
    decolor,
    json_documents,
    record,
    word_lines,
)
from harness.records import Status

# ---------------------------------------------------------------------------------------- result trees

# The marks reporters put before a test title, across runners and versions: Jest (✓ ✕ ○ ✎), Mocha
# (✔, or ✓ before v7, "-" pending, "N)" failing), Vitest (✓ × ↓), Karma's spec and mocha reporters
# (✔ ✖ ✓ ✗), node --test's spec reporter (✔ ✖ ﹣). Jest writes "skipped "/"todo " after its mark.
_TREE_MARKS = {"✓": P, "✔": P, "✕": F, "✖": F, "✗": F, "✘": F, "×": F, "○": S, "◌": S, "◦": S, "⚪": S,
               "↓": S, "﹣": S, "-": S}  # fmt: skip
_TREE_TEST = re.compile(
    r"^(?:(?P<mark>[" + "".join(_TREE_MARKS) + r"])|(?P<number>\d+)\)) (?P<title>.+)$"
)
_TREE_PREFIX = ("skipped ", "todo ")
# "(3 ms)", "(72ms)", "(1.2 s)" (Jest, Mocha), " 12ms" and " [skipped]" (Vitest)
_TREE_SUFFIX = re.compile(
    r"(?:\s\(\d+(?:\.\d+)?\s*m?s\)|\s\d+(?:\.\d+)?\s*m?s|\s\[skipped\])$"
)
# Where a tree ends and failure details begin: Mocha's "N passing", Jest's "● suite › test" and
# console blocks, Karma's summary. A Jest file header at the left margin starts the next tree.
_TREE_DETAILS = re.compile(
    r"^\s*(?:\d+ passing\b|● |console\.\w+$|SUMMARY:|TOTAL:|Executed \d+ of)"
)
_TREE_FILE = re.compile(r"^(?:PASS|FAIL) ")
# karma-mocha-reporter gives a skipped test the pass mark and this suffix: "✔ later (skipped)"
_KARMA_SKIPPED = " (skipped)"


def tree_reporter(joiner: str | None) -> Parser:
    """A parser for reporters that print tests as an indented tree under their describe blocks.

    A test is keyed by its title alone when ``joiner`` is None (as Jest's and Mocha's SWE-bench
    parsers key them), else by its describe path and title joined with ``joiner`` (`` - `` for Calypso,
    ``.`` for highlight.js, `` > `` for Karma). Lines at the left margin are not part of any tree
    (runners indent it), so output a test prints there is ignored; output printed inside the tree can
    still misplace the path of the tests after it, which the JSON reporters avoid.
    """

    def parse(text: str) -> dict[str, Status]:
        statuses: dict[str, Status] = {}
        suites: list[tuple[int, str]] = []
        details = False
        for line in decolor(text).splitlines():
            line = line.rstrip()
            stripped = line.lstrip()
            if _TREE_FILE.match(line):
                details, suites = False, []
            if _TREE_DETAILS.match(line):
                details = True
            if details or not stripped or stripped == line:
                continue
            indent = len(line) - len(stripped)
            while suites and suites[-1][0] >= indent:
                suites.pop()
            test = _TREE_TEST.match(stripped)
            if test is None:
                suites.append((indent, stripped))
                continue
            title = _TREE_SUFFIX.sub("", test["title"]).strip()
            status = F if test["number"] else _TREE_MARKS[test["mark"]]
            if status is P and title.endswith(_KARMA_SKIPPED):
                title, status = title.removesuffix(_KARMA_SKIPPED), S
            if test["mark"] in ("○", "✎"):
                title = next(
                    (title[len(p) :] for p in _TREE_PREFIX if title.startswith(p)),
                    title,
                )
            test_id = (
                title
                if joiner is None
                else joiner.join([*(name for _, name in suites), title])
            )
            record(statuses, test_id, status)
        return statuses

    return parse


parse_jest = tree_reporter(None)

# Jest without --verbose, one line per test file: "PASS src/a.test.js (1.2 s)", "FAIL src/b.test.js"
parse_jest_files = word_lines(
    r"^(?P<word>PASS|FAIL)\s+(?P<name>.+?)(?:\s\(\d+(?:\.\d+)?\s*m?s\))?$",
    {"PASS": P, "FAIL": F},
)

# Karma's progress and dots reporters name only failing tests, after the browser:
# "Chrome Headless 120.0.0 (Linux x86_64) Chart.helpers should work FAILED". The browser is read up to
# its first parenthesis, its version right before it: nested repeats over the words before it
# backtracked for ever on a long line of words.
parse_karma_failures = word_lines(
    r"^[^()]*[\d.] \([^)]*\) (?P<name>.+?) ?(?P<word>FAILED)$",
    {"FAILED": F},
)

# ---------------------------------------------------------------------------------------- TAP

_TAP_RESULT = re.compile(
    r"^(?P<ok>not ok|ok)\b(?: (?P<number>\d+))?(?P<rest>.*?)(?P<open> ?\{)?$"
)
_TAP_DIRECTIVE = re.compile(r"\s+#\s*(?P<word>skip|todo)\b.*$", re.IGNORECASE)
_TAP_COMMENT = re.compile(r"\s+#.*$")
# A key joins the titles of this many enclosing subtest blocks at most: joining them all made a log
# of a million "{" lines quadratic (no real suite nests this deep)
MAX_NESTING = 64


def tap(nested: bool) -> Parser:
    """A parser for TAP (``ok 1 - title``, ``not ok 2 title # TODO``) as tape, node-tap, ``node --test
    --test-reporter=tap``, QUnit and Mocha's TAP reporter write it.

    A result with a SKIP or TODO directive is SKIPPED (TAP does not count a TODO failure). Flat keys
    are the text after the test number, as SWE-bench keys them; ``nested`` keys drop the ``- `` and
    what follows `` #`` (node-tap's ``# time=12ms``) and join the titles of enclosing buffered
    subtests, ``{ }`` blocks, with `` :: ``, as SWE-rebench's ``parse_log_js_3`` does. A block opens
    with ``{`` at the end of its result line or, after a failed one's YAML diagnostics, on a line of
    its own (as node-tap writes it and its tap-parser reads it).
    """

    def parse(text: str) -> dict[str, Status]:
        statuses: dict[str, Status] = {}
        blocks: list[str] = []
        last: str | None = None  # the title of the latest result, which a "{" line alone opens
        for line in decolor(text).splitlines():
            line = line.strip()
            if nested and line == "{":
                if last is not None:
                    blocks.append(last)
                last = None
                continue
            if nested and line and not line.strip("}"):
                del blocks[len(blocks) - line.count("}") :]
                last = None
                continue
            result = _TAP_RESULT.match(line)
            if result is None or not result["number"]:
                continue
            rest = result["rest"].strip()
            directive = _TAP_DIRECTIVE.search(rest)
            title = rest[: directive.start()] if directive else rest
            if nested:
                title = _TAP_COMMENT.sub("", title.removeprefix("- ")).strip()
            status = S if directive else P if result["ok"] == "ok" else F
            record(statuses, " :: ".join([*blocks[:MAX_NESTING], title]) if nested else title, status)
            last = title
            if nested and result["open"]:
                blocks.append(title)
                last = None
        return statuses

    return parse


# ---------------------------------------------------------------------------------------- Deno (Quarto)

_DENO_RESULT = re.compile(r"^(?P<name>.+?) \.\.\. (?P<word>ok|FAILED|ignored)\b")
_DENO_WORD = {"ok": P, "FAILED": F, "ignored": S}
# Quarto's temporary files in test names, numbered in order of appearance as SWE-bench 5 keys them
_QUARTO_TMP = (re.compile(r"/tmp/(\w+)\.qmd"), re.compile(r"/tmp/(\w+)/"))


def parse_quarto_deno(text: str) -> dict[str, Status]:
    """Statuses from ``deno test`` as Quarto's suite names its tests (``[smoke] > render > x.qmd ...
    ok (3ms)``, ``[unit] > lint ... FAILED (2ms)``), keyed as SWE-bench's ``parse_log_quarto_cli``:
    only ``[smoke]``/``[unit]`` tests (not their steps), the name before `` ... ``, a temporary
    ``/tmp/<x>.qmd`` file or ``/tmp/<x>/`` folder replaced by ``/tmp/<n>``, n counting them in order of
    appearance. What a test printed, between ``------- output -------`` and ``----- output end -----``,
    and the ``ERRORS``/``FAILURES`` report after the results are not read."""
    statuses: dict[str, Status] = {}
    tmp: dict[str, int] = {}
    output = False
    for line in decolor(text).splitlines():
        line = line.rstrip()
        if line.strip() in ("ERRORS", "FAILURES"):
            break
        if line == "------- output -------":
            output = True
        elif line == "----- output end -----":
            output = False
        elif not output and (result := _DENO_RESULT.match(line)) is not None:
            name = result["name"].strip()
            if not re.search(r"\[(?:smoke|unit)\]", name):
                continue
            for pattern in _QUARTO_TMP:
                if (found := pattern.search(name)) is not None:
                    number = tmp.setdefault(found[0], len(tmp))
                    name = pattern.sub(f"/tmp/{number}", name)
            record(statuses, name, _DENO_WORD[result["word"]])
    return statuses


# ---------------------------------------------------------------------------------------- JSON reports

_JEST_TRANSFORMED = re.compile(
    r"^\[(?P<word>PASSED|FAILED|SKIPPED|PENDING|TODO)\] (?P<name>.+)$"
)
_JS_STATUS = {
    "passed": P,
    "failed": F,
    "pending": S,
    "skipped": S,
    "todo": S,
    "disabled": S,
}


def parse_jest_json(text: str) -> dict[str, Status]:
    """Statuses from Jest's (or Vitest's) ``--json`` report, keyed by full name (describe path and
    title), or from its usual jq rendering, one ``[PASSED] full name`` line per test."""
    statuses: dict[str, Status] = {}
    for document in json_documents(text):
        for suite in document.get("testResults") or []:
            for case in suite.get("assertionResults") or []:
                record(
                    statuses, case["fullName"], _JS_STATUS.get(case.get("status"), E)
                )
    for line in decolor(text).splitlines():
        match = _JEST_TRANSFORMED.match(line.strip())
        if match is not None:
            record(statuses, match["name"], _JS_STATUS[match["word"].lower()])
    return statuses


def parse_mocha_json(text: str) -> dict[str, Status]:
    """Statuses from Mocha's ``--reporter json`` output (also inside Cypress and Lighthouse logs),
    keyed by full title."""
    statuses: dict[str, Status] = {}
    for document in json_documents(text):
        if "stats" not in document:
            continue
        for key, status in (("passes", P), ("failures", F), ("pending", S)):
            for case in document.get(key) or []:
                record(statuses, case["fullTitle"], status)
    return statuses
