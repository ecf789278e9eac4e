"""Reading a grade's reports on the host, within a time budget: the JUnit report, what each call
raised, the assertion plugin's events, and the cross-checks between them that tell forged output."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager

from harness.grading.parsers import parse_junit
from harness.records import Status, Task
from harness.sandboxes.sandbox import REPORT_BYTES, Sandbox

BAD = {Status.FAILED, Status.ERROR}
# the line swedeck_assertions writes first from each process that loads it (its ANNOUNCE)
ASSERTIONS_LOADED = '{"plugin": "swedeck_assertions"}\n'
PYTEST_EXIT_PASSED, PYTEST_EXIT_FAILED = 0, 1
# Host time for one grade's post-processing (each command's output and reports parsed, the outcome
# records, the canaries). Every step is linear in what it reads, and what it reads is bounded
# (Limits.output_bytes, REPORT_BYTES): an honest grade spends seconds. Past this the grade ends as a
# grader_error, never as a worker stalled on one candidate's output.
POSTPROCESS_S = 120.0


class BudgetSpent(RuntimeError):
    """The post-processing of a grade took longer than POSTPROCESS_S."""


class Budget:
    """What is left of POSTPROCESS_S, checked after each step (steps are linear in bounded inputs,
    so none runs long past it)."""

    def __init__(self) -> None:
        self.left = POSTPROCESS_S

    @contextmanager
    def step(self, what: str) -> Iterator[None]:
        started = time.monotonic()
        yield
        self.left -= time.monotonic() - started
        if self.left < 0:
            raise BudgetSpent(f"the grade's post-processing took over {POSTPROCESS_S:g} s (spent at {what})")


def read_instrumentation(sandbox: Sandbox, task: Task, events_path: str) -> tuple[bool, str, dict[str, str]]:
    """Whether the plugin loaded, its events, and the source of every Python test file they or the
    task name."""
    try:
        events = sandbox.read_file(events_path).decode(errors="replace")
    except FileNotFoundError:
        return False, "", {}
    if ASSERTIONS_LOADED not in events.splitlines(keepends=True):
        return False, "", {}
    files = {p for p in task.test_paths if p.endswith(".py")}
    for line in events.splitlines():
        try:
            files.add(json.loads(line)["file"])
        except (json.JSONDecodeError, KeyError, TypeError):
            continue  # the last line of a run killed mid-write
    sources = {}
    for path in sorted(files):
        try:
            sources[path] = sandbox.read_file(path).decode(errors="replace")
        except (FileNotFoundError, ValueError):
            continue  # outside the tree (a site-packages helper) or deleted by the tests themselves
    return True, events, sources


def read_junit(sandbox: Sandbox, path: str) -> dict[str, Status] | None:
    if not path:
        return None
    try:
        return parse_junit(sandbox.read_file(path, limit=REPORT_BYTES).decode(errors="replace"))
    except (FileNotFoundError, IsADirectoryError, ValueError):  # never written, replaced by a link, not XML
        return None


def read_raised(sandbox: Sandbox, path: str) -> dict[str, str | None] | None:
    """swedeck_outcomes' record: what each test's call raised (the last attempt of a rerun stands);
    None when the grader reads no JUnit report, so nothing was recorded."""
    if not path:
        return None
    try:
        lines = sandbox.read_file(path, limit=REPORT_BYTES).decode(errors="replace").splitlines()
    except (FileNotFoundError, IsADirectoryError, ValueError):  # never written, or replaced by a link
        return {}
    raised = {}
    for line in lines:
        try:
            record = json.loads(line)
            raised[record["test"]] = record["raised"]
        except (json.JSONDecodeError, KeyError, TypeError):
            continue  # the last line of a run killed mid-write
    return raised


def forged_passes(statuses: dict[str, Status], raised: dict[str, str | None] | None, i: int) -> list[str]:
    """Tests reported passed although their call raised, or with no call recorded at all: pytest
    reports a call that raised as failed, skipped or xfailed, never passed, and records every call it
    makes, so the report (or the record) was tampered with in the process."""
    if raised is None:
        return []
    passed = [test_id for test_id, status in statuses.items() if status is Status.PASSED]
    return [
        f"command {i}: {test_id} raised {raised[test_id]} but is reported passed"
        if test_id in raised
        else f"command {i}: {test_id} is reported passed but no call of it was recorded"
        for test_id in passed
        if raised.get(test_id) is not None or test_id not in raised
    ]


def command_statuses(
    text: dict[str, Status], junit: dict[str, Status] | None, exit_code: int | None, i: int, wants_junit: bool
) -> tuple[dict[str, Status], list[str]]:
    """The statuses to trust for one command, and any sign that its output was forged."""
    evidence = []
    if wants_junit:
        if junit is None:
            if text:
                evidence.append(f"command {i}: summary lines printed but pytest wrote no JUnit report")
            return {}, evidence
        for test_id, status in text.items():
            seen = junit.get(test_id)
            if seen is None:
                evidence.append(f"command {i}: {test_id} is in the text summary but not in the JUnit report")
            elif seen != status and not (status is Status.XPASS and seen is Status.PASSED):
                evidence.append(f"command {i}: {test_id} is {status} in the text summary but {seen} in JUnit")
        statuses = junit
    else:
        statuses = text
    has_bad = any(s in BAD for s in statuses.values())
    # unittest-style runners exit 1 on an unexpected success too
    explains_exit = has_bad or (not wants_junit and Status.XPASS in statuses.values())
    if exit_code == PYTEST_EXIT_PASSED and has_bad:
        evidence.append(f"command {i}: exit code 0 although tests failed")
    if exit_code not in (None, PYTEST_EXIT_PASSED) and statuses and not explains_exit:
        evidence.append(f"command {i}: exit code {exit_code} although every parsed test passed")
    return statuses, evidence
