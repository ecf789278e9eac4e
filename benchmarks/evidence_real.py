"""Evidence on real test suites: what Pipeline 2 without a judge and test strengthening find on real fix
commits whose label we know (``data/real_libraries/*.toml``, read by ``data.benchmark``: too loose,
adequate, over-restrictive, each backed by hand-written patches in the task folder), and what that costs
against Pipeline 1. Each library is in the development part or the held-out part; the report covers
each part apart (``--part`` runs one).

It runs what a user runs, one stage after another into one run folder (a rerun resumes each stage):

    swedeck p1 data/real --out RUN            Pipeline 1
    swedeck judge RUN --no-judge              model-free probes, differential execution, verdicts
    swedeck strengthen RUN --all              tests from every confirmed survivor's distinguishing input
    swedeck deck RUN --out RUN/deck           raw and strengthened arms

then grades each task's ``shortcut.patch`` (a wrong fix that passes the upstream tests) and
``alternative.patch`` (a correct fix unlike gold) with the one grader on the strengthened arm, the
reward an RL run on that arm would give. Per label it prints:

  flagged             tasks with a wrong probe that passes and an input telling it from gold (confirmed)
                      (on adequate tasks these are false alarms)
  verdict             tasks the model-free verdict calls too_loose / over_restrictive
  repaired            tasks whose strengthening status is repaired (partially repaired apart)
  shortcut rejected   shortcut patches the strengthened arm gives reward 0
  alternative passes  correct alternatives the strengthened arm gives reward 1 (on an over-restrictive
                      task the raw tests already fail it: there it should stay 0)
and the cost: test executions (test cases run) and wall time per task of Pipeline 2 and strengthening
against Pipeline 1's. Wall time per task: every stage measured alike, its own wall clock (CLI start-up,
Prefect and sandboxes included) times its workers over the tasks it finished (strengthening's over the
tasks Pipeline 2 finished, since it looks at each), summed over the invocations that did work
(``RUN/evidence_timing.json``). Records' own ``duration_s`` leave out start-up, and Pipeline 2's
records hold none, so mixing them (as this script once did) charged start-up to Pipeline 2 only.
Test executions are the records' own counts (Pipeline 1: statuses of its runs; probes: tests run for
each grade; strengthening: its validation and final grades); inputs the differential engine runs
outside a grade are not in them.

    python benchmarks/evidence_real.py [--out RUN] [--tasks ID ...] [--part dev|heldout] [--backend bwrap] [--workers 2]
                                         [--report-only]

``--report-only`` reports on a run folder as it is (a stage still running or stopped): tasks without
Pipeline 2 or strengthening records show "-", and their patches are graded on the raw tests.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow.parquet as pq

REAL = Path(__file__).resolve().parent.parent / "data" / "real"
LABELS = ("too_loose", "adequate", "over_restrictive")
# each stage: the CLI call, and the record file whose count says how many tasks it finished
STAGES = {
    "pipeline1": (lambda run, sources: ["p1", *sources, "--out", str(run)], ("p1", "result.parquet")),
    "pipeline2": (lambda run, sources: ["judge", str(run), "--no-judge"], ("p2", "verdict.parquet")),
    "strengthen": (lambda run, sources: ["strengthen", str(run), "--all"], ("strengthen", "strengthening.parquet")),
}


def benchmark_labels() -> dict[str, dict]:
    from data.benchmark import real_tasks

    return {t.name: {"label": t.label, "patches": t.patches, "part": t.part} for t in real_tasks()}


def done(run: Path, folder: str, name: str) -> int:
    return len(list((run / folder).glob(f"*/{name}")))


def run_stages(run: Path, sources: Sequence[str], backend: str, workers: int) -> None:
    """Each stage through the CLI, timed; a stage with nothing left to do adds nothing to the timing.
    Strengthening's time counts whenever Pipeline 2 finished tasks in this invocation, even where it
    added nothing (it still looked at each of them)."""
    timing_path = run / "evidence_timing.json"
    probed = 0
    for stage, (args, (folder, name)) in STAGES.items():
        before = done(run, folder, name) if run.exists() else 0
        started = time.monotonic()
        cmd = ["swedeck", *args(run, sources), "--backend", backend, "--workers", str(workers)]
        print(f"$ {' '.join(cmd)}", flush=True)
        proc = subprocess.run(cmd, stdout=subprocess.DEVNULL)
        seconds = time.monotonic() - started
        if proc.returncode != 0:
            print(f"{stage} exited {proc.returncode}; the report covers what finished", flush=True)
        timing = json.loads(timing_path.read_text()) if timing_path.exists() else {}
        new = done(run, folder, name) - before
        if stage == "pipeline2":
            probed = new
        if new > 0 or (stage == "strengthen" and probed > 0):
            entry = timing.setdefault(stage, {"seconds": 0.0, "tasks": 0, "workers": workers})
            entry["seconds"] += seconds
            entry["tasks"] += new
            timing_path.write_text(json.dumps(timing, indent=2))
        if proc.returncode != 0:
            return


def build_deck(run: Path) -> None:
    """The deck of what the run holds now (its strengthened arm is the raw arm where nothing was added)."""
    deck = ["swedeck", "deck", str(run), "--out", str(run / "deck")]
    print(f"$ {' '.join(deck)}", flush=True)
    subprocess.run(deck, stdout=subprocess.DEVNULL, check=False)


def rows(path: Path) -> list[dict]:
    return pq.read_table(path).to_pylist() if path.exists() else []


def p1_executions(run: Path, iid: str) -> int:
    return sum(len(r["statuses"]) for r in rows(run / "p1" / iid / "runs.parquet"))


def grade_patches(run: Path, ids: Sequence[str], labels: dict[str, dict], backend_name: str, workers: int) -> dict[tuple[str, str], float | None]:
    """Reward of each hand-written patch on the strengthened arm (None: the task is not in the deck)."""
    from curation.deck_files import arm_tasks
    from harness.config import SandboxConfig
    from harness.grading.grader import grade
    from harness.sandboxes.backends import get_backend

    deck = run / "deck"
    tasks = {t.instance_id: t for t in arm_tasks(deck, "strengthened")} if deck.exists() else {}
    backend = get_backend(SandboxConfig(backend=backend_name))
    jobs = [(iid, kind) for iid in ids for kind in labels[iid]["patches"]]

    def one(job: tuple[str, str]) -> float | None:
        iid, kind = job
        if iid not in tasks:
            return None
        return grade(tasks[iid], (REAL / iid / f"{kind}.patch").read_text(), backend).reward

    with ThreadPoolExecutor(workers) as pool:
        return dict(zip(jobs, pool.map(one, jobs), strict=True))


def report(run: Path, ids: Sequence[str], labels: dict[str, dict], rewards: dict[tuple[str, str], float | None]) -> None:
    timing_path = run / "evidence_timing.json"
    timing = json.loads(timing_path.read_text()) if timing_path.exists() else {}
    per_task: dict[str, dict] = {}
    for iid in ids:
        p1 = rows(run / "p1" / iid / "result.parquet")
        counts = rows(run / "p2" / iid / "counts.parquet")
        verdict = rows(run / "p2" / iid / "verdict.parquet")
        probes = rows(run / "p2" / iid / "probes.parquet")
        strength = rows(run / "strengthen" / iid / "strengthening.parquet")
        per_task[iid] = {
            "label": labels[iid]["label"],
            "kept": bool(p1) and p1[0]["decision"] == "keep",
            "probed": bool(counts),
            "survived": counts[0]["survived"] if counts else 0,
            "confirmed": counts[0]["confirmed"] if counts else 0,
            "alternatives_failed": counts[0]["alternatives_failed"] if counts else 0,
            "verdict": verdict[0]["verdict"] if verdict else "-",
            "strengthening": strength[0]["status"] if strength else "-",
            "x_p1": p1_executions(run, iid),
            "x_p2": sum(p["executions"] for p in probes),
            "x_st": strength[0]["executions"] if strength else 0,
            "tried": sum(p["differential_tried"] for p in probes),
            "shortcut": rewards.get((iid, "shortcut")),
            "alternative": rewards.get((iid, "alternative")),
        }

    def cell(reward: float | None) -> str:
        return "-" if reward is None else f"{reward:g}"

    print(f"\n{'task':40} {'label':16} {'P1':4} {'surv':>4} {'conf':>4} {'tried':>5} {'verdict':16} {'strengthening':18} "
          f"{'short':>5} {'alt':>4} {'x P1':>6} {'x P2':>6} {'x str':>6}")  # fmt: skip
    for iid, t in per_task.items():
        print(f"{iid:40} {t['label']:16} {'keep' if t['kept'] else 'no':4} {t['survived']:>4} {t['confirmed']:>4} {t['tried']:>5} "
              f"{t['verdict']:16} {t['strengthening']:18} {cell(t['shortcut']):>5} {cell(t['alternative']):>4} "
              f"{t['x_p1']:>6} {t['x_p2']:>6} {t['x_st']:>6}")  # fmt: skip

    def frac(n: int, d: int) -> str:
        return f"{n}/{d}" + (f" ({100 * n / d:.0f}%)" if d else "")

    print(f"\n{'label':18} {'tasks':>5} {'kept':>5} {'probed':>6}  {'flagged (confirmed)':20} {'verdict':16} {'repaired':12} "
          f"{'partial':8} {'shortcut rejected':18} {'alternative passes':18}")  # fmt: skip
    for label in LABELS:
        group = [t for t in per_task.values() if t["label"] == label]
        probed = [t for t in group if t["probed"]]
        flagged = sum(t["confirmed"] > 0 for t in probed)
        said = {"too_loose": "too_loose", "adequate": "too_loose", "over_restrictive": "over_restrictive"}[label]
        verdicts = sum(t["verdict"] == said for t in probed)
        repaired = sum(t["strengthening"] == "repaired" for t in group)
        partial = sum(t["strengthening"] == "partially_repaired" for t in group)
        shortcuts = [t["shortcut"] for t in group if t["shortcut"] is not None]
        alternatives = [t["alternative"] for t in group if t["alternative"] is not None]
        want_alt = 0.0 if label == "over_restrictive" else 1.0
        print(f"{label:18} {len(group):>5} {sum(t['kept'] for t in group):>5} {len(probed):>6}  {frac(flagged, len(probed)):20} "
              f"{f'{said} {verdicts}':16} {frac(repaired, flagged):12} {partial:<8} "
              f"{frac(sum(r == 0.0 for r in shortcuts), len(shortcuts)):18} "
              f"{frac(sum(r == want_alt for r in alternatives), len(alternatives)):18}")  # fmt: skip
    print("flagged on adequate tasks are false alarms; repaired is out of the flagged tasks; an over-restrictive task's "
          "alternative 'passes' when the arm still gives it 0 (the raw tests reject it)")

    n = len(per_task) or 1
    wall = walls_per_task(timing)
    p2_wall = wall.get("pipeline2")
    print(f"\ncost per task (mean over {len(per_task)} tasks)   test executions        wall time (s)")
    base_x = sum(t["x_p1"] for t in per_task.values()) / n
    for stage, key in (("pipeline1", "x_p1"), ("pipeline2", "x_p2"), ("strengthen", "x_st")):
        x = sum(t[key] for t in per_task.values()) / n
        w = wall.get(stage)
        ratio_x = f"{x / base_x:5.1f}x P1" if base_x else ""
        ratio_w = f"{w / wall['pipeline1']:5.1f}x P1" if w is not None and wall.get("pipeline1") else ""
        print(f"  {stage:32} {x:8.0f} {ratio_x:12} {'-' if w is None else f'{w:8.1f}'} {ratio_w}")
    if p2_wall is not None and wall.get("pipeline1"):
        both = p2_wall + wall.get("strengthen", 0.0)
        print(f"  {'Pipeline 2 + strengthening':32} {'':21} {both:8.1f} {both / wall['pipeline1']:5.1f}x P1 (target: at most 5x)")
    print("wall time per task: each stage's wall clock x workers / the tasks it finished (strengthening: / the tasks "
          "Pipeline 2 finished), start-up included alike, summed over the invocations that did work (RUN/evidence_timing.json)")


def walls_per_task(timing: dict) -> dict[str, float]:
    """Seconds per task of each stage, every stage measured the same way: its own wall clock (CLI start-up,
    Prefect, sandboxes) times its workers over the tasks it finished; strengthening looks at every task
    Pipeline 2 finished, so it is spread over those."""
    tasks = {stage: e["tasks"] for stage, e in timing.items()}
    tasks["strengthen"] = tasks.get("pipeline2", 0)
    return {stage: e["seconds"] * e["workers"] / tasks[stage] for stage, e in timing.items() if tasks[stage]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("runs/evidence-real"), help="run folder (a rerun resumes it)")
    parser.add_argument("--tasks", nargs="*", default=None, help="task folder names (default: every labelled task)")
    parser.add_argument("--part", choices=["dev", "heldout"], default=None, help="only the tasks of one part (default: both)")
    parser.add_argument("--backend", default="bwrap", choices=["bwrap", "docker"])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--report-only", action="store_true", help="build the deck of what RUN holds now, grade and report; run no stage")
    args = parser.parse_args()

    labels = benchmark_labels()
    chosen = [i for i in args.tasks or labels if args.part in (None, labels[i]["part"])]
    ids = sorted(chosen, key=lambda i: (LABELS.index(labels[i]["label"]), i))
    if not args.report_only:
        run_stages(args.out, [str(REAL / iid) for iid in ids], args.backend, args.workers)
    build_deck(args.out)
    rewards = grade_patches(args.out, ids, labels, args.backend, args.workers)
    for part in ("dev", "heldout"):
        in_part = [i for i in ids if labels[i]["part"] == part]
        if in_part:
            print(f"\n=== {part} part: {len(in_part)} tasks of {len({i.rsplit('-', 1)[0] for i in in_part})} libraries ===")
            report(args.out, in_part, labels, rewards)
    return 0


if __name__ == "__main__":
    sys.exit(main())
