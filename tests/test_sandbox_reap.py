"""A reaping run (``Sandbox.run(..., reap=True)``, what the grader runs the tests with) leaves no process
behind and reports the command's own exit code, on both backends.

On docker the command runs in a root wrapper that drops to the sandbox user, reaps, and writes the exit
code where only root can write (harness.sandboxes.docker_sandbox); these tests attack that wrapper from the command.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.records import Task
from harness.sandboxes.sandbox import Backend, Sandbox

PROCESSES = "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done"


@pytest.fixture
def box(backend: Backend, sample_tasks: dict[str, Task]) -> Iterator[Sandbox]:
    sandbox = backend.open(sample_tasks["sample__toposort-1"])
    try:
        yield sandbox
    finally:
        sandbox.close()


def test_regression_orphans_outlive_the_docker_reap(box: Sandbox) -> None:
    """Processes a command leaves behind become children of the container's init, and the reaper kept
    every child of the init (it meant to keep only the one that keeps the container up): a daemon
    started in the background, or in a session of its own, survived the reap."""
    done = box.run("(sleep 301 &); setsid sleep 302 & nohup sleep 303 >/dev/null 2>&1 & echo started", reap=True)
    assert done.exit_code == 0 and "started" in done.output
    left = box.run(PROCESSES).output
    assert not any(f"sleep {n}" in left for n in (301, 302, 303)), left
    assert box.run("echo alive").output.strip() == "alive"  # the container itself is still up


@pytest.mark.parametrize("code", [0, 1, 5, 137])
def test_a_reaping_run_reports_the_commands_exit_code(box: Sandbox, code: int) -> None:
    assert box.run(f"exit {code}", reap=True).exit_code == code


def test_the_command_cannot_write_the_exit_code_it_is_reported(box: Sandbox) -> None:
    """The command finds where the wrapper will write its exit code (the wrapper's command line is
    readable) and writes 0 there first, then fails: the run still reports the failure."""
    forge = (
        "for f in /proc/[0-9]*/cmdline; do tr '\\0' '\\n' < $f; done 2>/dev/null"
        " | grep -o '/tmp/.swedeck-io/.status-[0-9a-f]*' | sort -u"
        " | while read path; do echo 0 > $path; : > $path.x; done; exit 5"
    )
    assert box.run(forge, reap=True).exit_code == 5
    assert box.run(forge).exit_code == 5


def test_a_reaping_run_that_times_out_still_reaps(box: Sandbox) -> None:
    done = box.run("setsid sleep 304 & sleep 100", timeout=2, reap=True)
    assert done.timed_out and done.exit_code is None
    assert "sleep 304" not in box.run(PROCESSES).output


def test_commands_run_as_the_sandbox_user(box: Sandbox) -> None:
    """The wrapper runs as root on docker; the command never does."""
    ids = box.run("id -u; id -g; id -G", reap=True).output.split()
    assert ids[0] != "0" and ids[1] != "0" and "0" not in ids[2:]
