"""The probe sessions of a task (``SessionPool``), and parked sessions: a task's healthy sessions kept
when its probing ends, for the next task of the same environment, which takes one over with its tree
swapped in (``probes.session.ProbeSession.retarget``)."""

from __future__ import annotations

import atexit
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from harness.grading.grader import run_tests
from harness.grading.parsers import uses_junit
from harness.grading.trusted import decode, task_facts
from harness.grading.verdict import compare
from harness.records import Grade, Status, Task, TestRun
from harness.sandboxes.sandbox import Backend
from probes.checks import Checks
from probes.schema import BATCH, Schema, reads_source, tree_tests
from probes.session import DEPTH, ProbeSession, ServerGone, Stats, fit

Step = tuple[str, frozenset[str] | None, int | None]  # a probe's run: (patch, its tests or None for all, maxfail)


def step(patch: str, tests: Sequence[str] | None, maxfail: int | None) -> Step:
    """The key of a probe's run, whatever order its tests are listed in."""
    return patch, None if tests is None else frozenset(tests), maxfail


PARKED_MAX = 4  # idle sessions kept for later tasks; the oldest is closed first
_parked: list[ProbeSession] = []
_parking = threading.Lock()


def park(session: ProbeSession) -> None:
    """Keep an idle, healthy session for the next task it ``fit``s (``adopt``), instead of closing it:
    the sandbox, the server's interpreter and its warm pytest serve that task too."""
    if session.key is None or session.thread is None or not session.thread.is_alive():
        session.close()
        return
    with _parking:
        _parked.append(session)
        excess = _parked[:-PARKED_MAX]
        del _parked[:-PARKED_MAX]
    for old in excess:
        old.close()


def adopt(key: str | None) -> ProbeSession | None:
    """The most recently parked session of ``key``, taken out of the park."""
    with _parking:
        for i in range(len(_parked) - 1, -1, -1):
            if key is not None and _parked[i].key == key:
                return _parked.pop(i)
    return None


def release_parked() -> None:
    """Close every parked session (a stage's end; at exit too)."""
    with _parking:
        sessions = list(_parked)
        _parked.clear()
    for session in sessions:
        session.close()


atexit.register(release_parked)


class SessionPool:
    """The probe sessions of one task for ``workers`` graders at once: one session per DEPTH workers,
    each opened on first use; ``grade`` has ``harness.grading.grader.grade``'s signature and falls back
    to it for any probe no session can take. ``threads``: how many probes it can take at once, so each
    session holds DEPTH jobs however few the workers (its server still runs one at a time); at most
    ``workers`` of them are fallbacks graded at once."""

    def __init__(self, task: Task, backend: Backend, tree: Path, workers: int, stats: Stats | None = None) -> None:
        self.task, self.backend, self.tree = task, backend, tree
        self.size = -(-max(workers, 1) // DEPTH)
        self.threads = self.size * DEPTH
        self.fallbacks = threading.BoundedSemaphore(max(workers, 1))
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
            session = self._adopted() or ProbeSession(self.task, self.backend, self.facts, self.stats)
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

    def _adopted(self) -> ProbeSession | None:
        """A parked session of another task this task ``fit``s, serving this one now; None when there is
        none or it could not take this tree (it is closed then)."""
        session = adopt(fit(self.task, self.backend))
        if session is None:
            return None
        try:
            session.retarget(self.task, self.backend, self.facts, self.stats)
        except (ServerGone, OSError):
            session.close()
            return None
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
            except (ServerGone, OSError):
                broken = True
            finally:
                self._give_back(session, broken)
        if run is not None:
            self.stats.add(graded=1)
            return run
        self.stats.add(fallback=1)
        with self.fallbacks:
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

    def schema_grades(
        self, task: Task, backend: Backend, expected: dict[str, Status], steps: Sequence[tuple[str, Sequence[str] | None, int | None]],
        log_dir: Path | None = None,
    ) -> dict[Step, Grade]:
        """The grades of those of ``steps`` (patch, tests or None for all, maxfail) that mutant schemata
        could run (``probes.schema``, up to BATCH probes a schema), each what ``grade`` gives that run,
        keyed by ``Step``. A task with one pytest command only, whose tests (the tree's and the hidden
        ones) and gold's files read no source text or line numbers (``probes.schema.reads_source``);
        every other step is left to ``grade``."""
        if len(task.test_cmd) != 1:
            return {}
        session = self._take()
        if session is None:
            return {}
        out: dict[Step, Grade] = {}
        broken = False
        tamper = getattr(getattr(backend, "config", None), "tamper", "zero")
        try:
            gold = self.checks.get(task.answer.gold_patch)
            hidden = [decode(stored).data for stored in self.facts.hidden.values() if stored is not None]
            texts = [*hidden, *tree_tests(self.tree), *(f[1] for f in gold.values() if f is not None)] if gold else []
            if reads_source(texts):
                gold = None  # a switch would change what they read
            batches: list[tuple[Schema, list]] = []
            for number, (patch, tests, maxfail) in enumerate(steps, 1):
                if gold is None or (files := self.checks.get(patch)) is None:
                    continue
                if not batches or len(batches[-1][1]) == BATCH:
                    batches.append((Schema(gold), []))
                schema, joined = batches[-1]
                if schema.add(number, files):
                    joined.append((patch, number, schema.numbers[number], tests, maxfail))
            for schema, joined in batches:
                if len(joined) < 2:  # one probe alone gains nothing from a schema
                    continue
                runs = session.run_schema(schema.files(), joined, log_dir)
                for patch, number, _, tests, maxfail in joined:
                    if number in runs:
                        wanted = expected if tests is None else {t: expected[t] for t in tests if t in expected}
                        out[step(patch, tests, maxfail)] = compare(runs[number], wanted, task, tamper)
        except (ServerGone, OSError):
            broken = True
        finally:
            self._give_back(session, broken)
        self.stats.add(graded=len(out))
        return out

    def close(self) -> None:
        """Sessions still healthy are parked for a later task (``park``), the others closed."""
        if self.checks is not None:
            self.checks.close()
        for session in self.opened:
            if session is None:
                continue
            if self.broken:
                session.close()
            else:
                park(session)
