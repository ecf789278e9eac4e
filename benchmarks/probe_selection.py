"""Test selection for model-free probes: how many test executions and how much wall time it saves.

For each sample task Pipeline 1 keeps (one run per tree), this generates the model-free probes and
grades every probe twice on the same backend:
  * selected -- change-impact selection (``probes.runner``): one traced gold run per task records which
    lines of gold's changed files each test runs; a probe then runs only the tests its change can
    impact, the binding (FAIL_TO_PASS) ones first, each run stopping at its first failure; the other
    tests keep gold's status; a plausible-but-wrong probe that passes them is confirmed by a full grade;
  * full     -- the full suite for every probe.
It prints per task the number of probes, the test executions of each mode, the execution ratio, the wall
time of each mode, and whether every probe got the same reward both ways (it must: selection may only
skip tests whose status is already decided); then the totals per probe kind and outcome.

How it counts: an execution is one test case that ran (a status in a run's report), summed over every
run a probe needed; a test that kept gold's status without running costs nothing. The selected mode's
count and wall time include the task's traced gold run (column ``cov``, paid once per task; the totals
line also gives the ratio without it). Target: >= 3x fewer executions over the corpus. Both modes use
the per-command timeout probes get in production (``probes.runner.probe_timeout``), so a looping mutant
costs the same bounded time in each.

    python benchmarks/probe_selection.py [--backend bwrap] [--tasks ID ...] [--workers 1] [--verbose]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from curation.pipeline1 import Pipeline1Config, process_task
from curation.sources import load_source
from data import SAMPLE
from harness.config import SandboxConfig
from harness.envs import prepare_tree
from harness.sandbox import get_backend
from probes.runner import generate, gold_coverage, probe_timeout, run_probes, with_timeout, worth_tracing


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", default="bwrap", choices=["bwrap", "docker"])
    parser.add_argument("--tasks", nargs="*", default=None, help="instance ids (default: every sample task)")
    parser.add_argument("--workers", type=int, default=1, help="probes graded at once")
    parser.add_argument("--verbose", action="store_true", help="one line per probe")
    args = parser.parse_args()

    backend = get_backend(SandboxConfig(backend=args.backend))
    tasks = [t for t in load_source(SAMPLE).tasks if not args.tasks or t.instance_id in args.tasks]
    totals = {"probes": 0, "cov": 0, "sel_exec": 0, "full_exec": 0, "sel_s": 0.0, "full_s": 0.0}
    groups: dict[tuple[str, str], list[int]] = {}  # (kind, outcome) -> [probes, exec sel, exec full]
    decided: dict[str, int] = {}
    all_same = True
    header = (
        f"{'task':26} {'probes':>6} {'cov':>4} {'exec sel':>9} {'exec full':>9} {'ratio':>6} {'s sel':>7} {'s full':>7}"
        f" {'same rewards':>12}"
    )
    print(header)
    with tempfile.TemporaryDirectory() as tmp:
        for task in tasks:
            p1 = process_task(task, backend, Pipeline1Config(runs=1), "bench", Path(tmp) / task.instance_id)
            if p1.decision != "keep":
                print(f"{task.instance_id:26} (rejected by Pipeline 1: {p1.reason})")
                continue
            stamp = {"config_hash": "bench", "task_hash": task.task_hash(), "instance_id": task.instance_id}
            tree = prepare_tree(task, backend.settings)
            candidates = generate(task, tree, p1)
            timeout = probe_timeout(p1)
            started = time.perf_counter()
            coverage = gold_coverage(task, with_timeout(backend, timeout), p1, tree=tree) if worth_tracing(candidates) else None
            traced = coverage.executions if coverage is not None else 0
            selected = run_probes(
                task, candidates, backend, p1, stamp, selection=True, workers=args.workers, timeout_s=timeout,
                coverage=coverage, tree=tree,
            )  # fmt: skip
            sel_s = time.perf_counter() - started
            started = time.perf_counter()
            full = run_probes(task, candidates, backend, p1, stamp, selection=False, workers=args.workers, timeout_s=timeout)
            full_s = time.perf_counter() - started
            sel_exec = traced + sum(r.executions for r in selected)
            full_exec = sum(r.executions for r in full)
            same = all(a.reward == b.reward for a, b in zip(selected, full, strict=True))
            all_same &= same
            for key, value in (
                ("probes", len(candidates)), ("cov", traced), ("sel_exec", sel_exec),
                ("full_exec", full_exec), ("sel_s", sel_s), ("full_s", full_s),
            ):  # fmt: skip
                totals[key] += value
            ratio = full_exec / sel_exec if sel_exec else float("inf")
            note = "  (not traced)" if coverage is None else "" if coverage.usable else f"  (coverage unusable: {coverage.why})"
            print(
                f"{task.instance_id:26} {len(candidates):6} {traced:4} {sel_exec:9} {full_exec:9} {ratio:6.2f}"
                f" {sel_s:7.1f} {full_s:7.1f} {str(same):>12}{note}"
            )
            for a, b in zip(selected, full, strict=True):
                group = groups.setdefault((a.kind, "survived" if b.reward else "killed"), [0, 0, 0])
                group[0] += 1
                group[1] += a.executions
                group[2] += b.executions
                decided[a.decided_by] = decided.get(a.decided_by, 0) + 1
                if args.verbose:
                    print(
                        f"    {a.kind:19} {a.operator:22} reward {a.reward:.0f}/{b.reward:.0f} exec {a.executions:3}/{b.executions:3}"
                        f" by {a.decided_by:9} inherited {a.inherited:3} {a.reason}/{b.reason}"
                    )
                if a.reward != b.reward:
                    print(f"    reward differs: {a.operator} {a.description} selected={a.reward} full={b.reward}")
    ratio = totals["full_exec"] / totals["sel_exec"] if totals["sel_exec"] else float("inf")
    probes_only = totals["sel_exec"] - totals["cov"]
    print(
        f"{'TOTAL':26} {totals['probes']:6} {totals['cov']:4} {totals['sel_exec']:9} {totals['full_exec']:9} {ratio:6.2f} "
        f"{totals['sel_s']:7.1f} {totals['full_s']:7.1f} {str(all_same):>12}"
    )
    print("\nby kind and outcome (reward 1 = survived; selected executions without the traced gold runs):")
    print(f"{'kind':20} {'outcome':9} {'probes':>6} {'exec sel':>9} {'exec full':>9} {'ratio':>6}")
    for (kind, outcome), (n, sel, fl) in sorted(groups.items()):
        print(f"{kind:20} {outcome:9} {n:6} {sel:9} {fl:9} {fl / sel if sel else float('inf'):6.2f}")
    print(f"rewards decided by: {', '.join(f'{k} {v}' for k, v in sorted(decided.items()))}")
    print(
        f"executions: {ratio:.2f}x fewer with selection, traced gold runs included (target >= 3x); "
        f"{totals['full_exec'] / probes_only if probes_only else float('inf'):.2f}x without them; wall time: "
        f"{totals['full_s'] / totals['sel_s'] if totals['sel_s'] else float('inf'):.2f}x; identical rewards: {all_same}"
    )
    return 0 if all_same else 1


if __name__ == "__main__":
    sys.exit(main())
