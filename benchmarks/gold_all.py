"""Honest runs earn 1: the gold patch of every runnable task in the repository, graded by the production
grader (copied canaries planted, the capability check, the tamper audit zeroing: ``tamper="zero"``),
on each backend.

The tasks: the sample corpus (data/sample), the real fix commits (data/real), and the corpus fixtures
that have a tree here: the repository-cache rows (data/fixtures/*_repo_cache.jsonl, built from the
bundled repository in data/fixtures/repos). The other fixture rows name corpus images that are not on
this machine; they are counted, not graded (benchmarks/tamper_audit.py reads their gold patches).

Per backend it prints each grade as it finishes, then: graded, reward 1, each failure with its reason
and detail, the canary strength counts, and the audit's flags on gold (its false positives: target 0).
A gold earning 0 is a grader bug, except on the sample tasks built broken on purpose, which Pipeline 1
rejects before any grade (data/sample/labels.toml: a flaky test, an environment that cannot be
built): those are listed apart with their label, and do not fail the run.

    python benchmarks/gold_all.py [--backend bwrap] [--backend docker] [--tasks ID ...] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import tomllib
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from curation.sources import RepoCache, load_source  # noqa: E402
from data import FIXTURES, SAMPLE  # noqa: E402
from harness.grading import grader  # noqa: E402
from harness.config import SandboxConfig, Settings  # noqa: E402
from harness.records import Task  # noqa: E402
from harness.sandboxes.backends import get_backend
from harness.sandboxes.sandbox import EnvError  # noqa: E402

REAL = ROOT / "data" / "real"
# Pipeline 1's rejections of sample tasks whose gold cannot earn 1 by construction
BROKEN_ON_PURPOSE = {"only_flaky", "env_error"}


def broken_on_purpose() -> dict[str, str]:
    """Sample tasks built so that their gold run fails, with their label."""
    labels = tomllib.loads((SAMPLE / "labels.toml").read_text())["tasks"]
    return {task: label["label"] for task, label in labels.items() if label.get("p1_reason") in BROKEN_ON_PURPOSE}


def gold_tasks() -> tuple[list[Task], int]:
    """Every task with a tree here, each once, and how many fixture rows have none (corpus images)."""
    loaded = [*load_source(SAMPLE).tasks, *load_source(REAL).tasks]
    for rows in sorted(FIXTURES.glob("*_repo_cache.jsonl")):
        loaded += load_source(rows, RepoCache(FIXTURES / "repos")).tasks
    imaged = {
        task.instance_id
        for rows in sorted(p for p in FIXTURES.iterdir() if p.suffix in (".jsonl", ".parquet", ".arrow"))
        for task in load_source(rows).tasks
    } - {task.instance_id for task in loaded}
    tasks: dict[tuple, Task] = {}  # one row per way it runs (the two repo-cache rows are one fix, run differently)
    for task in loaded:
        tasks.setdefault((task.instance_id, task.answer.gold_patch, tuple(task.test_cmd), task.environment.workdir), task)
    return list(tasks.values()), len(imaged)


def grade_gold(task: Task, backend_name: str, settings: Settings) -> dict:
    """One production grade of the task's gold patch, as a plain row (an environment that cannot be
    built is a row too: its reason is env_error)."""
    backend = get_backend(SandboxConfig(backend=backend_name), settings)
    started = time.monotonic()
    try:
        result = grader.grade(task, task.answer.gold_patch, backend, tamper="zero")
    except EnvError as err:
        return {"task": task.instance_id, "reward": 0.0, "reason": "env_error", "detail": str(err)[-600:],
                "canaries": "-", "tamper": [], "seconds": round(time.monotonic() - started, 1)}
    return {
        "task": task.instance_id,
        "reward": result.reward,
        "reason": result.reason,
        "detail": "; ".join(filter(None, [result.detail[-600:], *result.spoof_evidence,
                                          *(f"{t}: expected {e}, got {g}" for t, (e, g) in list(result.differing.items())[:5])])),
        "canaries": result.canaries,
        "tamper": result.tamper,
        "seconds": round(time.monotonic() - started, 1),
    }


def summary(backend_name: str, rows: list[dict], imaged: int, broken: dict[str, str]) -> list[str]:
    failures = [r for r in rows if r["reward"] != 1.0 and r["task"] not in broken]
    expected = [r for r in rows if r["reward"] != 1.0 and r["task"] in broken]
    flagged = [r for r in rows if r["tamper"]]
    strengths = Counter(r["canaries"] for r in rows)
    lines = [
        f"== {backend_name}: gold graded {len(rows)}, reward 1 {len(rows) - len(failures) - len(expected)},"
        f" failures {len(failures)}, broken on purpose {len(expected)}"
        f" ({imaged} fixture rows without a tree here not graded)",
        "   canaries: " + ", ".join(f"{k} {strengths[k]}" for k in ("strong", "weak", "none", "-") if strengths[k]),
        f"   tamper audit flags on gold (false positives, target 0): {len(flagged)}",
    ]
    lines += [f"   FAIL {r['task']}: {r['reason']}: {r['detail']}" for r in failures]
    lines += [f"   broken on purpose ({broken[r['task']]}) {r['task']}: {r['reason']}" for r in expected]
    lines += [f"   FLAG {r['task']}: {finding}" for r in flagged for finding in r["tamper"]]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", action="append", choices=["bwrap", "docker"], help="default: both")
    parser.add_argument("--tasks", nargs="*", help="only these instance ids")
    parser.add_argument("--json", type=Path, help="write every row here")
    args = parser.parse_args(argv)
    settings = Settings.from_env()
    tasks, imaged = gold_tasks()
    if args.tasks:
        tasks = [t for t in tasks if t.instance_id in set(args.tasks)]
    results: dict[str, list[dict]] = {}
    for backend_name in args.backend or ["bwrap", "docker"]:
        rows = results.setdefault(backend_name, [])
        for task in tasks:
            row = grade_gold(task, backend_name, settings)
            rows.append(row)
            print(f"{backend_name} {row['task']}: reward {row['reward']:g} {row['reason']} canaries {row['canaries']}"
                  f" tamper {len(row['tamper'])} ({row['seconds']} s)", flush=True)
        if args.json:
            args.json.write_text(json.dumps(results, indent=1))
    broken = broken_on_purpose()
    report = [line for name, rows in results.items() for line in summary(name, rows, imaged, broken)]
    print("\n".join(report))
    return 1 if any((r["reward"] != 1.0 and r["task"] not in broken) or r["tamper"] for rows in results.values() for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
