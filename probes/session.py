"""Probe sessions: many model-free probes of one task graded in one prepared sandbox.

``harness.grading.grader.grade`` pays, for every candidate, a fresh sandbox, the patch cascade between two
listings of the tree, the capability check, the tamper audit, the trusted plan (hidden tests,
canaries) and the test command's interpreter start-up with pytest's import. For a candidate's reward
all of that is the trust boundary. Probes are not candidates: they are our own model-free rewrites of
gold's files (``probes.generate``), exact diffs of the sealed buggy tree. So a probe session pays the
start-up once per task (per worker):

* one sandbox, opened through the public Sandbox API, with the trusted plan installed once (the hidden
  tests as ``grade`` writes them, from the task's facts);
* a probe server inside it (``probes/session_server.py``) that has imported pytest once and forks a
  child per test command, so the interpreter's start and pytest's import are paid once (a command that
  is not plain pytest, or a server where forking is unsafe, runs as a plain command); it boots while
  the host installs the hidden tests, and warms pytest up on a test file of its own;
* each probe's files written by the host as contents (computed on the host with ``git apply``: no
  patch cascade in the sandbox), and after the probe the tree put back to the prepared snapshot;
* the host's checks of each probe (``probes.checks``) run ahead in a thread of their own, and a session
  holds DEPTH jobs at once, so the host readies the next probe and reads the last answer while the
  server runs a probe's tests.

Why that is safe for probes: the isolation ``grade`` gives a candidate guards against the candidate's
own code (a patch that plants a link, forges a report, reaches into pytest). Our probes carry no such
code, so between probes isolation only has to keep one probe's files from leaking into the next: the
server restores the tree to its snapshot (every entry whose kind, mode, size or mtime changed, or that
is new, is removed and the snapshot's copy put back), each test command runs in a fresh process (a
fork of a server that never imported anything of the tree), in its own process group killed when it
ends, with a fresh TMPDIR and no bytecode written. (bubblewrap 0.8 here has no ``--overlay``; the
snapshot restore gives the same fresh tree on both backends.) Even so, the host re-checks every probe
the way ``grade`` would: a probe that does not apply with ``git apply``, touches a protected path or a
hidden test, breaks a capability rule (``harness.grading.capabilities``) or draws a tamper finding
(``harness.grading.tamper``) is graded by ``grade`` itself, and so is every probe once a session cannot start
or its server died. No canaries are planted: they catch forged reports, which our probes do not
write. Statuses come from the JUnit report, as in ``grade``, and ``harness.grading.verdict.compare`` gives
the reward, so a probe's reward is the one ``grade`` gives it (benchmarks/probe_selection.py checks
this on every probe).

Candidates' grades never come here: ``grade`` is untouched, and a session only ever receives the
patches ``probes.runner`` generated.
"""

from __future__ import annotations

import base64
import json
import re
import secrets
import shlex
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.config import Settings
from harness.sandboxes.envs import ENV_MOUNT
from harness.grading.grader import run_tests
from harness.grading.shipping import PLUGIN_DIR, ship
from harness.names import file_name
from harness.grading.parsers import parse_junit, uses_junit
from harness.records import Grade, Status, Task, TestRun, content_hash
from harness.sandboxes.sandbox import IO_DIR, REPORT_BYTES, Backend, Sandbox, Unreadable, answered
from harness.grading.tree import LISTING, TaskFacts, parse_listing
from harness.grading.verdict import compare
from harness.grading.trusted import archive, decode, install_command, plan, task_facts
from probes.checks import Checks, Files

SERVER = Path(__file__).with_name("session_server.py")
SESSION_S = 6 * 3600.0  # the server's own command: it lives as long as the task's probing
READY_S = 120.0  # the server's start: the tree's snapshot and pytest's import (its warm-up on top)
POLL_S = 0.001
# Jobs a session holds at once: while its server runs one probe's tests, the host writes the next job
# and reads the last answer. The server still grades them one after the other, each on the snapshot.
DEPTH = 2
_SHELL = re.compile(r"[^\w\s@%+=:,./'\"-]")  # anything but words, blanks and quotes: the shell may interpret it
_SUITE_TIME = re.compile(rb"<testsuite\b[^>]*?\btime=\"([0-9.]+)\"")
_CASE_TIME = re.compile(rb"<testcase\b[^>]*?\btime=\"([0-9.]+)\"")


def pytest_argv(command: str) -> list[str] | None:
    """The arguments of a plain ``python -m pytest ...`` / ``pytest ...`` command (what the server can
    run as ``pytest.main``); None for anything the shell would have to interpret."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if _SHELL.search(command):
        return None
    if words[:3] in (["python", "-m", "pytest"], ["python3", "-m", "pytest"]):
        return words[3:]
    return words[1:] if words[:1] == ["pytest"] else None


@dataclass
class Stats:
    """What sessions did, for benchmarks: ``suite_s`` sums pytest's own time (collection and tests,
    the JUnit report's testsuite time) over every test command a session ran."""

    traced: int = 0  # test executions of the traced gold run (probes.runner.coverage.gold_coverage)
    graded: int = 0  # runs in a session
    fallback: int = 0  # runs by harness.grading.grader
    forked: int = 0  # test commands run by a fork of the server
    plain: int = 0  # test commands run as a plain command
    suite_s: float = 0.0
    tests_s: float = 0.0  # the test cases' own time (setup, call, teardown) in those reports
    command_s: float = 0.0  # the test commands' own time, fork to exit, as the server measured it
    host_s: float = 0.0  # the host's part: the probe's files and checks, the job, reading the results
    restore_s: float = 0.0  # putting the tree back after each probe (after its answer, while the host reads it)
    start_s: float = 0.0  # opening sessions: sandbox, hidden tests, the server's imports, warm-up, snapshot
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, **counts: float) -> None:
        with self.lock:
            for key, value in counts.items():
                setattr(self, key, getattr(self, key) + value)


class _Dead(RuntimeError):
    """The session's server is gone or never came up: its probes go to ``grade``."""


class ProbeSession:
    """One sandbox with the probe server running in it; up to DEPTH probes at a time, which the server
    grades one after the other."""

    def __init__(self, task: Task, backend: Backend, facts: TaskFacts, stats: Stats) -> None:
        self.task, self.backend, self.facts, self.stats = task, backend, facts, stats
        config = getattr(backend, "config", None)
        self.timeout_s, self.output_bytes = config.limits.timeout_s, config.limits.output_bytes
        self.folder = f"{IO_DIR}/probe-session-{secrets.token_hex(8)}"
        self.jobs = 0
        self.numbering = threading.Lock()  # job numbers, in the order the server serves them
        self.busy = 0  # jobs handed out and not yet answered (SessionPool)
        self.box: Sandbox | None = None
        self.thread: threading.Thread | None = None
        self.ended = ""  # the server's output, once it ended
        started = time.monotonic()
        try:
            self._start()
            stats.add(start_s=time.monotonic() - started)
        except BaseException:
            self.close()
            raise

    def _start(self) -> None:
        """One sandbox command for the whole session: the server lists the tree first (the harness's own
        listing), boots (the interpreter, pytest's import) while the host plans the hidden tests from
        that listing, then installs them as the host wrote them (``install.sh``, once told), warms up
        and serves. The listing and the install run in the sandbox as before, only as children of the
        server, not as sandbox commands of their own (each costs a sandbox start)."""
        self.box = box = self.backend.open(self.task)
        env = {"PYTHONPATH": f"{PLUGIN_DIR}:{ENV_MOUNT}/site"}
        warm_env = {**env, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTEST_ADDOPTS": self._addopts(None)}
        argv = [a for a in map(pytest_argv, self.task.test_cmd) if a is not None]
        listing, listed = box.output(f"{self.folder}/listing"), box.output(f"{self.folder}/listed")
        warm = {"argv": argv, "env": warm_env, "timeout": self.timeout_s, "listing": f"{LISTING} > {listing}", "listed": listed}
        box.write_file(f"{self.folder}/warm.json", json.dumps(warm))
        box.write_file(f"{self.folder}/server.py", SERVER.read_bytes())
        # before the server starts: Python remembers a folder on its path that was empty or missing
        ship(box, ("swedeck_select", "swedeck_coverage"))
        ready = box.output(f"{self.folder}/ready.json")
        command = f"python {self.folder}/server.py {self.folder}"

        def serve() -> None:
            self.ended = box.run(command, timeout=SESSION_S, env=env).output[-2000:]

        self.thread = threading.Thread(target=serve, name="swedeck-probe-server", daemon=True)
        self.thread.start()
        if self._wait(listed, READY_S).strip() != b"0":
            raise _Dead("could not list the tree")
        self.listing = parse_listing(box.read_file(listing))
        hidden = {path: None if stored is None else decode(stored) for path, stored in self.facts.hidden.items()}
        todo = plan(self.listing, self.listing, self.task, self.facts, hidden)
        infra = f"{self.folder}/infra.tar"
        box.write_file(infra, archive(todo.write))
        box.write_file(f"{self.folder}/install.sh", install_command(todo.delete, infra))
        box.write_file(f"{self.folder}/install.go", "")
        said = json.loads(self._wait(ready, READY_S + len(argv) * self.timeout_s))  # the warm-up collects each command once
        if said.get("installed") != 0:
            raise _Dead(f"the hidden tests did not install: {said.get('output', '')}")

    def _wait(self, path: str, limit_s: float) -> bytes:
        """The complete file a server writes in one call (it ends in a newline)."""
        deadline = time.monotonic() + limit_s
        while time.monotonic() < deadline:
            if (data := answered(self.box, path)) is not None:
                return data
            if not self.thread.is_alive():
                raise _Dead(f"the probe server ended: {self.ended}")
            time.sleep(POLL_S)
        raise _Dead(f"the probe server did not answer within {limit_s:.0f} s")

    def _addopts(self, maxfail: int | None) -> str:
        """What grade's PYTEST_ADDOPTS holds after the JUnit options (no outcomes record: no forged pass
        to look for in our own probes)."""
        return "".join(f" -p {name}" for name in self.facts.plugins) + (f" --maxfail={maxfail}" if maxfail is not None else "")

    def run_tests(
        self, patch: str, files: Files, select: Sequence[str] | None, maxfail: int | None, coverage: Sequence[str] | None,
        log_dir: Path | None,
    ) -> TestRun:
        """``harness.grading.grader.run_tests`` for one of our patches, whose ``files`` passed the checks
        (``Checks.files``). ``coverage``: the paths the coverage plugin traces. Raises _Dead."""
        started = time.monotonic()
        with self.numbering:
            n, self.jobs = self.jobs, self.jobs + 1
        box, folder = self.box, self.folder
        addopts = self._addopts(maxfail)
        env = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONPATH": f"{PLUGIN_DIR}:{ENV_MOUNT}/site"}
        if select is not None:
            addopts += " -p swedeck_select"
            env["SWEDECK_SELECT"] = f"{folder}/select-{n}"
            box.write_file(env["SWEDECK_SELECT"], "".join(f"{test_id}\n" for test_id in select))
        if coverage is not None:  # as the grader has it: one log for every command
            addopts += " -p swedeck_coverage"
            env["SWEDECK_COVER_FILES"], env["SWEDECK_COVER_ROOT"] = f"{folder}/cover-files-{n}", box.workdir
            env["SWEDECK_COVER_LOG"] = box.output(f"{folder}/cover-{n}.jsonl")
            box.write_file(env["SWEDECK_COVER_FILES"], "".join(f"{path}\n" for path in coverage))
        commands = []
        for i, command in enumerate(self.task.test_cmd):
            junit, log = box.output(f"{folder}/junit-{n}-{i}.xml"), box.output(f"{folder}/log-{n}-{i}")
            commands.append({
                "argv": pytest_argv(command), "shell": command, "log": log, "junit": junit,
                "env": {**env, "PYTEST_ADDOPTS": f"-rA -p no:cacheprovider -o junit_family=xunit1 --junitxml={junit}{addopts}"},
            })  # fmt: skip
        result = box.output(f"{folder}/result-{n}.json")
        job = {
            "files": {p: None if f is None else [f[0], base64.b64encode(f[1]).decode()] for p, f in files.items()},
            "commands": commands, "timeout": self.timeout_s, "output_bytes": self.output_bytes,
        }  # fmt: skip
        box.write_file(f"{folder}/job-{n}.json", json.dumps(job))
        box.write_file(f"{folder}/job-{n}.go", "")
        sent = time.monotonic()
        # the jobs ahead of this one in the server's queue (DEPTH) are waited for too
        ran = json.loads(self._wait(result, DEPTH * len(commands) * (self.timeout_s + 30) + 30))
        answered = time.monotonic()
        run = self._run_of(patch, commands, ran, log_dir, answered - started)
        if coverage is not None:
            run.coverage = box.read_file(env["SWEDECK_COVER_LOG"], limit=REPORT_BYTES).decode(errors="replace")
        self.stats.add(host_s=sent - started + time.monotonic() - answered, restore_s=ran[-1].get("restore", 0.0))
        return run

    def _run_of(self, patch: str, commands: list[dict], ran: list[dict], log_dir: Path | None, seconds: float) -> TestRun:
        log_dir = log_dir or Settings.from_env().cache_dir / "logs"
        log_dir.mkdir(parents=True, exist_ok=True)
        run = TestRun(instance_id=self.task.instance_id, backend=self.box.backend, outcome="ok", apply_strategy="session")
        run.log_path = str(log_dir / f"{file_name(self.task.instance_id)}-{content_hash(patch)}-{secrets.token_hex(8)}.log")
        with open(run.log_path, "wb") as log:
            for command, outcome in zip(commands, ran, strict=False):
                log.write(self.box.read_file(command["log"], limit=self.output_bytes + 2**20))
                run.exit_codes.append(outcome["exit"])
                self.stats.add(forked=outcome["forked"], plain=not outcome["forked"], command_s=outcome["seconds"])
                if outcome["timed_out"] or outcome["limited"]:
                    run.outcome = "timeout" if outcome["timed_out"] else "output_limit"
                    run.detail = f"command `{command['shell']}` {'timed out' if outcome['timed_out'] else 'printed too much'}"
                    break
                try:
                    report = self.box.read_file(command["junit"], limit=REPORT_BYTES)
                    run.statuses.update(parse_junit(report.decode(errors="replace")))
                except (FileNotFoundError, Unreadable, ValueError):
                    continue  # no report: the statuses it would have held are missing, as in grade
                if found := _SUITE_TIME.search(report):
                    self.stats.add(suite_s=float(found.group(1)))
                self.stats.add(tests_s=sum(float(t) for t in _CASE_TIME.findall(report)))
        run.durations = {"tests": round(seconds, 4)}
        return run

    def close(self) -> None:
        if self.box is not None and self.thread is not None and self.thread.is_alive():
            try:
                self.box.write_file(f"{self.folder}/job-{self.jobs}.json", json.dumps({"stop": True}))
                self.box.write_file(f"{self.folder}/job-{self.jobs}.go", "")
                self.thread.join(timeout=10)
            except OSError:
                pass  # the sandbox goes anyway
        if self.box is not None:
            self.box.close()


class SessionPool:
    """The probe sessions of one task for ``workers`` graders at once: one session per DEPTH workers,
    each opened on first use; ``grade`` has ``harness.grading.grader.grade``'s signature and falls back
    to it for any probe no session can take."""

    def __init__(self, task: Task, backend: Backend, tree: Path, workers: int, stats: Stats | None = None) -> None:
        self.task, self.backend, self.tree = task, backend, tree
        self.size = -(-max(workers, 1) // DEPTH)
        self.stats = stats or Stats()
        self.opened: list[ProbeSession | None] = []  # None: a place held while a session opens
        self.checks: Checks | None = None  # made with the first session, from its listing of the tree
        self.expected: list[str] = []
        self.changed = threading.Condition()
        self.broken = not uses_junit(task.log_parser)  # statuses come from JUnit, as in grade
        try:
            self.facts = task_facts(task, backend)
        except Exception:  # noqa: BLE001 - grade reports whatever this is, probe by probe
            self.broken = True
        else:
            self.broken = self.broken or bool(self.facts.hidden_error)

    def _take(self) -> ProbeSession | None:
        """The least busy open session with room for a job, a new one while fewer than ``size`` are
        open, else the next one with room; None once sessions cannot be used."""
        with self.changed:
            while True:
                if self.broken:
                    return None
                room = [s for s in self.opened if s is not None and s.busy < DEPTH]
                if room:
                    session = min(room, key=lambda s: s.busy)
                    session.busy += 1
                    return session
                if len(self.opened) < self.size:
                    self.opened.append(None)
                    break
                self.changed.wait()
        try:
            session = ProbeSession(self.task, self.backend, self.facts, self.stats)
        except Exception:  # noqa: BLE001 - no session: grade takes every probe, and says what fails
            with self.changed:
                self.broken = True
                self.opened.remove(None)
                self.changed.notify_all()
            return None
        with self.changed:
            self.opened[self.opened.index(None)] = session
            session.busy = 1
            if self.checks is None:  # every session lists the same prepared tree
                self.checks = Checks(self.task, self.tree, self.facts, session.listing)
                self.checks.ahead(self.expected)
            self.changed.notify_all()
        return session

    def _give_back(self, session: ProbeSession, broken: bool) -> None:
        with self.changed:
            session.busy -= 1
            self.broken = self.broken or broken
            self.changed.notify_all()

    def expect(self, patches: Sequence[str]) -> None:
        """The patches about to be graded, in order: their checks run ahead (``Checks``)."""
        with self.changed:
            self.expected = list(patches)
            if self.checks is not None:
                self.checks.ahead(self.expected)

    def run_tests(
        self,
        task: Task,
        patch: str,
        backend: Backend,
        *,
        select: Sequence[str] | None = None,
        maxfail: int | None = None,
        coverage: Sequence[str] | None = None,
        log_dir: Path | None = None,
    ) -> TestRun:
        """``harness.grading.grader.run_tests`` (its signature), in a session where one can take the patch."""
        session = self._take()
        run, broken = None, False
        if session is not None:
            try:
                started = time.monotonic()
                files = self.checks.get(patch)
                self.stats.add(host_s=time.monotonic() - started)
                if files is not None:
                    run = session.run_tests(patch, files, select, maxfail, coverage, log_dir)
            except (_Dead, OSError):
                broken = True
            finally:
                self._give_back(session, broken)
        if run is not None:
            self.stats.add(graded=1)
            return run
        self.stats.add(fallback=1)
        return run_tests(task, patch, backend, log_dir=log_dir, select=select, maxfail=maxfail, coverage=coverage)

    def grade(
        self,
        task: Task,
        patch: str,
        backend: Backend,
        *,
        expected: dict[str, Status],
        select: Sequence[str] | None = None,
        maxfail: int | None = None,
        log_dir: Path | None = None,
    ) -> Grade:
        """``harness.grading.grader.grade`` (its signature), in a session where one can take the patch: the
        statuses held against ``expected`` by ``compare``, as ``grade`` does."""
        run = self.run_tests(task, patch, backend, select=select, maxfail=maxfail, log_dir=log_dir)
        if select is not None:
            expected = {test_id: expected[test_id] for test_id in select if test_id in expected}
        config = getattr(backend, "config", None)
        return compare(run, expected, task, getattr(config, "tamper", "zero"))

    def close(self) -> None:
        if self.checks is not None:
            self.checks.close()
        for session in self.opened:
            if session is not None:
                session.close()
