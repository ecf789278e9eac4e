"""Pipeline 1's cost against the test runs it cannot avoid, and its speedup with 2 workers over 1.

For each sample task this measures, in the same run and on the same backend:
  * p1     -- Pipeline 1 on the task (k runs per tree, fresh sandboxes, assertion plugin, Parquet);
  * bare   -- the sum of the same 2k test-command executions, run directly in one already-prepared
              sandbox per tree (no fresh sandbox, no patch cascade, no plugin, no JUnit, no storage).
It prints the per-task overhead (p1 / bare - 1; target < 25% on bwrap) and the wall time of the whole
Prefect flow with 1 and with 2 workers.

    python benchmarks/pipeline1_overhead.py [--backend bwrap] [--runs 3] [--tasks ID ...]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from curation.pipeline1 import Pipeline1Config, process_task
from curation.sources import load_source
from data import SAMPLE
from flows.config import load_config
from harness.config import SandboxConfig
from harness.grading.patching import apply_patch
from harness.records import Task
from harness.sandboxes.backends import get_backend
from harness.sandboxes.sandbox import Backend, EnvError


def bare_seconds(task: Task, backend: Backend, runs: int) -> float:
    total = 0.0
    for patch in ("", task.answer.gold_patch):
        box = backend.open(task)
        try:
            apply_patch(box, patch, "gold")
            apply_patch(box, task.answer.hidden_tests.patch, "tests")
            for _ in range(runs):
                for command in task.test_cmd:
                    started = time.perf_counter()
                    box.run(command)
                    total += time.perf_counter() - started
        finally:
            box.close()
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", default="bwrap", choices=["bwrap", "docker"])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--tasks", nargs="*", default=None)
    parser.add_argument("--skip-flow", action="store_true", help="skip the 1-vs-2-worker flow timing")
    args = parser.parse_args()
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")

    backend = get_backend(SandboxConfig(backend=args.backend))
    tasks = [t for t in load_source(SAMPLE).tasks if not args.tasks or t.instance_id in args.tasks]
    config = Pipeline1Config(runs=args.runs)
    ratios = []
    print(f"{'task':28} {'p1 s':>7} {'bare s':>7} {'overhead':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        for task in tasks:
            try:
                backend.prepare(task)
            except EnvError:
                continue  # an environment that cannot build has no test runs to compare with
            bare = bare_seconds(task, backend, args.runs)
            started = time.perf_counter()
            process_task(task, backend, config, "bench", Path(tmp) / task.instance_id)
            p1 = time.perf_counter() - started
            ratios.append(p1 / bare)
            print(f"{task.instance_id:28} {p1:7.2f} {bare:7.2f} {p1 / bare - 1:9.1%}")
    print(f"median overhead on {args.backend}: {statistics.median(ratios) - 1:.1%} (target < 25% on bwrap)")

    if args.skip_flow:
        return
    from flows.pipeline1 import run_pipeline1

    cfg = load_config(overrides=[f"pipeline1.runs={args.runs}", f'sandbox.backend="{args.backend}"'])
    walls = {}
    for workers in (1, 2):
        with tempfile.TemporaryDirectory() as out:
            started = time.perf_counter()
            run_pipeline1([SAMPLE], Path(out), cfg, workers)
            walls[workers] = time.perf_counter() - started
    print(f"flow wall time: 1 worker {walls[1]:.1f} s, 2 workers {walls[2]:.1f} s, speedup {walls[1] / walls[2]:.2f}x")


if __name__ == "__main__":
    main()
