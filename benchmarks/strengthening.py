"""Test strengthening on the sample corpus: how many too-loose suites it repairs and what that costs.

For each task labelled too loose in ``data/sample/labels.toml`` (or the tasks named), this runs what
``swedeck curate`` runs for it without the judge: Pipeline 1 (one run per tree), the model-free probes
with differential execution, then ``judge.strengthen``. It prints per task the status, the surviving
wrong probes (all of them, and those the engine confirmed), the survivors the strengthened suite
kills, the candidate tests tried and kept, the candidates rejected by the invariance step (they failed
on a behaviour-preserving rewrite of gold), the grader's test executions and the wall time of
strengthening, then the totals:

  repaired            tasks repaired / too-loose tasks
  survivors killed    confirmed survivors the strengthened suites fail / confirmed survivors
  invariance          candidate tests rejected because a rewrite of gold failed them
  executions          test executions strengthening spent per repaired task (validation and final grades)
  wall time           seconds of strengthening per task (probes and Pipeline 1 are timed apart)

    python benchmarks/strengthening.py [--backend bwrap] [--tasks ID ...] [--workers 2]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import tomllib
from pathlib import Path

from curation.pipeline1 import Pipeline1Config, process_task
from curation.sources import load_source
from data import SAMPLE
from harness.config import SandboxConfig
from harness.sandboxes.envs import prepare_tree
from harness.sandboxes.backends import get_backend
from judge.strengthen import confirmed_survivors, strengthen
from probes.runner import probe_task


def too_loose_ids() -> list[str]:
    labels = tomllib.loads((SAMPLE / "labels.toml").read_text())["tasks"]
    return sorted(iid for iid, label in labels.items() if label["label"] == "too_loose")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", default="bwrap", choices=["bwrap", "docker"])
    parser.add_argument("--tasks", nargs="*", default=None, help="instance ids (default: the tasks labelled too loose)")
    parser.add_argument("--workers", type=int, default=2, help="probes graded at once")
    args = parser.parse_args()

    backend = get_backend(SandboxConfig(backend=args.backend))
    wanted = args.tasks or too_loose_ids()
    tasks = [t for t in load_source(SAMPLE).tasks if t.instance_id in wanted]
    print(f"{'task':22} {'status':18} {'survived':>8} {'confirmed':>9} {'killed':>6} {'tests kept/tried':>16} "
          f"{'invariance':>10} {'executions':>10} {'s strengthen':>12} {'s probes':>8}")  # fmt: skip
    totals = {"repaired": 0, "confirmed": 0, "killed": 0, "invariance": 0, "repaired_exec": 0, "seconds": 0.0}
    with tempfile.TemporaryDirectory() as tmp:
        for task in tasks:
            out = Path(tmp) / task.instance_id
            p1 = process_task(task, backend, Pipeline1Config(runs=1), "bench", out)
            if p1.decision != "keep":
                print(f"{task.instance_id:22} (rejected by Pipeline 1: {p1.reason})")
                continue
            stamp = {"config_hash": "bench", "task_hash": task.task_hash(), "instance_id": task.instance_id}
            started = time.perf_counter()
            probes = probe_task(task, backend, p1, stamp, workers=args.workers, log_dir=out / "logs")
            probe_s = time.perf_counter() - started
            record = strengthen(task, p1, probes, backend, stamp, prepare_tree(task, backend.settings), log_dir=out / "logs")
            survived = [p for p in probes if p.kind == "plausible_wrong" and p.reward == 1.0]
            confirmed = confirmed_survivors(probes)
            kept = [t for t in record.tests if not t.rejected_at]
            invariance = sum(t.rejected_at == "invariant" for t in record.tests)
            totals["repaired"] += record.status == "repaired"
            totals["confirmed"] += len(confirmed)
            totals["killed"] += len(record.killed)
            totals["invariance"] += invariance
            totals["repaired_exec"] += record.executions if record.status == "repaired" else 0
            totals["seconds"] += record.duration_s
            print(f"{task.instance_id:22} {record.status:18} {len(survived):>8} {len(confirmed):>9} {len(record.killed):>6} "
                  f"{f'{len(kept)}/{len(record.tests)}':>16} {invariance:>10} {record.executions:>10} "
                  f"{record.duration_s:>12.1f} {probe_s:>8.1f}")  # fmt: skip
    n = len(tasks)
    repaired = int(totals["repaired"])
    print()
    print(f"repaired            {repaired} / {n} too-loose tasks")
    print(f"survivors killed    {int(totals['killed'])} / {int(totals['confirmed'])} confirmed survivors")
    print(f"invariance          {int(totals['invariance'])} candidate test(s) rejected: a behaviour-preserving rewrite of gold failed them")
    print(f"executions          {totals['repaired_exec'] / repaired if repaired else 0:.0f} test executions per repaired task")
    print(f"wall time           {totals['seconds'] / n if n else 0:.1f} s of strengthening per task")
    return 0 if repaired == n else 1


if __name__ == "__main__":
    sys.exit(main())
