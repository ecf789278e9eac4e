"""Pipeline 1 fanned out by Prefect's Ray task runner over a two-node Ray cluster on this machine (a
head and a worker node, each with one CPU and its own sandbox cache) gives the local runner's catalog."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from ray.cluster_utils import Cluster

from conftest import catalog_rows, swedeck_cli
from data import SAMPLE
from flows.config import load_config
from flows.pipeline1 import run_pipeline1
from flows.runners import check_nodes
from harness.config import SandboxConfig
from harness.sandboxes.sandbox import EnvError

pytestmark = [pytest.mark.bwrap, pytest.mark.prefect, pytest.mark.slow]  # a two-node Ray cluster per module: the local runner is the default tier's
# a kept task, a task whose gold is wrong (kept by Pipeline 1) and one rejected for no FAIL_TO_PASS test
SUBSET = ("sample__semverlite-1", "sample__toposort-1", "sample__mdtable-1")
RESULT = ("instance_id", "decision", "reason", "fail_to_pass", "pass_to_pass", "flaky", "binding_assertions", "expected_status")


def _cache() -> Path:
    # sandboxes run as unprivileged uids that must traverse the cache (see conftest)
    path = Path(tempfile.mkdtemp(prefix="swedeck-ray-node-", dir="/var/tmp"))
    path.chmod(0o755)
    return path


@pytest.fixture(scope="module")
def cluster(swedeck_env) -> Iterator[tuple[Cluster, list[Path]]]:  # noqa: ANN001
    """Two Ray nodes on this machine; each inherits the environment it was started with, so each node's
    sandboxes get their own SWEDECK_CACHE, as on separate machines."""
    caches = [_cache(), _cache()]
    node = {"num_cpus": 1, "object_store_memory": 80 * 2**20}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SWEDECK_CACHE", str(caches[0]))
        ray_cluster = Cluster(initialize_head=True, head_node_args={**node, "include_dashboard": False})
        mp.setenv("SWEDECK_CACHE", str(caches[1]))
        ray_cluster.add_node(**node)
    ray_cluster.wait_for_nodes()
    yield ray_cluster, caches
    ray_cluster.shutdown()
    for cache in caches:
        shutil.rmtree(cache, ignore_errors=True)


def _results(out: Path) -> list[tuple]:
    return catalog_rows(out / "catalog.duckdb", f"select {', '.join(RESULT)} from p1_results order by instance_id")


def test_pipeline1_on_two_ray_nodes_equals_the_local_runner(cluster, prefect_api, tmp_path: Path) -> None:  # noqa: ANN001
    ray_cluster, caches = cluster
    src = tmp_path / "src"
    for name in SUBSET:
        shutil.copytree(SAMPLE / name, src / name)
    local = load_config(overrides=["pipeline1.runs=1"])
    ray = load_config(overrides=["pipeline1.runs=1", "runner.kind=ray", f"runner.address={ray_cluster.address}"])
    assert ray.hash() == local.hash()  # the runner is not part of what a record says produced it
    run_pipeline1([src], tmp_path / "local", local, workers=2)
    run_pipeline1([src], tmp_path / "ray", ray, workers=2)
    assert _results(tmp_path / "ray") == _results(tmp_path / "local")
    assert len(_results(tmp_path / "local")) == len(SUBSET)
    # both nodes ran sandboxes, each from its own cache
    for cache in caches:
        assert any((cache / "trees").iterdir()), f"no task ran on the node with cache {cache}"


def test_a_node_that_cannot_run_the_sandboxes_is_named_before_any_task(cluster, tmp_path: Path) -> None:  # noqa: ANN001
    import ray

    ray_cluster, _ = cluster
    # a third node on a machine where `swedeck env base` never ran; no CPUs, so no pipeline task lands on it
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SWEDECK_BASE_ROOTFS", str(tmp_path / "nowhere"))
        bare = ray_cluster.add_node(num_cpus=0, object_store_memory=80 * 2**20)
    ray.init(address=ray_cluster.address, namespace="prefect", log_to_driver=False)
    try:
        with pytest.raises(EnvError, match=r"1 of 3 Ray nodes cannot run bwrap sandboxes: \S+ \(\w+\): base root filesystem missing"):
            check_nodes(SandboxConfig(backend="bwrap"))
    finally:
        ray.shutdown()
        ray_cluster.remove_node(bare)


def test_the_default_runner_ray_starts_a_temporary_ray_from_the_command_line(tmp_path: Path) -> None:
    """`swedeck p1 --runner ray` with no address starts a temporary Ray whose files live under the
    command's scratch folder: its socket paths there ran past the 107 bytes Unix allows (OSError:
    validate_socket_filename failed) after 86 s. The results equal the local runner's."""
    src = tmp_path / "src"
    shutil.copytree(SAMPLE / SUBSET[0], src / SUBSET[0])
    for runner in ("local", "ray"):
        done = swedeck_cli("p1", str(src), "--runner", runner, "--set", "pipeline1.runs=1", "--out", str(tmp_path / runner))
        assert done.returncode == 0, done.stderr[-3000:]
    assert _results(tmp_path / "ray") == _results(tmp_path / "local")
    assert len(_results(tmp_path / "ray")) == 1
