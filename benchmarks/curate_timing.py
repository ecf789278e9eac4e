"""`swedeck curate` on the bundled sample, timed: first run after install (cold cache), then again (warm).

Both runs use a cache folder of their own (``SWEDECK_CACHE``; the base root filesystem ``install.sh``
built is reused through ``SWEDECK_BASE_ROOTFS``, as after an install), so the user's cache is neither
read nor touched, and each run writes a run folder of its own: the second finds every environment,
sealed tree, gold run and fact the first cached, and nothing of the first's results.

It prints per run the wall time of the whole command and of each stage as the command reports it
(Pipeline 1, Pipeline 2, strengthening), the rest (start-up and the stages' own set-up, the report
and catalog after them), the warm run's ratio to the cold one, and the load average at each end;
then it checks the verdicts against the sample's labels (``data/sample/labels.toml``: valid and
history_leak are accepted, an underspecified issue is rewritten), that the two too-loose tasks are
repaired, and that both runs gave every probe the same reward and every task the same strengthened
tests. Issue 24's goals: warm under 120 s, cold under 240 s on this machine.

    python benchmarks/curate_timing.py [--backend bwrap] [--workers 2] [--keep DIR] [--runs cold warm]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

from curation.store import read_records
from data import SAMPLE
from harness.config import Settings
from harness.records import ProbeResult, Strengthening
from judge.pipeline2 import verdicts

# the verdict each sample label should get from `swedeck curate` (the scripted judge plays the labels)
EXPECTED = {"valid": "accept", "history_leak": "accept", "too_loose": "too_loose", "over_restrictive": "over_restrictive",
            "gold_wrong": "gold_wrong", "issue_underspecified": "issue_rewritten"}  # fmt: skip
STAGES = {"pipeline1": r"Pipeline 1: \d+ tasks in ([\d.]+) s", "pipeline2": r"Pipeline 2: \d+ kept tasks in ([\d.]+) s",
          "strengthen": r"Test strengthening: \d+ tasks in ([\d.]+) s"}  # fmt: skip
GOALS = {"cold": 240.0, "warm": 120.0}


def run_curate(out: Path, env: dict[str, str], backend: str, workers: int) -> dict:
    """One `swedeck curate` as a user runs it; each stage's own figure from the summary it prints."""
    load = os.getloadavg()[0]
    started = time.monotonic()
    cmd = ["swedeck", "curate", "--out", str(out), "--backend", backend, "--workers", str(workers)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.monotonic() - started
    out.with_name(f"{out.name}.log").write_text(proc.stdout + proc.stderr)  # kept with --keep
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    flat = " ".join(proc.stdout.split())  # rich wraps a title wider than its table over lines
    stages = {name: float(m.group(1)) for name, pattern in STAGES.items() if (m := re.search(pattern, flat))}
    return {"wall": wall, "stages": stages, "load": (load, os.getloadavg()[0])}


def outcomes(out: Path) -> tuple[dict[str, str], dict[str, float | None], dict[str, tuple[str, str]]]:
    """Verdicts by task, rewards by probe, and (status, strengthened tests) by task."""
    rewards = {f"{p.instance_id}/{p.probe_id}": p.reward for path in sorted((out / "p2").glob("*/probes.parquet"))
               for p in read_records(path, ProbeResult)}  # fmt: skip
    strengthened = {s.instance_id: (s.status, s.tests_patch) for path in sorted((out / "strengthen").glob("*/strengthening.parquet"))
                    for s in read_records(path, Strengthening)}  # fmt: skip
    return {iid: v.verdict for iid, v in verdicts(out).items()}, rewards, strengthened


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", default="bwrap", choices=["bwrap", "docker"])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--keep", type=Path, default=None, help="cache and run folders here, kept (default: a temporary folder)")
    parser.add_argument("--runs", nargs="+", default=["cold", "warm"], choices=["cold", "warm"],
                        help="'warm' alone reuses the cache in --keep from an earlier cold run")  # fmt: skip
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="curate-timing-", dir="/var/tmp"))
    root.mkdir(parents=True, exist_ok=True)
    installed = Settings.from_env()
    # sandboxes run as unprivileged uids that traverse to the cache, as in the default's place
    (root / "cache").mkdir(mode=0o755, exist_ok=True)
    env = {**os.environ, "SWEDECK_CACHE": str(root / "cache"), "SWEDECK_BASE_ROOTFS": str(installed.base_rootfs),
           "COLUMNS": "250", "NO_COLOR": "1"}  # fmt: skip
    labels = tomllib.loads((SAMPLE / "labels.toml").read_text())["tasks"]
    expected = {iid: EXPECTED[row["label"]] for iid, row in labels.items() if row["p1_decision"] == "keep"}
    too_loose = sorted(iid for iid, row in labels.items() if row["label"] == "too_loose")

    figures, results, ok = {}, {}, True
    for name in args.runs:
        out = root / f"run-{name}"
        shutil.rmtree(out, ignore_errors=True)
        figures[name] = run_curate(out, env, args.backend, args.workers)
        results[name] = outcomes(out)
    print(f"swedeck curate on the sample ({args.backend}, {args.workers} workers, cache {root / 'cache'})")
    print(f"{'run':6} {'wall s':>8} {'P1 s':>7} {'P2 s':>7} {'str s':>7} {'rest s':>7}  load (start, end)  goal")
    for name, f in figures.items():
        st = f["stages"]
        rest = f["wall"] - sum(st.values())
        goal = "met" if f["wall"] < GOALS[name] else "missed"
        cells = " ".join(f"{st.get(s, float('nan')):7.1f}" for s in STAGES)
        print(f"{name:6} {f['wall']:8.1f} {cells} {rest:7.1f}  {f['load'][0]:5.2f}, {f['load'][1]:5.2f}      < {GOALS[name]:.0f} s: {goal}")
    if {"cold", "warm"} <= figures.keys():
        print(f"warm / cold: {figures['warm']['wall'] / figures['cold']['wall']:.2f}x")
    for name, (got, rewards, strengthened) in results.items():
        wrong = {iid: (got.get(iid), want) for iid, want in expected.items() if got.get(iid) != want}
        unrepaired = [iid for iid in too_loose if strengthened.get(iid, ("missing", ""))[0] != "repaired"]
        print(f"{name}: verdicts {'match the labels' if not wrong else f'DIFFER (got, want): {wrong}'}; "
              f"too-loose repaired: {'all' if not unrepaired else f'NOT {unrepaired}'} ({len(rewards)} probes)")
        ok &= not wrong and not unrepaired
    if {"cold", "warm"} <= results.keys():
        (_, r1, s1), (_, r2, s2) = results["cold"], results["warm"]
        changed = sorted(k for k in r1.keys() | r2.keys() if r1.get(k) != r2.get(k))
        print(f"probe rewards identical in both runs: {'yes' if not changed else f'NO, {len(changed)} differ: {changed[:5]}'}")
        print(f"strengthened tests identical in both runs: {'yes' if s1 == s2 else 'NO'}")
        ok &= not changed and s1 == s2
    if args.keep is None:
        shutil.rmtree(root, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
