"""swedeck_outcomes: what each test's call raised, recorded before pytest turns it into a report.

PYTEST_DONT_REWRITE. Self-contained (standard library and pytest only): copied into task sandboxes and
loaded with ``-p swedeck_outcomes`` whenever the grader reads a JUnit report. It appends to the file
``SWEDECK_OUTCOME_LOG`` named when the plugin was imported (before any code under test), one JSON
object per line::

    {"test": <node id>, "raised": <exception class, or null>}

Code under test runs inside the pytest process, so it can rewrite the report a failing test produces
(replace ``TestReport.from_item_and_call``, wrap the report hook) and the JUnit report and summary then
agree on a pass. This hook wraps every other report hook and reads the call's own exception first:
pytest reports a call that raised as failed, skipped or xfailed, never as passed, so the grader calls
a passed test that raised a forgery, and a passed test with no recorded call too. A unittest
``TestCase`` keeps its exception on the item until pytest's own hook moves it onto the call, so the
item is read as well. A rerun of a test writes another line, and the last one stands.
"""

import json
import os

import pytest

_LOG = os.environ.get("SWEDECK_OUTCOME_LOG")


def _raised(item, call):
    if call.excinfo is not None:
        return call.excinfo.type
    pending = getattr(item, "_excinfo", None)  # unittest: filled by addError/addFailure, not yet moved
    if pending:
        return pending[0].type
    return None


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    if _LOG and call.when == "call":
        raised = _raised(item, call)
        name = None if raised is None else f"{raised.__module__}.{raised.__qualname__}"
        line = json.dumps({"test": item.nodeid, "raised": name}) + "\n"
        fd = os.open(_LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)
    yield
