"""A Docker sandbox's first command runs in an exec started as the sandbox opened (the standby,
``harness.sandboxes.docker_sandbox.DockerSandbox._stand_by``): it must run exactly as a fresh exec
would, and nothing a command does may reach a standby."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.records import Task
from harness.sandboxes.sandbox import Backend, Sandbox

pytestmark = pytest.mark.docker

# who runs it, where, with which environment, in which process tree, with what left open
SEEN = (
    'echo "ids $(id -u) $(id -g) $(id -G)"; echo "cwd $(pwd)"; echo "env [$FOO] [$HOME] [$PATH]";'
    ' echo "umask $(umask)"; echo "fds $(ls /proc/self/fd | wc -l)";'
    " echo \"parent $(tr '\\0' ' ' < /proc/$PPID/cmdline | cut -c1-7)\"; exit 7"
)


@pytest.fixture
def box(docker_backend: Backend, sample_tasks: dict[str, Task]) -> Iterator[Sandbox]:
    sandbox = docker_backend.open(sample_tasks["sample__toposort-1"])
    try:
        yield sandbox
    finally:
        sandbox.close()


@pytest.mark.parametrize("reap", [True, False])
def test_the_first_command_runs_in_the_standby_as_a_fresh_exec_runs_it(box: Sandbox, reap: bool) -> None:
    assert box._standby is not None
    env = {"FOO": "a b 'c' $HOME"}
    first = box.run(SEEN, env=env, reap=reap)
    assert box._standby is None  # the first command took it
    second = box.run(SEEN, env=env, reap=reap)
    assert first.exit_code == second.exit_code == 7
    assert first.output == second.output and "[a b 'c' $HOME]" in first.output


def test_a_first_command_that_hangs_in_the_standby_times_out_and_is_killed(box: Sandbox) -> None:
    done = box.run("setsid sleep 305 & sleep 100", timeout=2, reap=True)
    assert done.timed_out and done.exit_code is None
    assert "sleep 305" not in box.run("ps -eo args").output


def test_a_reaping_before_the_first_command_leaves_it_a_fresh_exec(box: Sandbox) -> None:
    """The reaping kills the waiting standby; the command then must not be handed to it."""
    box.reap()
    assert box._standby is None
    assert box.run("echo fresh", reap=True).output.strip() == "fresh"


def test_a_command_can_neither_rewrite_nor_feed_the_standbys_files(box: Sandbox) -> None:
    """The policy's reach: the standby's pipe and script lie in the IO folder, which the command can
    see. Writing either, or adding a script of its own beside them, is refused; none is read again."""
    attack = (
        "cd /tmp/.swedeck-io; n=0; for f in .standby-*; do n=$((n+1));"
        " { echo 'echo owned' > $f; } 2>/dev/null && echo WROTE $f;"
        " { echo go >> $f; } 2>/dev/null && echo FED $f; done;"
        " { echo x > .standby-mine.sh; } 2>/dev/null && echo ADDED; echo found $n"
    )
    done = box.run(attack, reap=True)
    assert "found 2" in done.output, done.output  # the pipe and the script the first command ran from
    assert "WROTE" not in done.output and "FED" not in done.output and "ADDED" not in done.output
    assert box.run("echo later").output.strip() == "later"
