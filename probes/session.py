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
  server runs a probe's tests;
* a task's healthy sessions are parked when it is done (``probes.parking``); the next task of the same
  environment takes one over, its tree swapped in by the same server (``retarget``: the work tree
  emptied and refilled, /tmp cleared), so the starts and the warm-up are paid once per session.

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
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.config import Settings
from harness.sandboxes.envs import tree_tar
from harness.grading.commands import pytest_command
from harness.grading.shipping import PLUGIN_PATH, PLUGINS, ship
from harness.names import file_name
from harness.grading.parsers import parse_junit
from harness.records import Task, TestRun, content_hash
from harness.sandboxes.sandbox import IO_DIR, REPORT_BYTES, Backend, Sandbox, Unreadable, answered
from harness.grading.tree import LISTING, TaskFacts, parse_listing
from harness.grading.trusted import archive, decode, install_command, plan
from probes.checks import Files

SERVER = Path(__file__).with_name("session_server.py")
WARMUP = SERVER.with_name("session_warmup.py")  # the server imports it from its own folder
PRELOAD = PLUGINS / "swedeck_preload.py"  # and the grades' rule for a tree that shadows what it imported
SESSION_S = 6 * 3600.0  # the server's own command: it lives as long as the task's probing
READY_S = 120.0  # the server's start: the tree's snapshot and pytest's import (its warm-up on top)
POLL_S = 0.001
# Jobs a session holds at once: while its server runs one probe's tests, the host writes the next job
# and reads the last answer. The server still grades them one after the other, each on the snapshot.
DEPTH = 2
_SUITE_TIME = re.compile(rb"<testsuite\b[^>]*?\btime=\"([0-9.]+)\"")
_CASE_TIME = re.compile(rb"<testcase\b[^>]*?\btime=\"([0-9.]+)\"")


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
    switched: int = 0  # sessions a task took over from another (parked, ``fit``), its tree swapped in
    schemata: int = 0  # schema runs (``run_schema``): one collection, many probes
    schema_runs: int = 0  # probe runs in them
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, **counts: float) -> None:
        with self.lock:
            for key, value in counts.items():
                setattr(self, key, getattr(self, key) + value)


class ServerGone(RuntimeError):
    """The session's server is gone or never came up: its probes go to ``grade``."""


def fit(task: Task, backend: Backend) -> str | None:
    """What a session must share with a task to serve it after another: the backend's kind, settings
    and limits (all but the per-command timeout, which each job carries: probes get one scaled to the
    task's own runs), and the task's environment (image or recipe, workdir, activation), so only the
    tree differs. None where the tree cannot change: the repository lives in the task's image."""
    config, settings = getattr(backend, "config", None), getattr(backend, "settings", None)
    if task.repo_source.kind == "image" or config is None or settings is None:
        return None
    limits = config.limits.model_copy(update={"timeout_s": 0.0})
    return content_hash([backend.name, config.model_copy(update={"limits": limits}), str(settings.cache_dir), task.environment])


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
        self.key = fit(task, backend)
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
        that listing, then installs them as the host wrote them (once told), warms up and serves. The
        listing and the install run in the sandbox as before, only as children of the server, not as
        sandbox commands of their own (each costs a sandbox start)."""
        self.box = box = self.backend.open(self.task)
        prefix = f"{self.folder}/"
        warm, listing = self._warm(prefix)
        box.write_file(f"{self.folder}/warm.json", json.dumps(warm))
        box.write_file(f"{self.folder}/server.py", SERVER.read_bytes())
        box.write_file(f"{self.folder}/{WARMUP.name}", WARMUP.read_bytes())
        box.write_file(f"{self.folder}/{PRELOAD.name}", PRELOAD.read_bytes())
        # before the server starts: Python remembers a folder on its path that was empty or missing
        ship(box, ("swedeck_select", "swedeck_coverage", "swedeck_schema"))
        command = f"python {self.folder}/server.py {self.folder}"

        def serve() -> None:
            self.ended = box.run(command, timeout=SESSION_S, env={"PYTHONPATH": PLUGIN_PATH}).output[-2000:]

        self.thread = threading.Thread(target=serve, name="swedeck-probe-server", daemon=True)
        self.thread.start()
        self._prepare(warm, listing, prefix)

    def retarget(self, task: Task, backend: Backend, facts: TaskFacts, stats: Stats) -> None:
        """Serve ``task`` from now on, a task this session ``fit``s, with ``backend``'s per-command timeout:
        its tree in place of the last task's, in this sandbox, by this server (a switch job). Raises
        ServerGone."""
        started = time.monotonic()
        self.task, self.facts, self.stats = task, facts, stats
        self.timeout_s = backend.config.limits.timeout_s
        settings = getattr(self.backend, "settings", None) or Settings.from_env()
        with self.numbering:
            n, self.jobs = self.jobs, self.jobs + 1
        prefix = f"{self.folder}/task-{n}-"
        tree = f"{prefix}tree.tar"
        self.box.write_file(tree, tree_tar(task, settings, 0).read_bytes())
        warm, listing = self._warm(prefix)
        self.box.write_file(f"{self.folder}/job-{n}.json", json.dumps({"switch": {**warm, "tree": tree}}))
        self.box.write_file(f"{self.folder}/job-{n}.go", "")
        self._prepare(warm, listing, prefix)
        stats.add(start_s=time.monotonic() - started, switched=1)

    def _warm(self, prefix: str) -> tuple[dict, str]:
        """What the server prepares a tree by (the task's pytest commands, where to list, install and
        say ready), each file it writes reserved; and the listing's path."""
        box = self.box
        env = {"PYTHONPATH": PLUGIN_PATH, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTEST_ADDOPTS": self._addopts(None)}
        listing = box.output(f"{prefix}listing")
        warm = {
            "commands": [c for c in (pytest_command(c, PLUGIN_PATH) for c in self.task.test_cmd) if c is not None],
            "env": env, "timeout": self.timeout_s,
            "listing": f"{LISTING} > {listing}", "listed": box.output(f"{prefix}listed"), "install": f"{prefix}install.sh",
            "go": f"{prefix}install.go", "ready": box.output(f"{prefix}ready.json"),
        }  # fmt: skip
        return warm, listing

    def _prepare(self, warm: dict, listing: str, prefix: str) -> None:
        """The host's part of preparing a tree: the hidden tests planned from the server's listing, the
        install written, then the server's word that the tree is ready."""
        box = self.box
        if self._wait(warm["listed"], READY_S).strip() != b"0":
            raise ServerGone("could not list the tree")
        self.listing = parse_listing(box.read_file(listing))
        hidden = {path: None if stored is None else decode(stored) for path, stored in self.facts.hidden.items()}
        todo = plan(self.listing, self.listing, self.task, self.facts, hidden)
        infra = f"{prefix}infra.tar"
        box.write_file(infra, archive(todo.write))
        box.write_file(warm["install"], install_command(todo.delete, infra))
        box.write_file(warm["go"], "")
        said = json.loads(self._wait(warm["ready"], READY_S + len(warm["commands"]) * self.timeout_s))  # the warm-up collects each command once
        if said.get("installed") != 0:
            raise ServerGone(f"the hidden tests did not install: {said.get('output', '')}")

    def _wait(self, path: str, limit_s: float) -> bytes:
        """The complete file a server writes in one call (it ends in a newline)."""
        deadline = time.monotonic() + limit_s
        while time.monotonic() < deadline:
            if (data := answered(self.box, path)) is not None:
                return data
            if not self.thread.is_alive():
                raise ServerGone(f"the probe server ended: {self.ended}")
            time.sleep(POLL_S)
        raise ServerGone(f"the probe server did not answer within {limit_s:.0f} s")

    def _addopts(self, maxfail: int | None) -> str:
        """What grade's PYTEST_ADDOPTS holds after the JUnit options (no outcomes record: no forged pass
        to look for in our own probes)."""
        return "".join(f" -p {name}" for name in self.facts.plugins) + (f" --maxfail={maxfail}" if maxfail is not None else "")

    def run_tests(
        self, patch: str, files: Files, select: Sequence[str] | None, maxfail: int | None, coverage: Sequence[str] | None,
        log_dir: Path | None,
    ) -> TestRun:
        """``harness.grading.grader.run_tests`` for one of our patches, whose ``files`` passed the checks
        (``Checks.files``). ``coverage``: the paths the coverage plugin traces. Raises ServerGone."""
        started = time.monotonic()
        n = self._number()
        box, folder = self.box, self.folder
        addopts = self._addopts(maxfail)
        env = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONPATH": PLUGIN_PATH}
        if select is not None:
            addopts += " -p swedeck_select"
            env["SWEDECK_SELECT"] = f"{folder}/select-{n}"
            box.write_file(env["SWEDECK_SELECT"], "".join(f"{test_id}\n" for test_id in select))
        if coverage is not None:  # as the grader has it: one log for every command
            addopts += " -p swedeck_coverage"
            env["SWEDECK_COVER_FILES"], env["SWEDECK_COVER_ROOT"] = f"{folder}/cover-files-{n}", box.workdir
            env["SWEDECK_COVER_LOG"] = box.output(f"{folder}/cover-{n}.jsonl")
            box.write_file(env["SWEDECK_COVER_FILES"], "".join(f"{path}\n" for path in coverage))
        commands = self._commands(n, self.task.test_cmd, env, addopts)
        ran = self._serve(n, files, commands, self.timeout_s)
        answered = time.monotonic()
        run = self._run_of(patch, commands, ran, log_dir, answered - started)
        if coverage is not None:
            run.coverage = box.read_file(env["SWEDECK_COVER_LOG"], limit=REPORT_BYTES).decode(errors="replace")
        self.stats.add(host_s=time.monotonic() - answered)
        return run

    def run_schema(
        self, files: Files, mutants: Sequence[tuple[str, int, str, Sequence[str] | None, int | None]], log_dir: Path | None
    ) -> dict[int, TestRun]:
        """Probes switched into one tree (``probes.schema``: ``files``), each run on its own in a fork of
        one collected session (``swedeck_schema``). ``mutants``: (patch, number, the key of the function
        it rewrites, the tests to run or None for all, maxfail). Each probe run gives the ``TestRun`` its
        own ``run_tests`` would; a probe missing from the answer was not run (its function ran during
        collection, a run before it changed the tree, or the session's command failed): the caller
        grades it on its own. Only for a task with one pytest command. Raises ServerGone."""
        started = time.monotonic()
        n = self._number()
        box, folder = self.box, self.folder
        job = {"mutants": [], "timeout": self.timeout_s, "output_bytes": self.output_bytes, "answer": box.output(f"{folder}/schema-{n}.json")}
        env = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONPATH": PLUGIN_PATH, "SWEDECK_SCHEMA": f"{folder}/schema-job-{n}.json"}
        commands = self._commands(n, self.task.test_cmd[:1], env, self._addopts(None) + " -p swedeck_schema")
        job["log"] = commands[0]["log"]
        for _, number, key, tests, maxfail in mutants:
            junit, log = box.output(f"{folder}/junit-{n}-m{number}.xml"), box.output(f"{folder}/log-{n}-m{number}")
            job["mutants"].append({"number": number, "key": key, "tests": None if tests is None else list(tests), "maxfail": maxfail, "junit": junit, "log": log})
        box.write_file(env["SWEDECK_SCHEMA"], json.dumps(job))
        # the runs one after the other, each under the probes' timeout, after one collection
        ran = self._serve(n, files, commands, len(mutants) * (self.timeout_s + 5) + self.timeout_s)
        seconds = time.monotonic() - started
        said = answered(box, job["answer"])  # written before the command ended, or never
        answers = json.loads(said) if said is not None else {}
        out = {}
        for (patch, number, *_), mutant in zip(mutants, job["mutants"], strict=True):
            outcome = answers.get(str(number))
            if outcome is None or "skipped" in outcome:
                continue
            each = [{**commands[0], "log": mutant["log"], "junit": mutant["junit"]}]
            out[number] = self._run_of(patch, each, [{**outcome, "forked": ran[0]["forked"]}], log_dir, outcome["seconds"])
        # collection is pytest's own time too, paid once for the schema
        self.stats.add(host_s=time.monotonic() - started - seconds, schema_runs=len(out), schemata=1, suite_s=answers.get("collection_s", 0.0))
        return out

    def _number(self) -> int:
        with self.numbering:
            n, self.jobs = self.jobs, self.jobs + 1
        return n

    def _commands(self, n: int, shells: Sequence[str], env: dict[str, str], addopts: str) -> list[dict]:
        """The job's test commands, each with its log and JUnit report reserved."""
        commands = []
        for i, command in enumerate(shells):
            junit, log = self.box.output(f"{self.folder}/junit-{n}-{i}.xml"), self.box.output(f"{self.folder}/log-{n}-{i}")
            commands.append({
                **(pytest_command(command, env["PYTHONPATH"]) or {"argv": None}), "shell": command, "log": log, "junit": junit,
                "env": {**env, "PYTEST_ADDOPTS": f"-rA -p no:cacheprovider -o junit_family=xunit1 --junitxml={junit}{addopts}"},
            })  # fmt: skip
        return commands

    def _serve(self, n: int, files: Files, commands: list[dict], timeout: float) -> list[dict]:
        """Job ``n``: the probe's files written, the commands run; the server's answer."""
        started = time.monotonic()
        result = self.box.output(f"{self.folder}/result-{n}.json")
        job = {
            "files": {p: None if f is None else [f[0], base64.b64encode(f[1]).decode()] for p, f in files.items()},
            "commands": commands, "timeout": timeout, "output_bytes": self.output_bytes,
        }  # fmt: skip
        self.box.write_file(f"{self.folder}/job-{n}.json", json.dumps(job))
        self.box.write_file(f"{self.folder}/job-{n}.go", "")
        sent = time.monotonic()
        # the jobs ahead of this one in the server's queue (DEPTH) are waited for too
        ran = json.loads(self._wait(result, DEPTH * len(commands) * (timeout + 30) + 30))
        self.stats.add(host_s=sent - started, restore_s=ran[-1].get("restore", 0.0))
        return ran

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
