"""The Sandbox seam: run commands in an isolated copy of a task's environment.

Two backends implement it (``harness.sandboxes.bwrap``, ``harness.sandboxes.docker``; ``backends``
picks one). Both start from the same pristine state — the sealed buggy tree at the task's workdir on top of the task's environment — with no network,
resource limits and output captured to a file on the host. Everything above this module (grader,
pipelines, agents) only sees the protocol.
"""

from __future__ import annotations

import errno
import os
import shlex
import stat
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import IO, Protocol

from harness.config import Limits
from harness.records import ExecResult, Task

DISPLAY_BYTES = 16 * 1024
# Files the harness exchanges with a sandbox (patches, plugins, reports) live here. Both backends back it
# with a host folder that belongs to the host, bound over this path, so reading and writing them costs
# no engine round trip (a Docker copy is ~50 ms). A command may write there only the files reserved for
# it (Sandbox.output), never add, remove or replace an entry: no tmpfs bounds the folder, and the host
# reads what is there.
IO_DIR = "/tmp/.swedeck-io"
# The most the host reads of a report a command wrote (JUnit, outcome records): a JUnit report of
# 100 000 tests is about 20 MB; a larger one is a flood, and parsing it would outlast the grade's
# post-processing budget (harness.grading.grader).
REPORT_BYTES = 64 * 2**20
TIMEOUT_EXIT = 124  # coreutils timeout(1) after TERM
KILLED_EXIT = 137  # after KILL


class EnvError(RuntimeError):
    """The task's environment could not be materialised (build failed, image missing, tree unusable)."""

    def __init__(self, message: str, log: str = "") -> None:
        super().__init__(message)
        self.log = log


class SandboxError(RuntimeError):
    """The sandbox itself failed (engine gone, container died): an infrastructure fault, not the task's."""


class Sandbox(Protocol):
    backend: str
    workdir: str
    activation: str  # what every command runs first (the task environment's activation)

    def run(
        self, command: str, *, timeout: float | None = None, env: Mapping[str, str] | None = None, reap: bool = False
    ) -> ExecResult:
        """Run a shell command in the workdir; never raises for the command's own failure. With
        ``reap``, no process the command started (a daemon, a background writer) is left when it
        returns."""
        ...

    def write_file(self, path: str, data: bytes | str) -> None: ...

    def read_file(self, path: str, *, limit: int | None = None) -> bytes:
        """A regular file's bytes; Unreadable for anything else or for more than ``limit`` bytes
        (default: the per-file limit). Never blocks, never follows a link."""
        ...

    def output(self, path: str) -> str:
        """Reserve ``path`` in the IO folder for commands to write: an empty file the sandbox user
        owns (one a command never wrote reads as empty). Returns the path."""
        ...

    def size(self, path: str) -> int:
        """The size of a file in the IO folder (0 when there is none), read from its entry alone: a
        cheap poll for an answer a command writes in one call."""
        ...

    def pipe(self, path: str) -> str:
        """Reserve ``path`` in the IO folder as a named pipe a command may read (``read <&9`` after
        ``exec 9<> path``) and only the host writes (``tell``). Returns the path."""
        ...

    def tell(self, path: str, line: str) -> bool:
        """Write one line into a pipe ``pipe`` reserved, never blocking; False when no command holds
        it open."""
        ...

    def close(self) -> None: ...


class Backend(Protocol):
    name: str

    def prepare(self, task: Task) -> None:
        """Materialise the task's environment and pristine tree (cached); raises EnvError."""
        ...

    def open(self, task: Task, *, network: bool = False) -> Sandbox: ...

    def image_digest(self, task: Task) -> str:
        """What the task's sandboxes start from ('' where no image is involved)."""
        ...


class Unreadable(OSError):
    """A file the host refuses to read: not a regular file (a FIFO, a folder, a link) or too large."""


def read_regular(path: Path, limit: int) -> bytes:
    """``path``'s bytes, checked before anything is read: a named pipe would block the read for ever,
    a link could lead anywhere, and a huge file would fill the host's memory."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise Unreadable(f"{path.name} is a symbolic link") from err
        raise
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise Unreadable(f"{path.name} is not a regular file (mode {stat.filemode(mode)})")
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(limit + 1)
        if len(data) > limit:
            raise Unreadable(f"{path.name} holds more than {limit} bytes")
        return data
    finally:
        os.close(fd)


def write_io(target: Path, data: bytes) -> None:
    """A file the host writes into a sandbox's IO folder: the host's, readable by the sandbox user,
    in folders the sandbox user cannot change."""
    target.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
    target.write_bytes(data)
    target.chmod(0o644)  # whatever the host's umask: the sandbox user reads it


def in_io(path: str) -> bool:
    """Whether the sandbox path ``path`` names something in the IO folder."""
    return path.startswith(IO_DIR + "/")


def io_only(path: str) -> str:
    """``path``, which must lie in the IO folder (what Sandbox.output reserves), without a way back out."""
    if not in_io(path) or ".." in path.split("/"):
        raise ValueError(f"not a path in the IO folder: {path}")
    return path


def io_target(io: Path, path: str) -> str:
    """The host side of ``path`` in the IO folder, the host folder ``io``. Names map as they are, with
    nothing to resolve: every folder under ``io`` is the host's, and the sandbox user can add no entry
    anywhere in it (it writes only into the files ``Sandbox.output`` reserved), so no link is there."""
    return f"{io}/{io_only(path)[len(IO_DIR) + 1 :]}"


def io_size(io: Path, path: str) -> int:
    """``Sandbox.size`` for a backend whose IO folder is the host folder ``io``."""
    try:
        return os.lstat(io_target(io, path)).st_size
    except FileNotFoundError:
        return 0


def answered(sandbox: Sandbox, path: str) -> bytes | None:
    """The bytes of a file in the IO folder that a command writes in one call ending in a newline,
    once it is complete; None before (polled by its size, which reads nothing)."""
    if sandbox.size(path) and (data := sandbox.read_file(path)).endswith(b"\n"):
        return data
    return None


def make_pipe(io: Path, path: str, owner: int) -> str:
    """``Sandbox.pipe`` for a backend whose IO folder is the host folder ``io``: the pipe's entry is the
    host's folder's, so a command can neither replace nor remove it, only open it."""
    target = io_target(io, path)
    os.mkfifo(target, 0o600)
    os.chown(target, owner, owner)
    return path


def tell_pipe(io: Path, path: str, line: str) -> bool:
    """``Sandbox.tell`` for a backend whose IO folder is the host folder ``io``."""
    try:
        fd = os.open(io_target(io, path), os.O_WRONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError as err:
        if err.errno == errno.ENXIO:  # nobody reads it
            return False
        raise
    try:
        os.write(fd, f"{line}\n".encode())
    finally:
        os.close(fd)
    return True


def host_path(path: str, mounts: Iterable[tuple[str, Path]], workdir: str) -> Path:
    """Map a sandbox path to the host folder mounted there (first match wins). The result is resolved and
    must stay inside that folder: code under test can plant symlinks, and the host must never follow
    one out of the sandbox. (Strings, not pathlib: the host maps paths on every file it reads or
    writes, and polls some.)"""
    parts = _parts(path if path.startswith("/") else f"{workdir}/{path}")
    for inside, outside in mounts:
        head = _parts(inside)
        if parts[: len(head)] == head:
            base = os.path.realpath(outside)
            resolved = os.path.realpath(os.path.join(outside, *parts[len(head) :]))
            if resolved != base and not resolved.startswith(base.rstrip("/") + "/"):
                raise ValueError(f"path escapes the sandbox: {path}")
            return Path(resolved)
    raise ValueError(f"not a host-backed sandbox path: {path}")


def _parts(path: str) -> list[str]:
    """A path's names as PurePosixPath has them (no empty or ``.`` parts; ``..`` kept)."""
    return [name for name in path.split("/") if name not in ("", ".")]


def shell_command(command: str, activation: str, limits: Limits, timeout: float) -> list[str]:
    """The argv every backend runs: timeout(1) inside the sandbox so a wedged command dies even if the
    host-side watchdog is late, and ulimits for what the kernel can bound per process."""
    script = f"{activation}\n{command}" if activation else command
    # bash counts -f in KiB (512-byte blocks only in POSIX mode), -v in KiB
    ulimits = f"ulimit -f {limits.file_bytes // 1024}; ulimit -v {limits.memory_mb * 1024}; "
    return [
        "timeout", "-k", "2", f"{max(timeout, 1):.0f}",
        "bash", "-c", ulimits + "exec bash -c " + shlex.quote(script),
    ]  # fmt: skip


def capture(
    chunks: Iterable[bytes], log: IO[bytes], cap: int, deadline: float, kill: Callable[[], None]
) -> tuple[bool, bool]:
    """Copy output chunks to ``log`` up to ``cap`` bytes. Returns (output_limited, timed_out).

    On overflow or past the deadline the command is killed at once: a test that prints a gigabyte or
    never stops printing must end with a recorded outcome, not fill the disk. The rest of the stream is
    drained, not read into the log: a Docker engine will not start another exec in a container whose
    previous exec still has unread output.
    """
    written = 0
    outcome = (False, False)
    it = iter(chunks)
    for chunk in it:
        if written + len(chunk) > cap:
            log.write(chunk[: cap - written])
            outcome = (True, False)
        elif time.monotonic() > deadline:
            outcome = (False, True)
        else:
            log.write(chunk)
            written += len(chunk)
            continue
        kill()
        for _ in it:
            pass
        break
    return outcome


def tail(output: bytes, lines: int = 20) -> str:
    """The last lines of a command's output, for a reason a person reads."""
    return "\n".join(output.decode(errors="replace").splitlines()[-lines:])[-4000:]


def display(log_path: Path) -> str:
    """Head and tail of a log for humans and models; the file keeps everything that was captured."""
    size = log_path.stat().st_size
    with log_path.open("rb") as f:
        if size <= DISPLAY_BYTES:
            return f.read().decode(errors="replace")
        head = f.read(DISPLAY_BYTES // 2)
        f.seek(size - DISPLAY_BYTES // 2)
        tail = f.read()
    skipped = size - DISPLAY_BYTES
    return head.decode(errors="replace") + f"\n[... {skipped} bytes omitted ...]\n" + tail.decode(errors="replace")


def exec_result(
    command: str,
    exit_code: int | None,
    log_path: Path,
    started: float,
    *,
    limited: bool,
    timed_out: bool,
    timeout: float,
) -> ExecResult:
    duration = time.monotonic() - started
    # timeout(1) reports 124/137; a 137 well before the deadline is the kernel's OOM killer, not a timeout
    timed_out = timed_out or (not limited and exit_code in (TIMEOUT_EXIT, KILLED_EXIT) and duration >= timeout - 1)
    return ExecResult(
        command=command,
        exit_code=None if (limited or timed_out) else exit_code,
        output=display(log_path),
        log_path=str(log_path),
        timed_out=timed_out,
        output_limited=limited,
        duration_s=round(duration, 4),
    )
