"""Model-free probes: how many test executions and how much wall time selection and probe sessions save.

For each sample task Pipeline 1 keeps (one run per tree), this generates the model-free probes and
grades every probe in each mode (``--arms``) on the same backend:
  * sel        -- change-impact selection (``probes.runner``) in probe sessions (``probes.session``: one
    prepared sandbox per worker with a server that imported pytest once, a fork per test command, the
    tree put back after each probe): one traced gold run per task records which lines of gold's changed
    files each test runs; a probe then runs only the tests its change can impact, the binding
    (FAIL_TO_PASS) ones first, each run stopping at its first failure; the other tests keep gold's status;
  * full       -- the full suite for every probe, in probe sessions;
  * sel-solo   -- selection in probe sessions without mutant schemata (``probes.schema``), which sel and
    full use: probes that each rewrite one function's body run in one collected pytest session, a fork
    per probe;
  * sel-grade  -- selection with every run a ``harness.grading.grader.grade`` of its own (before probe sessions);
  * full-grade -- the full suite, each probe a ``grade`` of its own (the baseline issue 24 measured).
With ``--repeat N`` each task's arms run N rounds, in reverse order every other round, and each
figure is the median of its rounds. It prints per task the number of probes, the test executions (selected, full), their ratio, the wall
time of each mode, the floor and probing's multiple of it, and whether every probe got the same reward
in every mode (it must: selection may only skip tests whose status is already decided, and a session
gives the reward ``grade`` gives); then the totals per probe kind and outcome.

How it counts: an execution is one test case that ran (a status in a run's report), summed over every
run a probe needed; a test that kept gold's status without running costs nothing. The selected modes'
count and wall time include the task's traced gold run (column ``cov``, paid once per task). The floor
is the sum, over every test command the sel mode ran, of pytest's own time for it (the JUnit report's
testsuite time: collecting the selected tests' modules and running them; the traced gold run's
included; a schema's collection counted once, each of its runs' own time on top), measured in the same run; probing's multiple is sel's wall time over that floor (target <= 2x).
The process's first probe session is opened before the first task's timed arms (one probe of it graded,
untimed) and parked, as a curate run's sessions are between tasks: every arm of every task then takes
a parked session over, instead of the first arm of the first task alone paying a fresh start (its time
is printed at the end). Every mode uses the per-command timeout probes get in production (``probes.runner.probe_timeout``), so a
looping mutant costs the same bounded time in each.

    python benchmarks/probe_selection.py [--backend bwrap] [--tasks ID ...] [--workers 1] [--arms sel full ...] [--repeat 1] [--verbose]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from curation.pipeline1 import Pipeline1Config, process_task
from curation.sources import load_source
from data import SAMPLE
from harness.config import SandboxConfig
from harness.sandboxes.envs import prepare_tree
from harness.sandboxes.backends import get_backend
from probes.runner import generate, probe_timeout, run_probes
from probes.pool import release_parked
from probes.session import Stats


ARMS = ("sel", "full", "sel-solo", "sel-grade", "full-grade")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", default="bwrap", choices=["bwrap", "docker"])
    parser.add_argument("--tasks", nargs="*", default=None, help="instance ids (default: every sample task)")
    parser.add_argument("--workers", type=int, default=1, help="probes graded at once")
    parser.add_argument("--arms", nargs="*", default=list(ARMS), choices=ARMS, help="modes to run (sel always runs)")
    parser.add_argument("--repeat", type=int, default=1, help="rounds per task, the arms' order reversed every other round; medians")
    parser.add_argument("--verbose", action="store_true", help="one line per probe")
    args = parser.parse_args()
    arms = ["sel", *[a for a in args.arms if a != "sel"]]

    backend = get_backend(SandboxConfig(backend=args.backend))
    tasks = [t for t in load_source(SAMPLE).tasks if not args.tasks or t.instance_id in args.tasks]
    totals = {"probes": 0, "cov": 0, "sel_exec": 0, "full_exec": 0, "floor_s": 0.0}
    seconds = dict.fromkeys(arms, 0.0)
    groups: dict[tuple[str, str], list[int]] = {}  # (kind, outcome) -> [probes, exec sel, exec full]
    decided: dict[str, int] = {}
    all_same, all_faster = True, True
    first_start: float | None = None
    header = (
        f"{'task':26} {'probes':>6} {'cov':>4} {'exec sel':>9} {'exec full':>9} {'ratio':>6}"
        + "".join(f" {'s ' + arm:>12}" for arm in arms)
        + f" {'floor':>6} {'x floor':>7} {'same rewards':>12}"
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
            results, walls, runs = {}, {arm: [] for arm in arms}, {arm: [] for arm in arms}
            if first_start is None:  # the process's first session, parked for every arm of every task to take over
                warm = Stats()
                run_probes(task, candidates[:1], backend, p1, stamp, selection=False, timeout_s=timeout, tree=tree, stats=warm)
                first_start = warm.start_s
            for round_ in range(args.repeat):
                for arm in arms if round_ % 2 == 0 else arms[::-1]:
                    runs[arm].append(Stats())
                    started = time.perf_counter()
                    results[(arm, round_)] = run_probes(
                        task, candidates, backend, p1, stamp, selection=arm.startswith("sel"), workers=args.workers,
                        timeout_s=timeout, tree=tree, sessions=not arm.endswith("grade"), stats=runs[arm][-1],
                        schemata=not arm.endswith("solo"),
                    )  # fmt: skip
                    walls[arm].append(time.perf_counter() - started)
            wall = {arm: statistics.median(walls[arm]) for arm in arms}
            stats = {arm: runs[arm][-1] for arm in arms}
            traced, floor = stats["sel"].traced, statistics.median(r.suite_s for r in runs["sel"])
            selected = results[("sel", 0)]
            full = results.get(("full", 0)) or results.get(("full-grade", 0)) or selected
            sel_exec = traced + sum(r.executions for r in selected)
            full_exec = sum(r.executions for r in full)
            same = all(len({r.reward for r in probe}) == 1 for probe in zip(*results.values(), strict=True))
            all_same &= same
            all_faster &= all(wall["sel"] < wall[arm] for arm in arms if arm.startswith("full"))
            for key, value in (
                ("probes", len(candidates)), ("cov", traced), ("sel_exec", sel_exec), ("full_exec", full_exec),
                ("floor_s", floor),
            ):  # fmt: skip
                totals[key] += value
            for arm in arms:
                seconds[arm] += wall[arm]
            ratio = full_exec / sel_exec if sel_exec else float("inf")
            over = wall["sel"] / floor if floor else float("inf")
            ses = stats["sel"]
            note = "" if traced else "  (not traced)"
            note += (
                f"  (sessions: {ses.graded} runs, {ses.schema_runs} of them in {ses.schemata} schemata, {ses.fallback} by the grader, {ses.forked} forked, {ses.plain} plain, {ses.switched} taken over;"
                f" s: start {ses.start_s:.1f}, commands {ses.command_s:.1f}, host {ses.host_s:.1f}, restore {ses.restore_s:.1f})"
            )
            print(
                f"{task.instance_id:26} {len(candidates):6} {traced:4} {sel_exec:9} {full_exec:9} {ratio:6.2f}"
                + "".join(f" {wall[arm]:12.2f}" for arm in arms)
                + f" {floor:6.1f} {over:7.2f} {str(same):>12}{note}"
            )
            for i, (a, b) in enumerate(zip(selected, full, strict=True)):
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
                rewards = {arm: results[(arm, 0)][i].reward for arm in arms}
                if len(set(rewards.values())) > 1:
                    print(f"    reward differs: {a.operator} {a.description} {rewards}")
    ratio = totals["full_exec"] / totals["sel_exec"] if totals["sel_exec"] else float("inf")
    probes_only = totals["sel_exec"] - totals["cov"]
    probing = seconds["sel"]
    over = probing / totals["floor_s"] if totals["floor_s"] else float("inf")
    print(
        f"{'TOTAL':26} {totals['probes']:6} {totals['cov']:4} {totals['sel_exec']:9} {totals['full_exec']:9} {ratio:6.2f}"
        + "".join(f" {seconds[arm]:12.1f}" for arm in arms)
        + f" {totals['floor_s']:6.1f} {over:7.2f} {str(all_same):>12}"
    )
    print("\nby kind and outcome (reward 1 = survived; selected executions without the traced gold runs):")
    print(f"{'kind':20} {'outcome':9} {'probes':>6} {'exec sel':>9} {'exec full':>9} {'ratio':>6}")
    for (kind, outcome), (n, sel, fl) in sorted(groups.items()):
        print(f"{kind:20} {outcome:9} {n:6} {sel:9} {fl:9} {fl / sel if sel else float('inf'):6.2f}")
    print(f"rewards decided by: {', '.join(f'{k} {v}' for k, v in sorted(decided.items()))}")
    walls = ", ".join(f"{arm} {seconds[arm] / seconds['sel']:.2f}x" for arm in arms if arm != "sel" and seconds["sel"])
    print(
        f"executions: {ratio:.2f}x fewer with selection, traced gold runs included (target >= 3x); "
        f"{totals['full_exec'] / probes_only if probes_only else float('inf'):.2f}x without them; wall time of each mode "
        f"over selection: {walls}; selection faster than the full suite on every task: {all_faster}; probing "
        f"{probing:.2f} s = {over:.3f}x the floor {totals['floor_s']:.2f} s (target <= 2x: {'met' if over <= 2 else 'MISSED'}); "
        f"identical rewards: {all_same}"
    )
    if first_start is not None:
        print(f"the process's first probe session started in {first_start:.2f} s, before any timed arm (one probe, untimed)")
    release_parked()  # the parked probe sessions, before the interpreter exits
    return 0 if all_same else 1


if __name__ == "__main__":
    sys.exit(main())
