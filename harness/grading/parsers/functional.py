"""Parsers for functional languages' test runners: Elixir (ExUnit), Haskell (tasty, Hspec), OCaml (Alcotest, dune)."""

from __future__ import annotations

import re

from harness.grading.parsers.common import (
    E,
    F,
    P,
    Parser,
    S,
    decolor,
    record,
    word_lines,
)
from harness.records import Status

# ---------------------------------------------------------------------------------------- Elixir

_EXUNIT_DONE = re.compile(
    r"^\* test (?P<name>.+?) \((?:(?P<skip>skipped|excluded)|[\d.]+ms)\) \[L#\d+\]$"
)
_EXUNIT_FAILURE = re.compile(r"^\d+\) test (?P<name>.+) \([\w.]+\)$")


def parse_exunit(text: str) -> dict[str, Status]:
    """Statuses from ``mix test --trace``: ``* test adds (0.01ms) [L#6]`` when a test ends (its start
    line, without a time, is overwritten in a terminal by a carriage return), ``(skipped)`` or
    ``(excluded)``, and a failure report ``1) test fails (CalcTest)`` for each failed test. Keyed by
    the test name (describe block included), as SWE-rebench's ``parse_log_elixir`` keys it."""
    statuses: dict[str, Status] = {}
    for line in decolor(text.replace("\r", "\n")).splitlines():
        line = line.strip()
        if (done := _EXUNIT_DONE.match(line)) is not None:
            record(statuses, done["name"], S if done["skip"] else P)
        elif (failure := _EXUNIT_FAILURE.match(line)) is not None:
            record(statuses, failure["name"], F)
    return statuses


# ---------------------------------------------------------------------------------------- Haskell

_TASTY = re.compile(r"^\s*(?P<name>\S.*?):\s+(?P<word>OK|FAIL|ERROR|SKIP|PENDING)\b")
_HSPEC_MARK = re.compile(
    r"^\s*(?:(?P<mark>[✓✔✗✘]) (?P<name>.+?)(?: \([\d.]+m?s\))?|(?P<bname>\S.*?) \[(?P<bmark>[✓✔✗✘‐])\])$"
)
_HUNIT = re.compile(r"^### (?P<word>Failure|Error) in:\s+(?P<name>.+)$")
_HASKELL_WORD = {"OK": P, "FAIL": F, "ERROR": E, "SKIP": S, "PENDING": S, "Failure": F, "Error": E,
                 "✓": P, "✔": P, "✗": F, "✘": F, "‐": S}  # fmt: skip


def parse_haskell(text: str) -> dict[str, Status]:
    """Statuses from tasty (``  adds: OK (0.01s)``), Hspec with check marks (``✔ adds``, ``adds [✘]``,
    ``later [‐]`` pending)
    and HUnit (``### Failure in: 1:adds``, ``### Error in:   2:boom``), keyed by the test's own name
    (HUnit's path) as SWE-rebench's ``parse_log_haskell`` keys it. HUnit's text runner redraws its
    ``Cases: 5  Tried: 1 ...`` counter with carriage returns before each report, so a carriage return
    ends a line here."""
    statuses: dict[str, Status] = {}
    for line in decolor(text.replace("\r", "\n")).splitlines():
        line = line.rstrip()
        if (tasty := _TASTY.match(line)) is not None:
            record(statuses, tasty["name"].strip(), _HASKELL_WORD[tasty["word"]])
        elif (hspec := _HSPEC_MARK.match(line)) is not None:
            record(
                statuses,
                (hspec["name"] or hspec["bname"]).strip(),
                _HASKELL_WORD[hspec["mark"] or hspec["bmark"]],
            )
        elif (hunit := _HUNIT.match(line)) is not None:
            record(statuses, hunit["name"].strip(), _HASKELL_WORD[hunit["word"]])
    return statuses


_HSPEC_INLINE = re.compile(
    r"^(?P<name>.+?)(?: (?P<fail>FAILED) \[\d+\]| (?P<skip>PENDING|SKIPPED)\b.*)?$",
    re.IGNORECASE,
)
_HSPEC_FAILURE = re.compile(r"^\s+\d+\) (?P<path>.+)$")


def parse_hspec_tree(text: str) -> dict[str, Status]:
    """Statuses from Hspec's default (specdoc) output: a tree indented two spaces a level, a leaf being
    an example (``adds FAILED [1]``, ``later PENDING``, or from Hspec 2.8 ``later`` followed by a deeper
    ``# PENDING: reason`` line), keyed by its path joined with ``.`` as SWE-rebench's
    ``parse_log_haskell_v2`` keys it; the ``Failures:`` list confirms failures (``1) Calc, add, fails``,
    from Hspec 2.8 ``1) Calc.add fails``). The tree starts after ``Test suite ...: RUNNING...`` and ends
    at ``Failures:`` or the summary."""
    lines = decolor(text).splitlines()
    start = next(
        (
            i + 1
            for i, line in enumerate(lines)
            if line.startswith("Test suite ") and "RUNNING" in line
        ),
        0,
    )
    tree: list[tuple[int, str]] = []
    failures: list[str] = []
    in_failures = False
    for line in lines[start:]:
        if line.strip() == "Failures:":
            in_failures = True
        elif in_failures and (failure := _HSPEC_FAILURE.match(line)) is not None:
            failures.append(failure["path"].strip())
        elif (
            not in_failures
            and line.strip()
            and not re.match(
                r"^(Finished in|\d+ examples?,|Randomized|Test suite)", line
            )
        ):
            tree.append((len(line) - len(line.lstrip()), line.strip()))
    statuses: dict[str, Status] = {}
    path: list[str] = []
    # a failure list entry as Hspec 2.8 spells it ("Calc.add fails") -> the example's key
    spelled: dict[str, str] = {}
    for i, (indent, content) in enumerate(tree):
        if content.startswith("# PENDING"):
            continue
        match = _HSPEC_INLINE.match(content)
        assert match is not None  # the pattern matches any text
        del path[indent // 2 :]
        path.append(match["name"])
        following = tree[i + 1] if i + 1 < len(tree) else None
        pending = following is not None and following[1].startswith("# PENDING")
        if following is not None and following[0] > indent and not pending:
            continue  # a describe block
        key = ".".join(path)
        spelled[f"{'.'.join(path[:-1])} {path[-1]}"] = key
        record(statuses, key, F if match["fail"] else S if match["skip"] or pending else P)
    for entry in failures:
        key = ".".join(part.strip() for part in entry.split(",")) if "," in entry else spelled.get(entry, entry)
        record(statuses, key, F)
    return statuses


# ---------------------------------------------------------------------------------------- OCaml

# Alcotest: "[OK]          calc          0   adds.", "[FAIL]        calc          1   fails.", "[SKIP] ...";
# the first failure of a run is marked "> [FAIL] ..."
parse_alcotest = word_lines(
    r"^(?:> )?\[(?P<word>OK|PASS|FAIL|FAILED|ERROR|ERR|SKIP|SKIPPED|TODO)\]\s+(?P<name>\S.*?\s+\d+\s+.+)$",
    {
        "OK": P,
        "PASS": P,
        "FAIL": F,
        "FAILED": F,
        "ERROR": E,
        "ERR": E,
        "SKIP": S,
        "SKIPPED": S,
        "TODO": S,
    },
)


def _collapse(parse: Parser) -> Parser:
    """``parse`` with runs of blanks in ids collapsed to one, as SWE-rebench keys Alcotest's aligned columns."""
    return lambda text: {re.sub(r"\s+", " ", k): v for k, v in parse(text).items()}


parse_alcotest = _collapse(parse_alcotest)
# Any "[WORD] name" line (SWE-rebench's parse_log_ocaml_v3); its whole body, blanks collapsed, is the id
parse_bracket_word = _collapse(word_lines(
    r"^(?:> )?\[(?P<word>[A-Za-z]+)\]\s+(?P<name>.+)$",
    {**{w: P for w in ("OK", "PASS", "PASSED", "SUCCESS")}, **{w: S for w in ("SKIP", "SKIPPED", "TODO", "PENDING", "DISABLED")},
     **{w: F for w in ("FAIL", "FAILED", "ERROR", "EXCEPTION", "CRASH", "FATAL", "KO", "PANIC")}},
))  # fmt: skip
# "PASSED name", "FAILED name  details" (ocamlbuild suites, SWE-rebench's parse_log_ocaml_v4/v5)
parse_word_first = word_lines(
    r"^(?P<word>PASSED|FAILED|SKIPPED|ERROR|XFAIL)\s+(?P<name>.+?)(?:\s{2,}.*)?$",
    {"PASSED": P, "FAILED": F, "SKIPPED": S, "ERROR": E, "XFAIL": Status.XFAIL},
)

_DUNE_RUNNING = re.compile(r"^Running\[(?P<id>\d+)\]: \((?P<command>.+)\)$")
_DUNE_OUTPUT = re.compile(r"^Output\[(?P<id>\d+)\]:")
# dune's report of a failed action, its output after the "$ (command)" line
_DUNE_FAILED = re.compile(r"^Command \[(?P<id>\d+)\] (?:exited with code \d+|got signal \w+):$")


def parse_dune(text: str) -> dict[str, Status]:
    """Statuses per test executable from ``dune test --verbose``'s ``Running[N]: (cd ... && ./t.exe)``
    and ``Output[N]:`` blocks: an output line with FAIL/ERROR/EXCEPTION/CRASH/FATAL fails the
    executable, SKIP skips it, and one that printed output without them passed. dune prints the
    output of an action that failed under ``Command [N] exited with code 1:`` instead, which fails it."""
    statuses: dict[str, Status] = {}
    commands: dict[str, str] = {}
    current: str | None = None
    for line in decolor(text).splitlines():
        line = line.strip()
        if (running := _DUNE_RUNNING.match(line)) is not None:
            binary = (
                running["command"].split("&&")[-1].strip().removeprefix("exec ").split()
            )
            commands[running["id"]] = (
                binary[0].rsplit("/", 1)[-1] if binary else f"run_{running['id']}"
            )
            current = None
        elif (output := _DUNE_OUTPUT.match(line)) is not None:
            current = commands.get(output["id"])
        elif (failed := _DUNE_FAILED.match(line)) is not None:
            current = commands.get(failed["id"])
            if current is not None:
                record(statuses, current, F)
        elif current is not None and line:
            upper = line.upper()
            bad = any(
                token in upper
                for token in ("FAIL", "ERROR", "EXCEPTION", "CRASH", "FATAL")
            )
            record(statuses, current, F if bad else S if "SKIP" in upper else P)
    return statuses
