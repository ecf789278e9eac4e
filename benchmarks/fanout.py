"""Pipeline 1's throughput on each task runner, and what each runner costs per task.

On the sample corpus (environments and trees built first, so every runner starts warm), it runs the
Pipeline 1 flow with the local runner at 1 and 2 workers and with Prefect's Ray task runner on a
two-node Ray cluster on this machine (a head and a worker node, one CPU each), and prints:
  * throughput -- tasks per minute of the whole flow;
  * idle       -- slot time per task not spent inside a task: (wall x slots - sum of task times) / tasks,
                  where a slot is a worker thread or a node CPU (includes waiting for the last task);
  * overhead   -- the runner's own cost per task, warm: the same flow shape over no-op Prefect tasks,
                  wall x slots / tasks (submission, state reports to the API, for Ray pickling and
                  scheduling; the flow run's own start and end included); Ray's should stay under 10% of
                  the median Pipeline 1 task.

    python benchmarks/fanout.py [--runs 1] [--tasks ID ...] [--noop 40]
"""

from __future__ import annotations

import os

# Prefect reads its settings when it is imported; a loaded machine starts its temporary server slowly
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")

import argparse  # noqa: E402
import shutil
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

from prefect import flow, task  # noqa: E402

from curation.sources import load_source  # noqa: E402
from data import SAMPLE  # noqa: E402
from flows.config import SwedeckConfig, load_config  # noqa: E402
from flows.pipeline1 import run_pipeline1  # noqa: E402
from flows.runners import RunnerConfig, task_runner  # noqa: E402
from harness.sandboxes.backends import get_backend
from harness.sandboxes.sandbox import EnvError  # noqa: E402


@task(name="noop")
def noop(i: int) -> int:
    return i


@flow(name="fanout-noop")
def noops(n: int) -> int:
    return sum(f.result() for f in [noop.submit(i) for i in range(n)])


def overhead(cfg: SwedeckConfig, workers: int, slots: int, n: int) -> float:
    with task_runner(cfg.runner, cfg.sandbox, workers) as runner:
        fan = noops.with_options(task_runner=runner)
        fan(2 * slots)  # warm: Ray starts a worker process per CPU, and each imports Prefect once
        started = time.perf_counter()
        fan(n)
        return (time.perf_counter() - started) * slots / n


def pipeline1(src: Path, cfg: SwedeckConfig, workers: int, slots: int) -> tuple[float, float, list[float]]:
    """Throughput (tasks/min), idle slot seconds per task, and each task's own seconds."""
    from curation.store import read_records
    from harness.records import Pipeline1Result

    out = Path(tempfile.mkdtemp(prefix="fanout-"))
    try:
        started = time.perf_counter()
        run_pipeline1([src], out, cfg, workers)
        wall = time.perf_counter() - started
        seconds = [r.duration_s for p in sorted((out / "p1").glob("*/result.parquet")) for r in read_records(p, Pipeline1Result)]
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return len(seconds) / wall * 60, (wall * slots - sum(seconds)) / len(seconds), seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=1, help="pipeline1.runs")
    parser.add_argument("--tasks", nargs="*", default=None, help="sample task ids (default: all)")
    parser.add_argument("--noop", type=int, default=40, help="no-op tasks per overhead measurement")
    args = parser.parse_args()

    src = Path(tempfile.mkdtemp(prefix="fanout-src-"))
    tasks = [t for t in load_source(SAMPLE).tasks if not args.tasks or t.instance_id in args.tasks]
    for t in tasks:
        shutil.copytree(SAMPLE / t.instance_id, src / t.instance_id)
    local = load_config(overrides=[f"pipeline1.runs={args.runs}"])
    backend = get_backend(local.sandbox)
    for t in tasks:  # environments and sealed trees, once, before any timing
        try:
            backend.prepare(t)
        except EnvError:
            pass  # Pipeline 1 records it; every runner meets it alike

    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False, "object_store_memory": 80 * 2**20})
    cluster.add_node(num_cpus=1, object_store_memory=80 * 2**20)
    cluster.wait_for_nodes()
    on_ray = local.model_copy(update={"runner": RunnerConfig(kind="ray", address=cluster.address)})
    runners = [("local, 1 worker", local, 1, 1), ("local, 2 workers", local, 2, 2), ("ray, 2 nodes x 1 CPU", on_ray, 2, 2)]
    rows, median = [], 0.0
    try:
        for label, cfg, workers, slots in runners:
            throughput, idle, seconds = pipeline1(src, cfg, workers, slots)
            median = median or statistics.median(seconds)
            rows.append((label, throughput, idle, overhead(cfg, workers, slots, args.noop)))
    finally:
        cluster.shutdown()
        shutil.rmtree(src, ignore_errors=True)

    print(f"Pipeline 1 on {len(tasks)} sample tasks, pipeline1.runs={args.runs}, {local.sandbox.backend}; "
          f"median task {median:.2f} s (local, 1 worker)")  # fmt: skip
    print(f"{'runner':24} {'tasks/min':>10} {'idle s/task':>12} {'overhead s/task':>16} {'overhead / median task':>23}")
    for label, throughput, idle, cost in rows:
        print(f"{label:24} {throughput:10.1f} {idle:12.2f} {cost:16.3f} {cost / median:22.1%}")
    ray_cost = rows[-1][3] / median
    print(f"ray overhead {'under' if ray_cost < 0.10 else 'OVER'} 10% of the median task ({ray_cost:.1%})")


if __name__ == "__main__":
    main()
