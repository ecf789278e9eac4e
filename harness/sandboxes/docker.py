"""Docker sandboxes: the production path, since every public corpus ships Docker images.

A sandbox is one container started from the task's image (a corpus image, or an environment image built
locally from the base image and the task's recipe) with ``--network none``, memory, pid and CPU limits
and a size-capped /tmp. The sealed buggy tree is copied in at open; corpus images that carry their own
repository are sealed in place. Commands run through ``docker exec`` with the same wrapper as bwrap,
inside a root wrapper that drops to the sandbox user with setpriv where the image has it
(``_DockerSandbox._as_user``).
"""

from __future__ import annotations

import atexit
import functools
import io
import os
import secrets
import shlex
import shutil
import tarfile
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path, PurePosixPath

from harness.config import SandboxConfig, Settings
from harness.sandboxes.envs import (
    BUILD_FILES_DIR,
    build_commands,
    build_failed,
    build_settings,
    cached_failure,
    env_key,
    needs_env_build,
    prepare_tree,
    run_env,
    script,
    tree_key,
)
from harness.sandboxes.images import ImageStore
from harness.sandboxes.leftovers import alive, container_labels, remove_containers, sandbox_prefix, sweep_sandboxes
from harness.records import ExecResult, Task, content_hash
from harness.sandboxes.sandbox import (
    IO_DIR,
    EnvError,
    SandboxError,
    capture,
    exec_result,
    host_path,
    io_only,
    read_regular,
    shell_command,
    write_io,
)

UID = 1000
# Kills every process in the container but its init (pid 1), the init's child that keeps the container
# up (KEEPER, its pid as the sandbox opened: processes a command leaves behind become children of the
# init too), and itself, until none is left (then runs DONE): processes started by one `docker exec`
# outlive it.
REAP_LOOP = r"""
keep=" 1 KEEPER $$ "
for _ in 1 2 3 4 5 6 7 8; do
  victims=""
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    case "$keep" in *" $p "*) continue ;; esac
    grep -qs '^State:[[:space:]]*Z' "$d/status" || victims="$victims $p"
  done
  [ -z "$victims" ] && DONE
  kill -KILL $victims 2>/dev/null
  sleep 0.05
done
"""
# the init's children (read before anything but the sandbox's own setup ran in the container), and
# where setpriv is (see _DockerSandbox.run)
CHILDREN = 'echo "children: $(cat /proc/1/task/1/children)"'
SETPRIV = 'echo "setpriv: $(command -v setpriv)"'


def _client():
    import docker

    try:
        client = docker.from_env()
        client.ping()
    except Exception as err:  # the SDK raises several unrelated types for "no engine"
        raise EnvError(f"no Docker engine reachable: {err}") from err
    return client


class DockerBackend:
    name = "docker"

    def __init__(self, config: SandboxConfig, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self.client = _client()
        self.images = ImageStore(self.client, settings, config.pull, config.image_cache_gb)
        # one pristine spare container per (task, network), started in the background after each
        # open: a task is graded many times (runs, probes, rollouts) and the start is the slow part
        self._spares: dict[tuple[str, bool], _DockerSandbox] = {}
        self._warming: set[tuple[str, bool]] = set()
        self._lock = threading.Lock()
        self._drained = False
        self._digests: dict[str, str] = {}
        atexit.register(self.drain)
        # what a grade killed from outside left: its containers (spares included) and folders
        remove_containers(settings, lambda token: not alive(token))
        sweep_sandboxes(settings, "docker")

    def _has_image(self, ref: str) -> bool:
        import docker.errors

        try:
            self.client.images.get(ref)
        except docker.errors.ImageNotFound:
            return False
        return True

    def image(self, task: Task) -> str:
        env = task.environment
        if env.image is not None:
            return self.images.ensure(env.image, task.instance_id)
        if not self._has_image(self.settings.base_image):
            raise EnvError(f"base image {self.settings.base_image} missing; run `swedeck env base`")
        if not needs_env_build(env.recipe):
            return self.settings.base_image
        return self._build_env(task)

    def image_digest(self, task: Task) -> str:
        """What the task's sandboxes start from: a pulled image's registry digest, else the image id.
        Asked of the engine once per environment and tree for this backend's life (it keys the
        facts every grade looks up: three engine calls each time)."""
        key = content_hash([task.environment, tree_key(task)])
        if key not in self._digests:
            self._digests[key] = self.images.digest(self.image(task))
        return self._digests[key]

    def _build_env(self, task: Task) -> str:
        """The base image with the recipe's environment built in (once per environment key): the
        commands run as root in the task's workdir, on a copy of its tree that is removed before the
        commit, with the network and this machine's index, proxy and CA settings."""
        recipe = task.environment.recipe
        key = env_key(task)
        tag = f"swedeck-env:{key}"
        if self._has_image(tag):
            return tag
        cached_failure(task, self.settings, key)
        tree = self._tree_tar(task)
        carried, files = build_settings()
        env = {**run_env(False), **carried}
        workdir = task.environment.workdir
        container = self.client.containers.run(
            self.settings.base_image, ["sleep", "infinity"], detach=True, working_dir="/",
            labels=container_labels(self.settings),
        )  # fmt: skip
        try:
            parent = str(PurePosixPath(workdir).parent)
            container.exec_run(["mkdir", "-p", parent, BUILD_FILES_DIR])
            with tree.open("rb") as stream:
                container.put_archive(parent, stream)
            container.put_archive(BUILD_FILES_DIR, _tar({PurePosixPath(k).name: v.read_bytes() for k, v in files.items()}))
            limit = f"{self.config.build_timeout_s:.0f}"
            for command in build_commands(recipe):
                code, output = container.exec_run(
                    ["timeout", "-k", "10", limit, "bash", "-c", command], workdir=workdir, environment=env
                )
                if code != 0:
                    log = output.decode(errors="replace")
                    raise build_failed(task, self.settings, key, command, log, timed_out=code in (124, 137))
            container.exec_run(["rm", "-rf", workdir, BUILD_FILES_DIR])
            container.commit(repository="swedeck-env", tag=key)
        finally:
            container.remove(force=True)
        return tag

    def prepare(self, task: Task) -> None:
        self.image(task)
        if task.repo_source.kind != "image":
            self._tree_tar(task)

    def _tree_tar(self, task: Task) -> Path:
        """The sealed tree as a tar rooted at the workdir's name, owned by the sandbox user."""
        tree = prepare_tree(task, self.settings)
        name = PurePosixPath(task.environment.workdir).name
        # keyed by the root's name too: two tasks on one tree may run in different workdirs
        dest = self.settings.cache_dir / "trees" / f"{content_hash([tree_key(task), name])}.tar"
        if dest.exists():
            return dest

        def owned(info: tarfile.TarInfo) -> tarfile.TarInfo:
            info.uid = info.gid = UID
            info.uname = info.gname = ""
            return info

        fd, tmp = tempfile.mkstemp(dir=dest.parent, suffix=".tar.part")
        with os.fdopen(fd, "wb") as f, tarfile.open(fileobj=f, mode="w") as tar:
            tar.add(tree, arcname=name, filter=owned)
        # sandboxes get it as a hard link in their IO folder: nobody but root may write through that
        os.chmod(tmp, 0o444)
        os.replace(tmp, dest)
        return dest

    def open(self, task: Task, *, network: bool = False) -> _DockerSandbox:
        key = (task.task_hash(), network)
        with self._lock:
            spare = self._spares.pop(key, None)
        box = spare or _DockerSandbox(self, task, network=network)
        if not network:  # networked sandboxes are one-off checks, not worth a spare
            self._warm(task, key)
        return box

    def _warm(self, task: Task, key: tuple[str, bool]) -> None:
        with self._lock:
            if self._drained or key in self._spares or key in self._warming:
                return
            self._warming.add(key)

        def start() -> None:
            try:
                spare = _DockerSandbox(self, task, network=key[1])
            except Exception:  # the next open builds its own and reports the error itself
                spare = None
            with self._lock:
                self._warming.discard(key)
                if spare is not None and key not in self._spares and not self._drained:
                    self._spares[key] = spare
                    spare = None
            if spare is not None:
                spare.close()

        threading.Thread(target=start, name="swedeck-docker-spare", daemon=True).start()

    def drain(self) -> None:
        """Remove the spare containers (at exit, or when a caller is done with this backend)."""
        with self._lock:
            self._drained = True
            spares, self._spares = list(self._spares.values()), {}
        for spare in spares:  # not close(): its removal thread may not run once the interpreter exits
            spare.container.remove(force=True)
            shutil.rmtree(spare.root, ignore_errors=True)


class _DockerSandbox:
    backend = "docker"

    def __init__(self, owner: DockerBackend, task: Task, *, network: bool) -> None:
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
        self.io = _mkdir(self.root / "io")
        self.io.chmod(0o755)
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
        self._runs = 0
        self._reaping = threading.Lock()
        self._setpriv = ""  # its path in the image, found as the tree is unpacked (see run)
        self._keeper = ""  # the pid of the process that keeps the container up (REAP_LOOP)
        try:
            if tar is None:
                self._seal_in_place(task)
            else:
                self._unpack_tree(tar)
        except BaseException:
            self.close()
            raise

    def _unpack_tree(self, tar: Path) -> None:
        """The workdir is a tmpfs, which the engine's archive copy cannot see into: the tree's tar is
        linked into the IO folder and unpacked from inside."""
        staged = self.io / "tree.tar"
        try:
            os.link(tar, staged)
        except OSError:  # another file system
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
        """The host side of a path in the IO folder (None elsewhere); raises if a symlink leads out."""
        inside = PurePosixPath(path)
        if inside != PurePosixPath(IO_DIR) and PurePosixPath(IO_DIR) not in inside.parents:
            return None
        return host_path(path, ((IO_DIR, self.io),), self.workdir)

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

    def run(
        self, command: str, *, timeout: float | None = None, env: Mapping[str, str] | None = None, reap: bool = False
    ) -> ExecResult:
        timeout = timeout or self.limits.timeout_s
        api = self.client.api
        self._runs += 1
        log_path = self.root / f"{self._runs:03d}.log"
        started = time.monotonic()
        argv, user, status = shell_command(command, self.activation, self.limits, timeout), self.user, None
        if self._setpriv:
            status = self.io / f".status-{secrets.token_hex(8)}"
            argv, user = ["bash", "-c", self._as_user(argv, f"{IO_DIR}/{status.name}", reap)], "root"
        exec_id = api.exec_create(
            self.container.id, argv, user=user, workdir=self.workdir, environment=dict(env or {})
        )["Id"]
        chunks: Iterator[bytes] = api.exec_start(exec_id, stream=True)
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
        # one reaper at a time: two would kill each other
        with self._reaping:
            return self.container.exec_run(["bash", "-c", self._reap_loop("exit 0") + "exit 1\n"], user="root")

    def reap(self) -> None:
        """End every process earlier commands left behind."""
        code, out = self._reap()
        if code != 0:
            raise SandboxError(f"processes left by a command would not die: {out.decode(errors='replace')[-400:]}")

    def close(self) -> None:
        """Remove the container in the background: nothing waits for it, and a non-daemon thread
        still finishes before the interpreter exits, so no container is leaked."""
        container = self.container

        def remove() -> None:
            try:
                container.remove(force=True)
            except Exception:  # already removed by the engine
                pass

        threading.Thread(target=remove, name="swedeck-docker-remove").start()
        shutil.rmtree(self.root, ignore_errors=True)


def _status(path: Path | None) -> int | None:
    """The exit code a wrapper wrote (``_DockerSandbox._as_user``), None where it wrote none."""
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


def _tar(files: Mapping[str, bytes]) -> bytes:
    """An uncompressed tar of plain files readable by everyone (name -> content)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path
