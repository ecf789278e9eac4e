"""One sandbox command for a candidate's apply and the first test command, held in between.

A grade used to start two sandbox commands before the tests' own time: one that applies the patch
between two listings of the tree, one that installs the hidden tests and runs the tests. Starting a
sandbox command costs about 35 ms on bubblewrap and 100 ms as a Docker exec, more than the rest of the
grader together. So one command does both and stops in between: it applies the patch the first way
of the cascade (plain ``git apply``, all or nothing), writes its status, and waits on a named pipe in
the IO folder (the host's folder: the command can open the pipe, never replace it). The host reads
the listings, judges the change (capabilities, tamper audit), writes the hidden tests and the script
of the tests, and only then says ``go``; or ``stop``, and the command ends without running anything of
the candidate's. The order the trust boundary needs is kept: nothing of the change runs before the
host has judged it, and what runs after comes from a script the host wrote after that judgement.

The tests run under a ``timeout`` of their own, of the configured length, so the hold does not eat
into their time, and a timeout there reads as the sandbox's own. A patch plain ``git apply`` refuses
goes on through the rest of the cascade in commands of its own (``harness.grading.patching``), and its
tests in a command of their own, as before.

Where the first test command is plain ``python -m pytest`` (``preload_word``), the command also starts
an interpreter before the apply that imports pytest, nothing of the tree, and runs the tests in a fork
once the tests' script wakes it (``harness/grading/plugins/swedeck_preload.py``): the tests' deadline
and the command's end are the same as for the plain command.
"""

from __future__ import annotations

import json
import shlex
import threading
import time
from collections.abc import Mapping

from harness.grading.commands import pytest_command
from harness.grading.parsers import uses_junit
from harness.grading.patching import APPLY_STRATEGIES, write_patch
from harness.grading.shipping import PLUGIN_DIR, PLUGIN_PATH, ship
from harness.grading.trusted import installing
from harness.records import ExecResult, Task
from harness.sandboxes.sandbox import IO_DIR, KILLED_EXIT, TIMEOUT_EXIT, Sandbox, answered

APPLY_S = 60  # the apply, as an apply command of its own has
HOLD_S = 120.0  # the apply and the host's checks
POLL_S = 0.001


def preload_word(task: Task, sandbox: Sandbox) -> str:
    """The interpreter's word where the first test command is ``python -m pytest`` run with the
    grade's plugins (so its PYTHONPATH is ours) and no activation, which a preloaded interpreter can
    run exactly as the shell would (``swedeck_preload``); else "". Not under Docker, where it was
    measured to save nothing: the import competes with the exec's start and the apply for the
    machine, and the command's end must reap the preloaded processes."""
    if sandbox.backend != "bwrap" or not uses_junit(task.log_parser) or sandbox.activation:
        return ""
    command = pytest_command(task.test_cmd[0], PLUGIN_PATH)
    return command["python"] if command is not None else ""


class Held:
    """The held command of one grade: ``applied``, then ``go`` or ``stop`` (always one of them)."""

    def __init__(
        self, sandbox: Sandbox, patch: str, token: str, *, first: str, then: str, timeout: float, preload: str = ""
    ) -> None:
        """``preload``: the interpreter's word (``python``) where the first test command is plain
        ``python -m pytest`` that a preloaded interpreter runs (``swedeck_preload``), else ""."""
        self.sandbox, self.timeout, self.token = sandbox, timeout, token
        self.status = sandbox.output(f"{IO_DIR}/applied-{token}")
        self.log = sandbox.output(f"{IO_DIR}/apply-{token}.log")
        self.gate = sandbox.pipe(f"{IO_DIR}/gate-{token}")
        self.tests = f"{IO_DIR}/tests-{token}.sh"
        self.job = f"{IO_DIR}/preload-{token}.json" if preload else ""
        # the apply's own limit, as an apply command of its own has (harness.grading.patching)
        apply = f"timeout -k 2 {APPLY_S} " + APPLY_STRATEGIES[0][2].format(p=shlex.quote(write_patch(sandbox, patch, "candidate")))
        lines = [f"exec 9<> {self.gate}"]
        if preload:
            ship(sandbox, ["swedeck_preload"])
            wake, answer = sandbox.pipe(f"{IO_DIR}/wake-{token}"), sandbox.pipe(f"{IO_DIR}/answer-{token}")
            # started before the apply and reading nothing of the tree (swedeck_preload): the
            # interpreter's start and pytest's import overlap the apply and the host's judgement
            lines += [f"exec 8<> {wake} 7<> {answer}", f"{preload} {PLUGIN_DIR}/swedeck_preload.py {self.job} 0<&8 8<&- 9<&- &"]
        steps = " && ".join(f"{{ {step}; }}" for step in (first, "umask 022", apply, then) if step)
        lines += [
            f"( {steps} ) > {self.log} 2>&1 9<&- 8<&- 7<&-",
            f"echo $? > {self.status}",
            "read -r said <&9",
            "exec 9<&-",
            '[ "$said" = go ] || exit 0',
            f"exec timeout -k 2 {max(timeout, 1):.0f} bash {self.tests}",
        ]
        script = "\n".join(lines)
        self.result: ExecResult | None = None
        self.error: BaseException | None = None  # what the sandbox raised (SandboxError, EnvError), raised again here
        self.ended = False

        def hold() -> None:
            try:
                self.result = sandbox.run(script, timeout=timeout + HOLD_S, reap=True)
            except BaseException as err:  # noqa: BLE001 - handed to the grading thread
                self.error = err

        self.thread = threading.Thread(target=hold, name="swedeck-held-grade", daemon=True)
        self.thread.start()

    def applied(self) -> tuple[bool, str]:
        """(True, "") once the patch applied and the command waits; (False, why) when it did not."""
        deadline = time.monotonic() + HOLD_S
        while time.monotonic() < deadline and self.thread.is_alive():
            if (said := answered(self.sandbox, self.status)) is not None:
                if said.strip() == b"0":
                    return True, ""
                break
            time.sleep(POLL_S)
        if self.error is not None:
            raise self.error
        why = self.sandbox.read_file(self.log).decode(errors="replace").strip()[-400:]
        return False, f"{APPLY_STRATEGIES[0][0]}: {why or 'the apply did not finish'}"

    def go(self, install: str, command: str, env: Mapping[str, str]) -> ExecResult:
        """Install the hidden tests and run ``command`` with ``env`` as the rest of the command; its
        result, as ``Sandbox.run`` gives it. The environment is the script's (or the preloaded
        interpreter's job's), not the command's: the command starts before the host has planned the
        tests (``harness.grading.grader``), and the apply needs none of it."""
        if self.job:
            forked = pytest_command(command, env.get("PYTHONPATH", ""))
            job = {"argv": forked["argv"], "pythonpath": forked["pythonpath"], "env": dict(env), "shell": command}
            self.sandbox.write_file(self.job, json.dumps(job))
            # the timeout's process group is the tests' script's parent's: the preloaded child joins it
            tests = installing(install, 'echo "$PPID" >&8 && read -r code <&7 && exit "$code"', self.token)
        else:
            exports = "".join(f"export {name}={shlex.quote(value)}\n" for name, value in env.items())
            # as Sandbox.run has it: the environment first, then the activation
            tests = "\n".join(filter(None, (exports, self.sandbox.activation, installing(install, command, self.token))))
        self.sandbox.write_file(self.tests, tests)
        told = time.monotonic()
        self._say("go")
        result = self.result
        if result is None:
            raise self.error or RuntimeError("the held command ended without a result")
        held = time.monotonic() - told
        if not result.timed_out and result.exit_code in (TIMEOUT_EXIT, KILLED_EXIT) and held >= self.timeout - 1:
            # its own timeout(1), not the outer one: the sandbox's timeout all the same
            result = result.model_copy(update={"timed_out": True, "exit_code": None, "duration_s": round(held, 4)})
        return result

    def stop(self) -> None:
        """End the command without running anything more (idempotent)."""
        if not self.ended:
            self._say("stop")

    def _say(self, word: str) -> None:
        self.ended = True
        self.sandbox.tell(self.gate, word)  # False: the command is gone already
        self.thread.join()
