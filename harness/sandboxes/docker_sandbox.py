"""One Docker sandbox: the container a task's commands run in, its files, and the reaping of what they leave."""

from __future__ import annotations

import functools
import itertools
import os
import secrets
import shlex
import shutil
import tarfile
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any, Protocol

from harness.config import SandboxConfig, Settings
from harness.sandboxes.envs import needs_env_build, run_env, script
from harness.sandboxes.folders import HOST_FOLDER_BYTES, mount_tmpfs, release
from harness.sandboxes.leftovers import container_labels, sandbox_prefix
from harness.records import ExecResult, Task
from harness.sandboxes.sandbox import (
    IO_DIR,
    EnvError,
    SandboxError,
    capture,
    exec_result,
    io_size,
    in_io,
    io_target,
    make_pipe,
    io_only,
    read_regular,
    shell_command,
    tell_pipe,
    write_io,
)

UID = 1000
# Kills every process in the container but its init (pid 1), the init's child that keeps the container
# up (KEEPER, its pid as the sandbox opened: processes a command leaves behind become children of the
# init too), and itself, until none is left (then runs DONE): processes started by one `docker exec`
# outlive it. Each process's state is read with the shell's own `read` (the state follows the last ") "
# of /proc/PID/stat: a process's name may hold spaces and parentheses), no process started per pid; a
# process still exiting when a command ends is gone by the first short pause.
REAP_LOOP = r"""
keep=" 1 KEEPER $$ "
for pause in 0.005 0.01 0.02 0.05 0.1 0.1 0.1 0.1; do
  victims=""
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    case "$keep" in *" $p "*) continue ;; esac
    { read -r stat; } 2>/dev/null < "$d/stat" || continue
    stat=${stat##*) }
    [ "${stat%% *}" = Z ] || victims="$victims $p"
  done
  [ -z "$victims" ] && DONE
  kill -KILL $victims 2>/dev/null
  sleep $pause
done
"""
# the init's children (read before anything but the sandbox's own setup ran in the container), and
# where setpriv is (see DockerSandbox.run)
CHILDREN = 'echo "children: $(cat /proc/1/task/1/children)"'
SETPRIV = 'echo "setpriv: $(command -v setpriv)"'
# The standby exec (DockerSandbox._stand_by): started as the sandbox opens, it waits for the host's word
# on a pipe only root opens, then runs the script the host wrote for the sandbox's first command
STANDBY = 'read -r said < {pipe} && [ "$said" = go ] && exec bash {script}'


class Owner(Protocol):
    """What a sandbox takes from its backend (``harness.sandboxes.docker.DockerBackend``)."""

    config: SandboxConfig
    settings: Settings
    client: Any

    def image(self, task: Task) -> str: ...

    def _tree_tar(self, task: Task) -> Path: ...


class DockerSandbox:
    backend = "docker"

    def __init__(self, owner: Owner, task: Task, *, network: bool) -> None:
        limits = owner.config.limits
        self.limits = limits
        self.client = owner.client
        self.workdir = task.environment.workdir
        self.activation = task.environment.activation
        self.own_repo = task.repo_source.kind == "image"
        self.user = "root" if self.own_repo else f"{UID}:{UID}"
        image = owner.image(task)
        # owner-marked names and labels: the next run sweeps what a killed one left (harness.sandboxes.leftovers)
        self.root = Path(tempfile.mkdtemp(prefix=sandbox_prefix("docker"), dir=_mkdir(owner.settings.cache_dir / "sandboxes")))
        # the host's, not the sandbox user's: a bind mount, which only the files output() reserves
        # (each bounded by the per-file limit) may grow
        self.io = self.root / "io"
        self.owner = 0 if self.own_repo else UID
        env = run_env(task.environment.image is None and needs_env_build(task.environment.recipe))
        # Every writable place is a tmpfs of bounded size, its pages charged to the container's memory.
        # A repository that lives in its image stays in the container's own layer, which must then be
        # writable (its size is not bounded there).
        small = f"size={limits.tmp_mb}m,mode=1777"
        tmpfs = {"/tmp": f"{small},exec", "/var/tmp": small, "/run/lock": small}
        tar = None if self.own_repo else owner._tree_tar(task)
        if tar is not None:
            size = _tree_bytes(tar) + limits.tree_mb * 2**20
            tmpfs[self.workdir] = f"size={size},uid={UID},gid={UID},mode=0755,exec"
        mount_tmpfs(self.io, HOST_FOLDER_BYTES + (tar.stat().st_size if tar is not None else 0))  # the tree's tar is staged there
        try:
            self.container = self.client.containers.run(
                image,
                ["sleep", "infinity"],
                detach=True,
                network_mode=None if network else "none",
                mem_limit=f"{limits.memory_mb}m",
                memswap_limit=f"{limits.memory_mb}m",
                shm_size=f"{limits.shm_mb}m",
                pids_limit=limits.processes,
                environment=env,
                working_dir="/",
                init=True,
                read_only=tar is not None,
                tmpfs=tmpfs,
                volumes={str(self.io): {"bind": IO_DIR, "mode": "rw"}},
                labels=container_labels(owner.settings),
            )
        except BaseException:
            release(self.root)
            raise
        self._runs = itertools.count(1)  # next() is atomic: commands may run from several threads
        # what the backend does once this sandbox's first command has started (DockerBackend.open)
        self.when_started: Callable[[], None] | None = None
        self._reaping = threading.Lock()
        self._setpriv = ""  # its path in the image, found as the tree is unpacked (see run)
        self._keeper = ""  # the pid of the process that keeps the container up (REAP_LOOP)
        self._standby: tuple[str, Any, str, str] | None = None  # exec id, its stream, pipe, script
        self._standing = threading.Lock()
        try:
            if tar is None:
                self._seal_in_place(task)
            else:
                self._unpack_tree(tar)
            self._stand_by()
        except BaseException:
            self.close()
            raise

    def _stand_by(self) -> None:
        """Start the exec the first command will run in, now: starting an exec is the slowest part of
        a short command (50-100 ms), and a sandbox is mostly opened ahead of its first command (a spare,
        ``harness.sandboxes.docker.DockerBackend``). Only where that command runs as root (the wrapper
        that drops to the sandbox user, or a repository that lives in its image), so the exec's user
        is the same either way. Nothing of the sandbox's commands runs before the standby's command:
        it is the first, and it is gone (consumed, or killed by a reaping) before the second."""
        if not (self._setpriv or self.user == "root"):
            return
        token = secrets.token_hex(8)
        pipe, script = make_pipe(self.io, f"{IO_DIR}/.standby-{token}", 0), f"{IO_DIR}/.standby-{token}.sh"
        api = self.client.api
        command = STANDBY.format(pipe=pipe, script=script)
        exec_id = api.exec_create(self.container.id, ["bash", "-c", command], user="root", workdir=self.workdir)["Id"]
        self._standby = (exec_id, api.exec_start(exec_id, stream=True), pipe, script)

    def _take_standby(self, argv: list[str], env: Mapping[str, str]) -> tuple[str, Any, int] | None:
        """The standby's exec id and stream, told to run ``argv`` with ``env``, and the pipe's file
        descriptor, to close once the command ended (until the standby opens the pipe, the word waits
        in it only while a writer holds it open); None where there is no standby any more."""
        standby = self._pop_standby()
        if standby is None:
            return None
        exec_id, chunks, pipe, script = standby
        exports = "".join(f"export {name}={shlex.quote(value)}\n" for name, value in env.items())
        write_io(Path(io_target(self.io, script)), f"{exports}exec {shlex.join(argv)}\n".encode())
        held = os.open(io_target(self.io, pipe), os.O_RDWR | os.O_NOFOLLOW)  # never blocks on a pipe
        os.write(held, b"go\n")
        return exec_id, chunks, held

    def _pop_standby(self) -> tuple[str, Any, str, str] | None:
        with self._standing:
            standby, self._standby = self._standby, None
        return standby

    def _drop_standby(self) -> None:
        if (standby := self._pop_standby()) is not None:
            standby[1].close()

    def _unpack_tree(self, tar: Path) -> None:
        """The workdir is a tmpfs, which the engine's archive copy cannot see into: the tree's tar is
        copied into the IO folder (a tmpfs too) and unpacked from inside."""
        staged = self.io / "tree.tar"
        shutil.copyfile(tar, staged)
        parent = shlex.quote(str(PurePosixPath(self.workdir).parent))
        try:
            unpack = f"tar -x --no-same-owner -f {IO_DIR}/tree.tar -C {parent}"
            done = self.run(f"{unpack} && {CHILDREN} && {SETPRIV}", timeout=300)
        finally:
            staged.unlink()
        if done.exit_code != 0:
            raise SandboxError(f"could not copy the tree into {self.workdir}: {done.output[-400:]}")
        self._keep(done.output)
        self._setpriv = next((line[9:].strip() for line in done.output.splitlines() if line.startswith("setpriv: /")), "")

    def _keep(self, output: str) -> None:
        children = next((line[10:] for line in output.splitlines() if line.startswith("children: ")), "")
        pids = sorted(int(pid) for pid in children.split() if pid.isdigit())
        if not pids:
            raise SandboxError(f"could not tell which process keeps the container up (its init's children: {children!r})")
        self._keeper = str(pids[0])

    def _seal_in_place(self, task: Task) -> None:
        self.write_file("/tmp/seal_git.sh", script("seal_git.sh").read_bytes())
        code, out = self.container.exec_run(
            ["bash", "/tmp/seal_git.sh", task.base_commit or "HEAD"], workdir=self.workdir, user="root"
        )
        if code != 0:
            raise EnvError(f"{task.instance_id}: could not seal git history in the image", out.decode(errors="replace"))
        self._keep(self.container.exec_run(["bash", "-c", CHILDREN], user="root")[1].decode(errors="replace"))  # fmt: skip

    def _io_path(self, path: str) -> Path | None:
        """The host side of a path in the IO folder (None elsewhere)."""
        return Path(io_target(self.io, path)) if in_io(path) else None

    def write_file(self, path: str, data: bytes | str) -> None:
        path = path if path.startswith("/") else f"{self.workdir}/{path}"
        blob = data.encode() if isinstance(data, str) else data
        if (target := self._io_path(path)) is not None:
            write_io(target, blob)
            return
        # the tree and /tmp are tmpfs mounts, which the engine's archive copy writes beneath, out of
        # sight: stage the file in the IO folder and copy it into place from inside, as the sandbox user
        staged = f"{IO_DIR}/.staged-{secrets.token_hex(8)}"
        self.write_file(staged, blob)
        parent = shlex.quote(str(PurePosixPath(path).parent))
        try:
            done = self.run(f"mkdir -p {parent} && cp {staged} {shlex.quote(path)}", timeout=60)
        finally:
            self._io_path(staged).unlink()
        if done.exit_code != 0:
            raise SandboxError(f"could not write {path}: {done.output[-400:]}")

    def read_file(self, path: str, *, limit: int | None = None) -> bytes:
        path = path if path.startswith("/") else f"{self.workdir}/{path}"
        limit = self.limits.file_bytes if limit is None else limit
        if (source := self._io_path(path)) is not None:
            return read_regular(source, limit)
        staged = self.output(f"{IO_DIR}/.staged-{secrets.token_hex(8)}")  # a tmpfs: see write_file
        host = self._io_path(staged)
        try:
            # a regular file only: cp would wait on a named pipe until the command's timeout
            done = self.run(f"test -f {shlex.quote(path)} && cp {shlex.quote(path)} {staged}", timeout=60)
            if done.exit_code != 0:
                raise FileNotFoundError(path)
            return read_regular(host, limit)
        finally:
            host.unlink()

    def output(self, path: str) -> str:
        self.write_file(io_only(path), b"")
        os.chown(self._io_path(path), self.owner, self.owner)
        return path

    def size(self, path: str) -> int:
        return io_size(self.io, path)

    def pipe(self, path: str) -> str:
        return make_pipe(self.io, path, self.owner)

    def tell(self, path: str, line: str) -> bool:
        return tell_pipe(self.io, path, line)

    def run(
        self, command: str, *, timeout: float | None = None, env: Mapping[str, str] | None = None, reap: bool = False
    ) -> ExecResult:
        timeout = timeout or self.limits.timeout_s
        api = self.client.api
        log_path = self.root / f"{next(self._runs):03d}.log"
        started = time.monotonic()
        argv, user, status = shell_command(command, self.activation, self.limits, timeout), self.user, None
        if self._setpriv:
            status = self.io / f".status-{secrets.token_hex(8)}"
            argv, user = ["bash", "-c", self._as_user(argv, f"{IO_DIR}/{status.name}", reap)], "root"
        standby = self._take_standby(argv, env or {}) if user == "root" else None
        if standby is not None:
            exec_id, chunks, held = standby
        else:
            exec_id = api.exec_create(
                self.container.id, argv, user=user, workdir=self.workdir, environment=dict(env or {})
            )["Id"]
            chunks, held = api.exec_start(exec_id, stream=True), None
        if self.when_started is not None:
            started_hook, self.when_started = self.when_started, None
            started_hook()
        # exec streams block while the command is silent, so the host-side backstop is a timer
        killers: list[threading.Thread] = []
        kill = lambda: killers.append(self._kill_all())
        watchdog = threading.Timer(timeout + 10, kill)
        watchdog.start()
        try:
            with log_path.open("wb") as log:
                limited, timed_out = capture(chunks, log, self.limits.output_bytes, started + timeout + 5, kill)
        finally:
            watchdog.cancel()
            watchdog.join()
            if held is not None:
                os.close(held)
        for killer in killers:  # done before the next command starts, or it would kill that one too
            killer.join()
        code = _status(status)
        if code is None:  # no wrapper, or one stopped by the watchdog or left with processes it could not kill
            code = None if limited else api.exec_inspect(exec_id).get("ExitCode")
            if reap:
                self.reap()
        return exec_result(command, code, log_path, started, limited=limited, timed_out=timed_out, timeout=timeout)

    def _as_user(self, argv: list[str], status: str, reap: bool) -> str:
        """The wrapper a command runs in, as root: the command itself as the sandbox user (setpriv, as
        ``docker exec --user`` would run it), then, with ``reap``, every process left in the container
        killed, then the command's exit code written to ``status``, in the IO folder, where only root
        may add a file. So one exec does what took three engine calls (the command, its exit code, a
        reaping exec), and neither the command nor anything it started can write the status: a status
        that is there says the command ended with that code and, with reap, that nothing it started is
        left. Where it is missing (the wrapper was killed, or processes would not die), run falls back
        to asking the engine and to a reaping exec."""
        drop = f"{shlex.quote(self._setpriv)} --reuid={UID} --regid={UID} --clear-groups --inh-caps=-all -- "
        done = f"echo $code > {shlex.quote(status)}; exit $code"
        after = self._reap_loop(f"{{ {done}; }}") + "exit $code" if reap else done
        return f"{drop}{shlex.join(argv)}\ncode=$?\n{after}\n"

    def _kill_all(self) -> threading.Thread:
        """Kill every process a command started, from a second exec, in a thread: the engine only
        starts it once the caller keeps draining the first exec's output. Everything, not the
        command's process group: a child may have left the group, and the group's id would have to
        be kept where the command itself can write (or fill) it. bwrap kills as much, since each
        command's pid namespace dies with it."""
        killer = threading.Thread(target=self._reap, daemon=True)
        killer.start()
        return killer

    def _reap_loop(self, done: str) -> str:
        return REAP_LOOP.replace("KEEPER", self._keeper).replace("DONE", done)

    def _reap(self) -> tuple[int, bytes]:
        self._drop_standby()  # it is one of the processes killed
        # one reaper at a time: two would kill each other
        with self._reaping:
            return self.container.exec_run(["bash", "-c", self._reap_loop("exit 0") + "exit 1\n"], user="root")

    def reap(self) -> None:
        """End every process earlier commands left behind."""
        code, out = self._reap()
        if code != 0:
            raise SandboxError(f"processes left by a command would not die: {out.decode(errors='replace')[-400:]}")

    def close(self) -> None:
        """Remove the container, then its folder, in the background: nothing waits for them, and a
        non-daemon thread still finishes before the interpreter exits, so nothing is leaked."""
        container, root = self.container, self.root
        self._drop_standby()

        def remove() -> None:
            try:
                container.remove(force=True)
            except Exception:  # already removed by the engine
                pass
            release(root)

        threading.Thread(target=remove, name="swedeck-docker-remove").start()


def _status(path: Path | None) -> int | None:
    """The exit code a wrapper wrote (``DockerSandbox._as_user``), None where it wrote none."""
    if path is None:
        return None
    try:
        text = read_regular(path, 16).decode().strip()
        path.unlink()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None


@functools.cache
def _tree_bytes(tar: Path) -> int:
    """What a tree's files take in a tmpfs (whole pages each); its tar is named by its content."""
    with tarfile.open(tar) as archive:
        return sum(-(-member.size // 4096) * 4096 + 4096 for member in archive)



def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path
