"""The fix's footprint alone: how many hand-written wrong fixes of ``data/real`` the strengthened suite
rejects when strengthening sees no probe at all, so every added test comes from the footprint search
(``probes.footprint``) and none from a surviving wrong probe. It measures the claim the footprint is
built on: a wrong fix that handles only the tested inputs fails, whether or not a probe like it was
generated.

For each task (default: every too-loose and adequate task of ``data/real/benchmark.toml``; the
development part only, never a held-out task): Pipeline 1 (one run per tree), ``judge.strengthen``
with no probes, then the task's ``shortcut.patch`` and ``alternative.patch`` graded on the
strengthened suite. Per task: the status, footprint inputs found / untested / pinned by a kept test,
the rewards, strengthening's seconds against Pipeline 1's; then the totals.

    python benchmarks/footprint_only.py [--tasks ID ...] [--workers 2] [--backend bwrap]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from curation.decks import strengthened_task
from curation.pipeline1 import Pipeline1Config, process_task
from curation.sources.local import load_task_folder
from harness.config import SandboxConfig
from harness.grading.grader import grade
from harness.records import Status
from harness.sandboxes.backends import get_backend
from harness.sandboxes.envs import prepare_tree
from judge.strengthen import strengthen

REAL = Path(__file__).resolve().parent.parent / "data" / "real"


def one(iid: str, label: str, backend_name: str, out: Path) -> dict:
    backend = get_backend(SandboxConfig(backend=backend_name))
    folder = REAL / iid
    task = load_task_folder(folder)
    started = time.monotonic()
    p1 = process_task(task, backend, Pipeline1Config(runs=1), "footprint-only", out)
    p1_s = time.monotonic() - started
    row = {"iid": iid, "label": label, "status": "-", "found": 0, "untested": 0, "pinned": 0, "shortcut": None, "alternative": None,
           "p1_s": p1_s, "st_s": 0.0}  # fmt: skip
    if p1.decision != "keep":
        return row
    started = time.monotonic()
    stamp = {"config_hash": "footprint-only", "task_hash": task.task_hash(), "instance_id": iid}
    record = strengthen(task, p1, [], backend, stamp, prepare_tree(task, backend.settings), log_dir=out / "logs")
    row["st_s"] = time.monotonic() - started
    strong = strengthened_task(task, record)
    expected = {k: Status(v) for k, v in record.expected_status.items()} if record.tests_patch else None
    row |= {"status": record.status, "found": len(record.footprint), "untested": sum(not f.tested for f in record.footprint),
            "pinned": sum(f.outcome.startswith("kept as") for f in record.footprint)}  # fmt: skip
    for kind in ("shortcut", "alternative"):
        patch = folder / f"{kind}.patch"
        if patch.exists():
            row[kind] = grade(strong, patch.read_text(), backend, expected=expected).reward
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", nargs="*", default=None)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--backend", default="bwrap", choices=["bwrap", "docker"])
    args = parser.parse_args()
    labels = tomllib.loads((REAL / "benchmark.toml").read_text())["tasks"]
    ids = args.tasks or [i for i, t in labels.items() if t["label"] in ("too_loose", "adequate")]
    out = Path(tempfile.mkdtemp(prefix="swedeck-footprint-only-"))
    with ThreadPoolExecutor(args.workers) as pool:
        rows = list(pool.map(lambda i: one(i, labels[i]["label"], args.backend, out), ids))

    def cell(r: float | None) -> str:
        return "-" if r is None else f"{r:g}"

    print(f"{'task':40} {'label':10} {'status':14} {'found':>5} {'untst':>5} {'pinned':>6} {'short':>5} {'alt':>4} {'P1 s':>6} {'str s':>6}")
    for r in sorted(rows, key=lambda r: (r["label"], r["iid"])):
        print(f"{r['iid']:40} {r['label']:10} {r['status']:14} {r['found']:>5} {r['untested']:>5} {r['pinned']:>6} {cell(r['shortcut']):>5} "
              f"{cell(r['alternative']):>4} {r['p1_s']:6.1f} {r['st_s']:6.1f}")  # fmt: skip
    for label in ("too_loose", "adequate"):
        group = [r for r in rows if r["label"] == label]
        short = [r["shortcut"] for r in group if r["shortcut"] is not None]
        alt = [r["alternative"] for r in group if r["alternative"] is not None]
        added = sum(r["pinned"] > 0 for r in group)
        print(f"{label}: {len(group)} tasks, tests added to {added}, shortcuts rejected {sum(s == 0.0 for s in short)}/{len(short)}, "
              f"alternatives passing {sum(a == 1.0 for a in alt)}/{len(alt)}")  # fmt: skip
    p1 = sum(r["p1_s"] for r in rows) or 1.0
    print(f"footprint strengthening {sum(r['st_s'] for r in rows) / max(len(rows), 1):.1f} s a task, {sum(r['st_s'] for r in rows) / p1:.1f}x Pipeline 1 (one run per tree)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
