"""swedeck_outcomes: what each test's call raised, recorded before pytest turns it into a report.

PYTEST_DONT_REWRITE. Self-contained (standard library and pytest only): copied into task sandboxes and
loaded with ``-p swedeck_outcomes`` whenever the grader reads a JUnit report. Inactive unless
``SWEDECK_OUTCOME_LOG`` names the file to append to, one JSON object per line::

    {"test": <node id>, "raised": <exception class name, or null>}

Code under test runs inside the pytest process, so it can rewrite the report a failing test produces
(replace ``TestReport.from_item_and_call``, wrap the report hook) and the JUnit report and summary then
agree on a pass. This hook wraps every other report hook and reads the call's own exception first;
the grader calls a test that raised but is reported passed a forgery. A rerun of a test writes
another line, and the last one stands.
"""

import json
import os

import pytest


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    path = os.environ.get("SWEDECK_OUTCOME_LOG")
    if path and call.when == "call":
        raised = type(call.excinfo.value).__name__ if call.excinfo is not None else None
        line = json.dumps({"test": item.nodeid, "raised": raised}) + "\n"
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)
    yield
