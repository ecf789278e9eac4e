"""The run catalog at corpus scale: synthetic runs of 1k, 10k and 100k tasks, queried before and after compaction.

Each task is committed with the store's own ``commit_folder``, as Pipeline 1 and 2 do: a p1 folder (task row,
6 test runs with 20-test status maps, 30 assertion records, result, task.json) and, for the 80 % kept, a p2
folder (8 probes with their patches, probe counts, a verdict). For each size it prints:

  commit     wall time per task of the per-task commits
  compact    ``compact``: folding every committed folder into one part per table (total and per task, wall
             and CPU), read from the writers' commit journals (each writer appends its commits
             JOURNAL_BATCH at a time, and the rest at its exit)
  catalog    ``build_run_catalog`` before compaction (every task file listed) and after (the parts)
  queries    the median time of five queries, before and after compaction:
               count         select count(*) from p1_results
               shares        verdict_shares (verdicts joined with p1_results, grouped by source and verdict)
               join          verdicts joined with probes, grouped by verdict and probe kind
               lookup        one instance_id's result
               assertions    one task's assertion records
  peak RSS   of each phase, which runs in its own process (commit, compact, catalog + queries)

Targets at 100k tasks: every query under 200 ms after compaction, compaction under 1 ms per task, memory flat.
Queries before compaction open every task file; above 1k tasks they run once (--repeat applies up to 1k).

    python benchmarks/catalog_scale.py [--sizes 1000 10000 100000] [--repeat 5] [--dir DIR] [--keep]
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SOURCES = ["r2e_gym", "swe_rebench_v2", "scale_swe", "swe_bench"]
REASONS = ["gold_fails", "no_fail_to_pass", "timeout", "only_flaky", "no_binding_assertion"]
VERDICTS = ["accept", "accept", "accept", "too_loose", "over_restrictive", "issue_rewritten", "gold_wrong"]
QUERIES = {
    "count": "select count(*) from p1_results",
    "shares": "select * from verdict_shares",
    "join": "select v.verdict, p.kind, count(*), avg(p.reward) from verdicts v join probes p using (run, instance_id) group by all",
    "lookup": "select * from p1_results where instance_id = ?",
    "assertions": "select * from assertions where instance_id = ?",
}
FULL_REPEAT_UP_TO = 1_000
COMMITTED = "commit.json"  # the commit figures of a finished commit phase, in the run folder


def instance_id(i: int) -> str:
    return f"org{i % 211}__repo{i % 97}-{i}"


def commit_task(out: Path, i: int) -> None:
    from curation.store import commit_folder
    from harness.records import (
        AssertionRecord,
        Pipeline1Result,
        ProbeCounts,
        ProbeResult,
        RunRecord,
        TaskRow,
        VerdictRecord,
    )

    rnd = random.Random(i)
    iid, source, repo = instance_id(i), SOURCES[i % len(SOURCES)], f"org{i % 211}/repo{i % 97}"
    stamp = {"config_hash": "c0ffee", "task_hash": f"{i:016x}", "instance_id": iid}
    tests = [f"tests/test_mod{i % 7}.py::test_case_{k}" for k in range(20)]
    row = TaskRow(**stamp, source=source, repo=repo, base_commit="a" * 40, problem_statement="The parser drops a field. " * 32,
                  test_cmd=["pytest", "-rA"], log_parser="pytest", environment="image", test_paths=["tests/test_mod.py"],
                  claimed_fail_to_pass=tests[:2], claimed_pass_to_pass=tests[2:])  # fmt: skip
    trees = [(tree, attempt) for tree in ("buggy", "gold") for attempt in range(3)]
    runs = [RunRecord(**stamp, tree=tree, attempt=attempt, backend="bwrap", outcome="ok",
                      statuses={t: "FAILED" if tree == "buggy" and k < 2 else "PASSED" for k, t in enumerate(tests)},
                      exit_codes=[int(tree == "buggy")], apply_strategy="git_apply", spoof_evidence=[],
                      durations={"tests": round(rnd.uniform(1, 30), 2), "setup": 0.4},
                      log_path=f"logs/{iid}/{tree}-{attempt}.log", detail="") for tree, attempt in trees]  # fmt: skip
    assertions = [AssertionRecord(**stamp, tree=tree, attempt=attempt, test_file="tests/test_mod.py", test_id=tests[s],
                                  assert_file="tests/test_mod.py", line=10 + 3 * s, end_line=10 + 3 * s, qualname=f"test_case_{s}",
                                  kind="assert", source=f"assert parse(x{s}) == {s}", source_hash=f"{s:012x}", occurrence=0,
                                  passed=int(tree == "gold" or s >= 2), failed=int(tree == "buggy" and s < 2),
                                  status="failed" if tree == "buggy" and s < 2 else "passed")
                  for tree, attempt in trees for s in range(5)]  # fmt: skip
    keep = rnd.random() < 0.8
    result = Pipeline1Result(**stamp, source=source, repo=repo, decision="keep" if keep else "reject",
                             reason="" if keep else rnd.choice(REASONS), infrastructure=False, stage="",
                             fail_to_pass=tests[:2], pass_to_pass=tests[2:], flaky=[], gold_failing=[],
                             binding_assertions=["tests/test_mod.py:10"], label_disagreements=[],
                             expected_status={t: "PASSED" for t in tests}, runs=6, duration_s=round(rnd.uniform(5, 90), 2), detail="")  # fmt: skip
    p1 = [("task", TaskRow, [row]), ("runs", RunRecord, runs), ("assertions", AssertionRecord, assertions), ("result", Pipeline1Result, [result])]
    commit_folder(out / "p1" / iid, p1, {"task.json": "{}"})
    if not keep:
        return
    probes = [ProbeResult(**stamp, probe_id=f"{i:x}-{k}", kind="plausible_wrong" if k < 6 else "correct_alternative",
                          origin="model_free", operator=rnd.choice(["drop_hunk", "mutate_compare", "special_case", "rename_locals"]),
                          description="a probe", patch="--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n" + "+value = parse(x)\n" * 24,
                          reward=float(rnd.random() < 0.2), reason="", selected_reward=None, executions=3, differing=[],
                          log_path=f"logs/{iid}/probe-{k}.log") for k in range(8)]  # fmt: skip
    survived = sum(p.reward == 1 for p in probes[:6])
    counts = ProbeCounts(**stamp, generated=6, survived=survived, confirmed=survived, likely_equivalent=0, killed=6 - survived,
                         alternatives=2, alternatives_failed=sum(p.reward == 0 for p in probes[6:]))  # fmt: skip
    verdict = VerdictRecord(**stamp, verdict=rnd.choice(VERDICTS), q1_gold_fixes_issue=True, q2_tests_grade_issue="yes",
                            q3_issue_states_requirements=True, evidence=[], rewritten_issue="", rationale="the tests grade the issue",
                            judge_model="scripted", transcript_path=f"transcripts/{iid}.json", tokens=900, detail="")  # fmt: skip
    p2 = [("probes", ProbeResult, probes), ("counts", ProbeCounts, [counts]), ("verdict", VerdictRecord, [verdict])]
    commit_folder(out / "p2" / iid, p2)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def commit_range(out: Path, start: int, stop: int, step: int) -> float:
    """Commit tasks start, start + step, ... below stop; return the CPU seconds it took."""
    started = time.process_time()
    for i in range(start, stop, step):
        commit_task(out, i)
    return time.process_time() - started


def phase_commit(out: Path, n: int, workers: int) -> dict:
    from concurrent.futures import ProcessPoolExecutor

    from curation.store import commit_folder
    from harness.records import LoadError

    commit_folder(out / "load_errors", [("errors", LoadError, [])])
    started = time.perf_counter()
    with ProcessPoolExecutor(workers) as pool:
        cpu = sum(pool.map(commit_range, [out] * workers, range(workers), [n] * workers, [workers] * workers))
    wall = time.perf_counter() - started
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {"commit_ms_per_task": wall / n * 1e3, "commit_cpu_ms_per_task": cpu / n * 1e3, "workers": workers, "children_rss_mb": children}


def phase_compact(out: Path, n: int) -> dict:
    from curation.store import compact

    started, cpu = time.perf_counter(), time.process_time()
    done = compact(out)
    seconds = time.perf_counter() - started
    return {"compact_s": seconds, "compact_ms_per_task": seconds / n * 1e3, "compact_cpu_ms_per_task": (time.process_time() - cpu) / n * 1e3,
            "folders": done.folders, "journaled": done.journaled}  # fmt: skip


def phase_queries(out: Path, n: int, repeat: int) -> dict:
    import duckdb

    from curation.store import CATALOG, build_run_catalog

    started = time.perf_counter()
    build_run_catalog(out / CATALOG, [out])
    catalog_s = time.perf_counter() - started
    con = duckdb.connect(str(out / CATALOG), read_only=True)
    target = [instance_id(n // 2)]
    medians, rows = {}, {}
    for name, sql in QUERIES.items():
        times = []
        for _ in range(repeat):
            t = time.perf_counter()
            result = con.execute(sql, target if "?" in sql else []).fetchall()
            times.append(time.perf_counter() - t)
        medians[name], rows[name] = statistics.median(times), len(result)
    con.close()
    return {"catalog_s": catalog_s, "query_s": medians, "rows": rows, "repeat": repeat}


def run_phase(phase: str, out: Path, n: int, repeat: int, workers: int = 1) -> dict:
    """Each phase in its own process, so its peak RSS is its own."""
    cmd = [sys.executable, __file__, "--phase", phase, "--dir", str(out), "--sizes", str(n), "--repeat", str(repeat), "--workers", str(workers)]
    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def reused(out: Path, n: int) -> dict | None:
    """The figures of a kept run's commits, its compaction undone, so the run can be measured again. A
    run whose journals another version of the store wrote is committed again: compaction would read
    all of it from its files."""
    from curation.store import CATALOG, COMPACTED, JOURNAL
    from curation.store.journal import _MAGIC

    done = out / COMMITTED
    journals = sorted((out / JOURNAL).glob("*.journal")) if done.exists() else []
    if not done.exists() or json.loads(done.read_text())["n"] != n or any(p.open("rb").read(4) != _MAGIC for p in journals):
        if done.exists():
            print(f"{out}: committed again (another size, or journals of another format)", file=sys.stderr)
        shutil.rmtree(out, ignore_errors=True)
        return None
    shutil.rmtree(out / COMPACTED, ignore_errors=True)
    (out / CATALOG).unlink(missing_ok=True)
    return json.loads(done.read_text())


def report(n: int, figures: dict) -> None:
    after = figures["after"]
    before = figures.get("before") or {"catalog_s": float("nan"), "query_s": dict.fromkeys(QUERIES, float("nan")), "repeat": 0, "rss_mb": float("nan")}
    print(f"\n== {n:,} tasks ==")
    commit, compact = figures["commit"], figures["compact"]
    print(f"commit        {commit['commit_ms_per_task']:8.2f} ms/task wall with {commit['workers']} writer processes, "
          f"{commit['commit_cpu_ms_per_task']:.2f} ms CPU per task    (peak RSS per writer {commit['children_rss_mb']:.0f} MB)")
    print(f"compaction    {compact['compact_s']:8.2f} s = {compact['compact_ms_per_task']:.3f} ms/task wall, "
          f"{compact['compact_cpu_ms_per_task']:.3f} ms CPU/task, over {compact['folders']:,} folders "
          f"({compact['journaled']:,} from the journal)    (peak RSS {compact['rss_mb']:.0f} MB)")  # fmt: skip
    print(f"catalog build {before['catalog_s']:8.2f} s before compaction, {after['catalog_s']:.2f} s after")
    print(f"{'query':12s} {'before (ms)':>12s} {'after (ms)':>12s} {'rows':>8s}")
    for name in QUERIES:
        print(f"{name:12s} {before['query_s'][name] * 1e3:12.1f} {after['query_s'][name] * 1e3:12.1f} {after['rows'][name]:8d}")
    print(f"medians of {before['repeat']} (before) and {after['repeat']} (after) runs;"
          f" peak RSS {before['rss_mb']:.0f} MB (before) and {after['rss_mb']:.0f} MB (after)")  # fmt: skip
    slow = [name for name in QUERIES if after["query_s"][name] >= 0.2]
    print("targets: " + ", ".join([
        "queries < 200 ms after compaction: " + ("yes" if not slow else f"NO ({', '.join(slow)})"),
        f"compaction < 1 ms/task: {'yes' if compact['compact_ms_per_task'] < 1 else 'NO'} wall",
        f"{'yes' if compact['compact_cpu_ms_per_task'] < 1 else 'NO'} CPU",
    ]))  # fmt: skip
    sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--dir", type=Path, help="where the runs go (default: a temporary folder)")
    parser.add_argument("--keep", action="store_true", help="keep the runs (a kept run's commits are reused by the next call)")
    parser.add_argument("--workers", type=int, default=1, help="writer processes for the commits")
    parser.add_argument("--skip-before", type=int, default=None, metavar="N", help="no queries before compaction above N tasks")
    parser.add_argument("--phase", choices=["commit", "compact", "queries"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        (n,) = args.sizes
        fn = {"commit": lambda: phase_commit(args.dir, n, args.workers), "compact": lambda: phase_compact(args.dir, n),
              "queries": lambda: phase_queries(args.dir, n, args.repeat)}[args.phase]  # fmt: skip
        print(json.dumps(fn() | {"rss_mb": peak_rss_mb()}))
        return
    base = args.dir or Path(tempfile.mkdtemp(prefix="swedeck-catalog-scale-"))
    try:
        for n in args.sizes:
            out = base / f"run-{n}"
            figures = {"commit": reused(out, n)}
            if figures["commit"] is None:
                figures["commit"] = run_phase("commit", out, n, args.repeat, args.workers) | {"n": n}
                (out / COMMITTED).write_text(json.dumps(figures["commit"]))
            if args.skip_before is None or n <= args.skip_before:
                figures["before"] = run_phase("queries", out, n, args.repeat if n <= FULL_REPEAT_UP_TO else 1)
            figures["compact"] = run_phase("compact", out, n, args.repeat)
            figures["after"] = run_phase("queries", out, n, args.repeat)
            report(n, figures)
            if not args.keep:
                shutil.rmtree(out)
    finally:
        if not args.keep and args.dir is None:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
