"""Every parser is linear in its input: a crafted log of each family, 10 MB, parses in bounded CPU time.

A parser runs on the host over whatever a candidate's code printed (up to the output cap), and on the
reports it wrote, so a parse that is quadratic in some input stalls the host for hours: matching every
known id against every ``SUBFAIL`` line did, as did regexes that rescanned a run of blanks from each
of its positions, nested repeats over words, and keys joining a million enclosing blocks. The bound is
CPU time (this machine is shared), generous (``SWEDECK_PARSE_BOUND_S``, default 2 s per 10 MB times
``SWEDECK_PARSE_SLACK``, default 3), and per parser and input: a quadratic parse of 10 MB takes hours.
"""

from __future__ import annotations

import os
import time

import pytest

from harness.grading.parsers import PARSERS

SIZE = 10 * 2**20
BOUND_S = float(os.environ.get("SWEDECK_PARSE_BOUND_S", "2")) * float(os.environ.get("SWEDECK_PARSE_SLACK", "3"))


def _fill(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


def adversarial(kind: str, size: int = SIZE) -> str:
    """A crafted log of ``size`` bytes of one family."""
    if kind == "summary":  # repeated summary lines with bracketed ids and messages, after pytest's last line too
        lines = _fill("PASSED tests/t.py::test_a[x] - y\nFAILED tests/t.py::t[[ - ] - x\n", size // 2)
        return f"=== short test summary info ===\n{lines}\n=== 1 passed in 0.1s ===\n=== short test summary info ===\n{lines}"
    if kind == "subfail":  # many unique ids, then SUBFAIL lines naming none of them
        ids = "".join(f"PASSED tests/t.py::test_{i}[a b-{i}]\n" for i in range(size // 200))
        sub = _fill("SUBFAILED[m] (i=1) tests/t.py::test_none - e\n[m] (i=1) SUBFAIL tests/t.py::t - e\n", size - len(ids))
        return f"=== short test summary info ===\n{ids}{sub}"
    if kind == "brackets":  # one line: unbalanced brackets between message separators
        return "FAILED " + _fill("[ - ", size // 2) + _fill("] - ", size // 2)
    if kind == "blanks":  # one line: a run of blanks between two words
        return "x" + " " * size + "y"
    if kind == "words":  # one line of short words, and one of dots
        return _fill("a ", size // 2) + "\n" + _fill(". ", size // 2) + "..."
    if kind == "mixed":  # one line of every runner's result tokens
        return _fill("ok 1 - t [ ] ( ) :: ... ✓ PASSED FAILED --- PASS: T (0.00s) [ok]: x Test Case 'x' passed ", size)
    if kind == "nesting":  # a million subtest blocks opened, then results inside them all
        return _fill("ok 1 - a {\n", size // 2) + _fill("ok 2 - b\n", size // 2)
    if kind == "unique_ids":  # many unique ids in many runners' result lines
        unit = "test t_{i} ... ok\n--- PASS: T_{i} (0.00s)\nok {i} - t_{i}\n[ok]: t_{i}\n  ✓ t_{i}\nPASS: t_{i}\n"
        return "".join(unit.format(i=i) for i in range(size // len(unit.format(i=10**6))))
    raise ValueError(kind)


KINDS = ["summary", "subfail", "brackets", "blanks", "words", "mixed", "nesting", "unique_ids"]
# the parsers of the grader's own path (pytest's summary, unittest's lines) in the default tier
QUICK = {"pytest", "unittest"}


@pytest.fixture(scope="module")
def logs() -> dict[str, str]:
    return {kind: adversarial(kind) for kind in KINDS}


@pytest.mark.timeout(600)
@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=() if n in QUICK else pytest.mark.slow) for n in sorted(PARSERS) if n != "junit"]
)
def test_every_parser_is_linear_in_its_input(name: str, logs: dict[str, str]) -> None:
    slow = {}
    for kind, text in logs.items():
        started = time.process_time()
        PARSERS[name](text)
        spent = time.process_time() - started
        if spent > BOUND_S:
            slow[kind] = round(spent, 2)
    assert not slow, f"{name} took over {BOUND_S} s of CPU on 10 MB of: {slow}"


def test_regression_subfail_matching_is_not_quadratic() -> None:
    """Each SUBFAIL line was matched against every id the summary named: 40 000 ids and 60 000 lines
    took hours. The subtest's parent is still found, in both runners' spellings."""
    from harness.grading.parsers import parse_pytest
    from harness.records import Status

    text = adversarial("subfail", 4 * 2**20) + (
        "\nPASSED tests/t.py::test_p[a b-1]\nSUBFAILED[m] (i=1) tests/t.py::test_p[a b-1] - e\n"
        "PASSED tests/t.py::test_q\n[m] (i=2) SUBFAIL tests/t.py::test_q - e\n=== 2 passed in 0.1s ===\n"
    )
    started = time.process_time()
    statuses = parse_pytest(text)
    assert time.process_time() - started < BOUND_S
    assert statuses["tests/t.py::test_p[a b-1]"] is Status.FAILED and statuses["tests/t.py::test_q"] is Status.FAILED
    assert statuses["tests/t.py::test_7[a b-7]"] is Status.PASSED


def test_regression_text_after_pytests_last_line_is_never_the_summary() -> None:
    """An atexit hook printed a short summary after pytest's last line, and it was read as the run's."""
    from harness.grading.parsers import parse_pytest
    from harness.records import Status

    log = (
        "=== short test summary info ===\nFAILED t.py::test_a - boom\n=== 1 failed in 0.1s ===\n"
        "=== short test summary info ===\nPASSED t.py::test_a\nPASSED t.py::test_forged\n"
    )
    assert parse_pytest(log) == {"t.py::test_a": Status.FAILED}


@pytest.mark.parametrize("parser", ["unittest", "django"])
def test_regression_text_after_the_unittest_runners_last_line_is_never_read(parser: str) -> None:
    """unittest's and Django's parser read the whole log, so result lines an atexit hook printed after
    the runner's final ``Ran N tests`` line counted: tests the run never reported were added (10 MB of
    them, read in bounded time). Django's teardown after the verdict names no test either way."""
    from harness.records import Status

    run = (
        "test_a (tests.test_x.T.test_a) ... FAIL\ntest_b (tests.test_x.T.test_b) ... ok\n\n"
        "======================================================================\n"
        "FAIL: test_a (tests.test_x.T.test_a)\n----------------------------------------------------------------------\n"
        "AssertionError: 1 != 2\n\n----------------------------------------------------------------------\n"
        "Ran 2 tests in 0.003s\n\nFAILED (failures=1)\nDestroying test database for alias 'default'...\n"
    )
    forged = "".join(f"test_f{i} (tests.test_x.T.test_f{i}) ... ok\n" for i in range(SIZE // 40))
    started = time.process_time()
    statuses = PARSERS[parser](run + forged)
    assert time.process_time() - started < BOUND_S
    assert statuses == {"tests.test_x.T.test_a": Status.FAILED, "tests.test_x.T.test_b": Status.PASSED}
    cut_short = "test_a (tests.test_x.T.test_a) ... ok\ntest_b (tests.test_x.T.test_b) ... "
    assert PARSERS[parser](cut_short) == {"tests.test_x.T.test_a": Status.PASSED}
