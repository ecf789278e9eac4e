"""Docker sandboxes: the production path, since every public corpus ships Docker images.

A sandbox is one container started from the task's image (a corpus image, or an environment image built
locally from the base image and the task's recipe) with ``--network none``, memory, pid and CPU limits
and a size-capped /tmp. The sealed buggy tree is copied in at open; corpus images that carry their own
repository are sealed in place. Commands run through ``docker exec`` with the same wrapper as bwrap,
inside a root wrapper that drops to the sandbox user with setpriv where the image has it
(``harness.sandboxes.docker_sandbox.DockerSandbox._as_user``).
A sandbox's first command runs in an exec started as the sandbox opened (``DockerSandbox._stand_by``):
starting an exec is most of a short command's cost, and spares open ahead of their first command.
"""

from __future__ import annotations

import atexit
import io
import tarfile
import threading
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from harness.config import SandboxConfig, Settings
from harness.sandboxes.docker_sandbox import UID, DockerSandbox
from harness.sandboxes.envs import (
    BUILD_FILES_DIR,
    build_commands,
    build_failed,
    build_settings,
    cached_failure,
    env_key,
    needs_env_build,
    run_env,
    tree_key,
    tree_tar,
)
from harness.sandboxes.images import ImageStore
from harness.sandboxes.leftovers import alive, container_labels, remove_containers, sweep_sandboxes
from harness.records import Task, content_hash
from harness.sandboxes.folders import release
from harness.sandboxes.sandbox import EnvError


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
        self._spares: dict[tuple[str, bool], DockerSandbox] = {}
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
        return tree_tar(task, self.settings, UID)

    def open(self, task: Task, *, network: bool = False) -> DockerSandbox:
        key = (task.task_hash(), network)
        with self._lock:
            spare = self._spares.pop(key, None)
        box = spare or DockerSandbox(self, task, network=network)
        if not network:  # networked sandboxes are one-off checks, not worth a spare
            # once this one's first command has started: the engine starting a container and an exec
            # at once slows both, and the exec is what a grade waits on
            box.when_started = lambda: self._warm(task, key)
        return box

    def _warm(self, task: Task, key: tuple[str, bool]) -> None:
        with self._lock:
            if self._drained or key in self._spares or key in self._warming:
                return
            self._warming.add(key)

        def start() -> None:
            try:
                spare = DockerSandbox(self, task, network=key[1])
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
        import docker.errors

        with self._lock:
            self._drained = True
            spares, self._spares = list(self._spares.values()), {}
        for spare in spares:  # not close(): its removal thread may not run once the interpreter exits
            try:
                spare.container.remove(force=True)
            except docker.errors.NotFound:  # a sweep removed it: a spare belongs to no live grade
                pass
            release(spare.root)  # its IO folder is a mount


def _tar(files: Mapping[str, bytes]) -> bytes:
    """An uncompressed tar of plain files readable by everyone (name -> content)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()

