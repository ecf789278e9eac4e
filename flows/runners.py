"""Where a pipeline's per-task work runs: threads in this process, or Prefect tasks on a Ray cluster
through Prefect's Ray task runner (``prefect-ray``). Each Ray node runs its own sandboxes, so a node is
checked for the sandbox backend before any task lands on it."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict

from harness.config import SandboxConfig, Settings
from harness.sandboxes.leftovers import short_link
from harness.sandboxes.backends import get_backend
from harness.sandboxes.sandbox import EnvError

if TYPE_CHECKING:
    from prefect.task_runners import TaskRunner


class RunnerConfig(BaseModel):
    """Not part of the config hash: where work runs never changes its result."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["local", "ray"] = "local"
    # ray: "" starts a temporary Ray on this machine; "auto" joins the cluster this machine belongs to
    # (`ray start`); "HOST:6379" a head node's GCS; "ray://HOST:10001" through Ray Client
    address: str = ""


def sandbox_problem(config: SandboxConfig) -> str | None:
    """Why this machine cannot run sandboxes of ``config``'s backend, or None: bwrap needs bubblewrap
    and the base root filesystem, docker an engine and the base image."""
    settings = Settings.from_env()
    try:
        backend = get_backend(config, settings)
    except EnvError as err:
        return str(err)
    if config.backend == "docker":
        import docker.errors

        try:
            backend.client.images.get(settings.base_image)  # type: ignore[attr-defined]
        except docker.errors.ImageNotFound:
            return f"base image {settings.base_image} is missing; run `swedeck env base` on this node"
    elif not (settings.base_rootfs / "usr" / "bin" / "python3").exists():
        return f"base root filesystem missing at {settings.base_rootfs}; run `swedeck env base` on this node"
    return None


def check_nodes(config: SandboxConfig) -> None:
    """Ask every live node of the connected Ray cluster whether it can run the sandboxes; one error
    names each node that cannot, and why."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    probe = ray.remote(num_cpus=0)(sandbox_problem)
    nodes = [n for n in ray.nodes() if n["Alive"]]
    answers = ray.get([
        probe.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)).remote(config)
        for n in nodes
    ])  # fmt: skip
    problems = [f"{n['NodeManagerAddress']} ({n['NodeID'][:8]}): {p}" for n, p in zip(nodes, answers) if p]
    if problems:
        raise EnvError(f"{len(problems)} of {len(nodes)} Ray nodes cannot run {config.backend} sandboxes: " + "; ".join(problems))


@contextmanager
def _api_for_workers() -> Iterator[None]:
    """Ray workers report their task runs to the flow's Prefect API: pin its URL in the settings the
    runner ships with each task. Without a configured API that is the temporary server Prefect would
    start for the flow anyway; else every worker would start one of its own."""
    from prefect.settings import PREFECT_API_URL, temporary_settings

    if PREFECT_API_URL.value():
        yield
        return
    from prefect.server.api.server import SubprocessASGIServer

    server = SubprocessASGIServer()
    server.start()
    with temporary_settings({PREFECT_API_URL: server.api_url}):
        yield


@contextmanager
def task_runner(config: RunnerConfig, sandbox: SandboxConfig, workers: int) -> Iterator[TaskRunner]:
    """The task runner for one flow call. ``workers`` bounds the local thread pool; on Ray, each
    node's CPUs (``ray start --num-cpus``) bound the tasks it runs at once."""
    if config.kind == "local":
        from prefect.task_runners import ThreadPoolTaskRunner

        yield ThreadPoolTaskRunner(max_workers=workers)
        return
    import ray
    from prefect_ray import RayTaskRunner

    with _api_for_workers():
        owned = not ray.is_initialized()
        # a temporary Ray puts its sockets under its temp dir, whose path must stay short
        link = short_link(Path(tempfile.gettempdir()) / "ray") if owned and not config.address else None
        if owned:
            ray.init(address=config.address or None, namespace="prefect", log_to_driver=False,
                     **({"_temp_dir": str(link)} if link else {}))  # fmt: skip
        try:
            check_nodes(sandbox)
            yield RayTaskRunner()  # joins the Ray this process is connected to
        finally:
            if owned:
                ray.shutdown()
            if link:
                link.unlink(missing_ok=True)
