"""bubblewrap sandboxes: no daemon, millisecond start, the embedded default.

A sandbox is a host folder holding two tmpfs mounts, ``tree/`` (bound at the task's workdir) and
``tmp/`` (bound at /tmp), each sized by the kernel: the tree to its pristine size plus
``Limits.tree_mb``, /tmp to ``Limits.tmp_mb``; and ``io/``, the host's, bound over the IO folder. The base root filesystem is bound read-only, and the
rest of / and /dev are read-only too, with a sized /dev/shm. Every command is a fresh ``bwrap``
process in new user, pid, network, ipc and uts namespaces, run as a uid no other sandbox uses and in
a control group of the sandbox's own, so memory and processes are bounded for the sandbox as a whole.
Nothing a command starts outlives it: its pid namespace dies with it.
"""

from __future__ import annotations

import functools
import itertools
import os
import random
import select
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

from harness.sandboxes import leftovers
from harness.sandboxes.folders import HOST_FOLDER_BYTES, mount_tmpfs, release
from harness.sandboxes.cgroups import Cgroup
from harness.config import SandboxConfig, Settings
from harness.sandboxes.envs import (
    ENV_MOUNT,
    build_commands,
    build_failed,
    build_settings,
    cached_failure,
    env_key,
    needs_env_build,
    prepare_tree,
    publish_env,
    run_env,
)
from harness.sandboxes.images import ImageMissing
from harness.records import ExecResult, Task
from harness.sandboxes.sandbox import (
    IO_DIR,
    EnvError,
    capture,
    exec_result,
    host_path,
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

MERGED_USR_LINKS = {"/bin": "usr/bin", "/sbin": "usr/sbin", "/lib": "usr/lib", "/lib64": "usr/lib64"}
MIB = 2**20
# Run by sh, as root, before bwrap: write its own pid into each of the sandbox's control group files
# (given before "--"), then exec the rest, which keeps the pid. The steps a Python preexec_fn took,
# done by exec'd tools, so the host forks with vfork: a preexec_fn makes it copy the whole
# interpreter's memory map for every command (some 60 ms on a loaded machine, against 3).
JOIN = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"'


class BwrapBackend:
    name = "bwrap"

    def __init__(self, config: SandboxConfig, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        if shutil.which("bwrap") is None:
            raise EnvError("bubblewrap is not installed (Debian package 'bubblewrap')")

    def _rootfs(self) -> Path:
        rootfs = self.settings.base_rootfs
        if not (rootfs / "usr" / "bin" / "python3").exists():
            raise EnvError(f"base root filesystem missing at {rootfs}; run `swedeck env base`")
        return rootfs

    def prepare(self, task: Task) -> None:
        self._materialise(task)

    def image_digest(self, task: Task) -> str:
        """No image: bwrap sandboxes start from the base root filesystem and the recipe's environment."""
        return ""

    def _materialise(self, task: Task) -> tuple[Path, Path | None]:
        """The task's sealed tree and recipe environment, built on first use (cached by hash)."""
        env = task.environment
        if env.image is not None and env.recipe is None:
            raise ImageMissing(
                f"{task.instance_id}: the bwrap backend cannot run a Docker image ({env.image}); use --backend docker, "
                "or, for a Python row, --repo-cache DIR holding the repository to build its environment from the row's "
                "install spec (the base root filesystem has Python's toolchain only: rows in other languages need their image)"
            )
        self._rootfs()
        env_dir = self.env_dir(task)
        return prepare_tree(task, self.settings), env_dir

    def env_dir(self, task: Task) -> Path | None:
        """Build (once) the recipe's /opt/swedeck-env on the host; None when the recipe installs nothing.
        The build sees a copy of the task's tree at its workdir, the network and this machine's
        index, proxy and CA settings."""
        recipe = task.environment.recipe
        if not needs_env_build(recipe):
            return None
        key = env_key(task)
        dest = self.settings.cache_dir / "envs" / key
        if (dest / ".swedeck-ok").exists():
            return dest
        cached_failure(task, self.settings, key)
        tree = prepare_tree(task, self.settings)
        dest.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=".build-", dir=dest.parent))
        env, files = build_settings()
        box = _BwrapSandbox(self, task, tree=tree, env_dir=work, network=True, building=True)
        try:
            for inside, original in files.items():
                box.write_file(inside, original.read_bytes())
            for command in build_commands(recipe):
                result = box.run(command, timeout=self.config.build_timeout_s, env=env)
                if result.exit_code != 0:
                    log = Path(result.log_path).read_text(errors="replace")
                    raise build_failed(task, self.settings, key, command, log, timed_out=result.timed_out)
            (work / ".swedeck-ok").touch()
            publish_env(work)
            try:
                os.rename(work, dest)
            except OSError:
                shutil.rmtree(work)
        finally:
            box.close()
            shutil.rmtree(work, ignore_errors=True)
        return dest

    def open(self, task: Task, *, network: bool = False) -> _BwrapSandbox:
        leftovers.sweep_sandboxes(self.settings, "bwrap")
        tree, env_dir = self._materialise(task)
        return _BwrapSandbox(self, task, tree=tree, env_dir=env_dir, network=network)


class _BwrapSandbox:
    backend = "bwrap"

    def __init__(
        self,
        owner: BwrapBackend,
        task: Task,
        *,
        tree: Path | None,
        env_dir: Path | None,
        network: bool,
        building: bool = False,
    ) -> None:
        self.limits = owner.config.limits
        self.rootfs = owner._rootfs()
        self.workdir = task.environment.workdir
        self.activation = task.environment.activation
        self.network = network
        self.building = building
        self.env_dir = env_dir
        parent = owner.settings.cache_dir / "sandboxes"
        parent.mkdir(parents=True, exist_ok=True)
        self.root = Path(tempfile.mkdtemp(prefix=leftovers.sandbox_prefix("bwrap"), dir=parent))
        self.root.chmod(0o755)
        self.uid = random.randint(200_000, 2_000_000_000)
        self.cgroup: Cgroup | None = None
        try:
            mount_tmpfs(self.root / "tmp", self.limits.tmp_mb * MIB)
            mount_tmpfs(self.root / "logs", HOST_FOLDER_BYTES)
            # the host's (as under docker): a command may write the files output() reserves and
            # nothing else there, so it cannot put a named pipe or a flood where the host reads
            self.io = self.root / "io"
            mount_tmpfs(self.io, HOST_FOLDER_BYTES)
            if tree is not None:
                mount_tmpfs(self.root / "tree", _tree_size(tree) + self.limits.tree_mb * MIB)
                shutil.copytree(tree, self.root / "tree", symlinks=True, dirs_exist_ok=True)
            for path in [self.root / "tmp", self.root / "tree", *([env_dir] if building else [])]:
                if path.exists():
                    _chown_tree(path, self.uid)
            # the mount point, made by the host so bwrap never creates (or follows) one the sandbox made
            (self.root / "tmp" / IO_DIR.removeprefix("/tmp/")).mkdir(mode=0o755)
            self.cgroup = Cgroup(self.root.name, self.limits.memory_mb * MIB, self.limits.processes)
        except BaseException:
            self.close()
            raise
        self._runs = itertools.count(1)  # next() is atomic: commands may run from several threads

    # ------------------------------------------------------------------ paths

    def host_path(self, path: str) -> Path:
        """The IO folder, the workdir and /tmp are host folders."""
        if in_io(path):
            return Path(io_target(self.io, path))
        mounts = ((self.workdir, self.root / "tree"), ("/tmp", self.root / "tmp"))
        return host_path(path, mounts, self.workdir)

    def write_file(self, path: str, data: bytes | str) -> None:
        target = self.host_path(path)
        if in_io(path):
            write_io(target, data.encode() if isinstance(data, str) else data)
            return
        # folders created here belong to the sandbox user too (as under docker's `mkdir -p`), or the
        # command could not add or delete files in them
        created = [d for d in (target.parent, *target.parent.parents) if not d.exists()]
        target.parent.mkdir(parents=True, exist_ok=True)
        for folder in created:
            os.chown(folder, self.uid, self.uid)
        target.write_bytes(data.encode() if isinstance(data, str) else data)
        os.chown(target, self.uid, self.uid)

    def read_file(self, path: str, *, limit: int | None = None) -> bytes:
        return read_regular(self.host_path(path), self.limits.file_bytes if limit is None else limit)

    def output(self, path: str) -> str:
        self.write_file(io_only(path), b"")
        os.chown(self.host_path(path), self.uid, self.uid)
        return path

    def size(self, path: str) -> int:
        return io_size(self.io, path)

    def pipe(self, path: str) -> str:
        return make_pipe(self.io, path, self.uid)

    def tell(self, path: str, line: str) -> bool:
        return tell_pipe(self.io, path, line)

    # ------------------------------------------------------------------ run

    def _argv(self, command: str, timeout: float, env: Mapping[str, str]) -> list[str]:
        # the root is a private tmpfs (mount points only); sized, or writes to / would eat host memory
        root_size = str(self.limits.tmp_mb * 1024 * 1024)
        argv = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--size", root_size, "--tmpfs", "/"]
        if self.network:
            argv += ["--share-net"]
        for sub in ("usr", "etc", "var"):
            argv += ["--ro-bind", str(self.rootfs / sub), f"/{sub}"]
        for link, target in MERGED_USR_LINKS.items():
            argv += ["--symlink", target, link]
        argv += ["--proc", "/proc", "--dev", "/dev", "--size", str(self.limits.shm_mb * MIB), "--tmpfs", "/dev/shm"]
        argv += ["--bind", str(self.root / "tmp"), "/tmp", "--bind", str(self.io), IO_DIR]
        if self.building:
            argv += ["--bind", str(self.env_dir), ENV_MOUNT]
            if self.network and Path("/etc/resolv.conf").exists():
                argv += ["--ro-bind", "/etc/resolv.conf", "/etc/resolv.conf"]
        elif self.env_dir is not None:
            argv += ["--ro-bind", str(self.env_dir), ENV_MOUNT]
        argv += ["--bind", str(self.root / "tree"), self.workdir]
        # only the tree, /tmp and /dev/shm take writes: the mount points' tmpfs and /dev do not
        argv += ["--remount-ro", "/dev", "--remount-ro", "/"]
        argv += ["--chdir", self.workdir, "--clearenv"]
        for key, value in env.items():
            argv += ["--setenv", key, value]
        return argv + ["--", *shell_command(command, self.activation, self.limits, timeout)]

    def run(
        self, command: str, *, timeout: float | None = None, env: Mapping[str, str] | None = None, reap: bool = False
    ) -> ExecResult:
        """``reap`` asks nothing more here: each command runs in a pid namespace of its own, and every
        process in it dies with the namespace's first process."""
        timeout = timeout or self.limits.timeout_s
        full_env = run_env(self.env_dir is not None and not self.building)
        full_env.update(env or {})
        log_path = self.root / "logs" / f"{next(self._runs):03d}.log"
        started = time.monotonic()
        proc = subprocess.Popen(
            [*self._entry(), *self._argv(command, timeout, full_env)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

        def kill() -> None:
            # bwrap is its session leader; --die-with-parent takes the whole pid namespace down with it
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

        with log_path.open("wb") as log:
            limited, timed_out = capture(_chunks(proc), log, self.limits.output_bytes, started + timeout + 5, kill)
            code = proc.wait()
        return exec_result(command, code, log_path, started, limited=limited, timed_out=timed_out, timeout=timeout)

    def _entry(self) -> list[str]:
        """What bwrap executes behind: the sandbox's control group (joined while still root, JOIN),
        per-process limits, then the sandbox's uid and gid and no supplementary groups."""
        procs = [str(path / "cgroup.procs") for path in self.cgroup.dirs]
        nproc = f"--nproc={self.limits.processes}:{self.limits.processes}"
        drop = ["setpriv", f"--reuid={self.uid}", f"--regid={self.uid}", "--clear-groups", "--"]
        return ["sh", "-c", JOIN, "sh", *procs, "--", "prlimit", nproc, "--core=0:0", "--", *drop]

    def close(self) -> None:
        """Released in the background, as docker removes its container: nothing of the sandbox runs
        any more (each command's pid namespace died with it), so the caller need not wait for its
        files to go; a non-daemon thread still finishes before the interpreter exits, and a process
        killed first leaves the folder to the next sweep (harness.sandboxes.leftovers)."""
        threading.Thread(target=release, args=(self.root,), name="swedeck-bwrap-release").start()


@functools.cache
def _tree_size(tree: Path) -> int:
    """A pristine tree's size, once per process: its folder is named by its content."""
    return _allocated(tree)


def _allocated(folder: Path) -> int:
    """Bytes of disk the files under ``folder`` occupy (sparse files count what they hold), rounded
    up to whole pages per file as a tmpfs holds them."""
    total, stack = 0, [str(folder)]
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except (FileNotFoundError, NotADirectoryError):
            continue  # removed, or made unreadable, while we looked
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                total += -(-entry.stat(follow_symlinks=False).st_blocks * 512 // 4096) * 4096 + 4096
            except FileNotFoundError:
                continue
    return total


def _chunks(proc: subprocess.Popen[bytes]) -> Iterator[bytes]:
    """Output as it arrives; an empty chunk every half second lets the caller check its deadline."""
    fd = proc.stdout.fileno()
    while True:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if not ready:
            yield b""
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            return
        yield chunk


def _chown_tree(path: Path, uid: int) -> None:
    os.chown(path, uid, uid)
    for dirpath, dirnames, filenames in os.walk(path):
        for name in dirnames + filenames:
            os.lchown(os.path.join(dirpath, name), uid, uid)
