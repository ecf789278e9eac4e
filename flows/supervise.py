"""A pipeline or training command as two processes: this one supervises, a worker (``flows.worker``) runs the flows.

The worker runs in its own session, so a terminal's Ctrl-C reaches only the supervisor, which then
decides what stops: on the first SIGINT or SIGTERM it kills the worker and everything the worker
started (the temporary Prefect server, sandboxes, containers), at once and for good. Results are
committed atomically per task, so what was committed stands and a rerun of the same command resumes
from it, exactly as after a crash (``tests/test_pipeline1.py`` kills runs at random and compares).
It prints ``interrupted: N of M done; rerun the same command to resume`` and exits 130 (SIGINT) or
143 (SIGTERM). A second signal while it cleans up exits at once.

The supervisor is a child subreaper, so every process the worker starts stays its descendant even
when orphaned, and can be found and killed. Everything the run starts also carries the run's token
(``harness.sandboxes.leftovers``) so a run killed with SIGKILL, supervisor and all, is swept by the next one.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from queue import Empty, Queue
from typing import Literal

from pydantic import BaseModel, ConfigDict

from flows.hygiene import sweep_run_folder
from harness.sandboxes import leftovers
from harness.config import Settings

Stage = Literal["pipeline1", "pipeline2", "strengthen", "train", "arms"]
_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_PDEATHSIG = 1
POLL_S = 0.2
PIPE_GRACE_S = 5.0


class Job(BaseModel):
    """What the worker runs: the stages in order, over one run folder, with one resolved config."""

    model_config = ConfigDict(extra="forbid")

    stages: list[Stage]
    out: str
    config: dict  # a SwedeckConfig's, or for "train" and "arms" a RunConfig's
    workers: int = 1
    sources: list[str] = []
    judge: bool | None = None  # Pipeline 2's judge: True scripted, False none, None from the environment
    strengthen_all: bool = False  # strengthening also on tasks with a confirmed survivor that the judge did not call too loose
    deck: str = ""  # "arms": the deck whose arms train (``arms``: which, empty for all) and the tasks each holds out
    arms: list[str] = []
    held_out: int = 1


class Interrupted(Exception):
    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _prctl(option: int, value: int) -> bool:
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):  # not Linux: orphans go to init, and the next run's sweep finds them
        return False


def die_with_parent() -> None:
    """In the worker: end when the supervisor ends, however it ends."""
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() == 1:  # the supervisor was already gone before the line above
        os._exit(1)


@contextlib.contextmanager
def _signals() -> Iterator[list[int]]:
    """Record SIGINT/SIGTERM instead of raising; the second one ends the process on the spot, after
    one SIGKILL to everything below it (the sweep of the next run finds anything that escaped)."""
    received: list[int] = []

    def handler(signum: int, frame: object) -> None:
        if received:
            for pid in _descendants(os.getpid()):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            os._exit(128 + signum)
        received.append(signum)

    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield received
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _kill_tree(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the worker and every descendant of this process, and reap them, until none is left."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        pids = _descendants(os.getpid())
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        for pid in pids:  # orphans were reparented to us (subreaper): reap them, or they stay zombies
            if pid != proc.pid:
                try:
                    os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    pass
        proc.poll()
        time.sleep(0.05)
    proc.wait()


PREFECT_DEFAULTS = {
    "PREFECT_LOGGING_LEVEL": "WARNING",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    # a loaded machine starts the temporary server slowly; Prefect's default of 20 s is too short
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180",
}  # where the user has not said otherwise


def supervise(job: Job, settings: Settings) -> Iterator[dict]:
    """Run ``job`` in a worker. Yields ``{"started": what was swept}`` once the run folder is clean,
    then the worker's events (``{"stage", "summary"}`` per finished stage, ``{"update"}`` per training
    update) and a ``{"tick"}`` every
    POLL_S. Raises Interrupted after a signal, RunConflict when another live run writes to the same
    folder, WorkerFailed when the worker fails; in every case nothing of the run is left running."""
    token = leftovers.owner()
    with _signals() as received:
        swept = leftovers.sweep(settings)  # what runs killed earlier left in this cache
        leftovers.register_run(settings, token, Path(job.out))
        subreaper, proc = False, None
        try:
            cleaned = sweep_run_folder(Path(job.out))
            yield {"started": f"{swept.summary()}, {len(cleaned)} partial folder(s) or orphaned log(s)" if swept or cleaned else ""}
            scratch = leftovers.scratch_dir(settings, token)
            scratch.mkdir(parents=True, exist_ok=True)
            subreaper = _prctl(_PR_SET_CHILD_SUBREAPER, 1)
            if not received:
                proc, events = _start(job, token, scratch)
                yield from _watch(proc, events, received)
            if received:
                raise Interrupted(received[0])
            if proc is not None and proc.returncode != 0:
                raise WorkerFailed(proc.returncode)
        finally:
            if proc is not None:  # the worker, and anything it left running when it ended
                _kill_tree(proc)
            if subreaper:
                _prctl(_PR_SET_CHILD_SUBREAPER, 0)
            leftovers.sweep(settings, gone={token})  # its containers, sandboxes, scratch and run file


def _start(job: Job, token: str, scratch: Path) -> tuple[subprocess.Popen[bytes], Queue[dict | None]]:
    env = {
        **os.environ,
        leftovers.RUN_ENV: token,
        "TMPDIR": str(scratch),  # every temporary file of the run lands where a sweep finds it
        **{name: os.environ.get(name, value) for name, value in PREFECT_DEFAULTS.items()},
    }
    read_fd, write_fd = os.pipe()
    proc = subprocess.Popen(
        [sys.executable, "-m", "flows.worker", str(write_fd)],
        stdin=subprocess.PIPE, env=env, pass_fds=(write_fd,), start_new_session=True,
    )  # fmt: skip
    os.close(write_fd)
    events: Queue[dict | None] = Queue()
    threading.Thread(target=_read_events, args=(read_fd, events), daemon=True).start()
    assert proc.stdin is not None
    proc.stdin.write(job.model_dump_json().encode())
    proc.stdin.close()
    return proc, events


def _watch(proc: subprocess.Popen[bytes], events: Queue[dict | None], received: list[int]) -> Iterator[dict]:
    """The worker's events until the pipe closes or a signal comes. A process the worker started may
    hold the pipe's end after the worker ended, so then the events still in the pipe get a grace
    period and no more."""
    grace = None
    while not received:
        try:
            event = events.get(timeout=POLL_S)
        except Empty:
            if proc.poll() is not None:
                grace = grace or time.monotonic() + PIPE_GRACE_S
                if time.monotonic() > grace:
                    return
            _reap_orphans(proc.pid)
            yield {"tick": time.monotonic()}
            continue
        if event is None:
            proc.wait()
            return
        yield event


def _reap_orphans(worker: int) -> None:
    """Reap the exited orphans reparented to this subreaper while the run goes on: each sandbox whose
    parent died mid-run would otherwise stay a zombie until the run ends (hundreds on a long curate).
    The worker itself is left for Popen to reap, so its exit status is kept."""
    while True:
        try:
            exited = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return
        if exited is None or exited.si_pid == worker:
            return
        os.waitpid(exited.si_pid, 0)


class WorkerFailed(RuntimeError):
    def __init__(self, returncode: int) -> None:
        super().__init__(f"the worker exited with {returncode}")
        self.returncode = returncode


def _read_events(fd: int, events: Queue[dict | None]) -> None:
    with os.fdopen(fd, "r") as lines:
        for line in lines:
            events.put(json.loads(line))
    events.put(None)


def emit(stream, event: dict) -> None:  # noqa: ANN001 - the worker's end of the pipe
    stream.write(json.dumps(event) + "\n")
    stream.flush()


def done(folder: Path, marker: str) -> int:
    """Committed task folders under ``folder`` (partial ones start with a dot)."""
    if not folder.is_dir():
        return 0
    return sum(1 for p in folder.iterdir() if not p.name.startswith(".") and (p / marker).exists())


