"""False positives and cost of the run-time guard (harness/grading/plugins/swedeck_guard.py).

The gold patch of every task with a tree here (benchmarks/gold_all.py's list: the sample corpus, the
real fix commits, the repository-cache fixture rows) graded by the production grader with the guard
on, and, in the same run and taking turns with it, with the guard off. A gold patch the guard ends as
``tamper_suspected`` is a false positive (target 0); each is printed with the guard's evidence. Sample
tasks built broken on purpose (their gold cannot earn 1 with or without the guard) are listed apart.
The cost is the sum of the grades' seconds with the guard against without, per backend, and per grade.

    python benchmarks/guard_false_positives.py [--backend bwrap] [--backend docker] [--tasks ID ...]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.gold_all import broken_on_purpose, gold_tasks  # noqa: E402
from harness.config import SandboxConfig, Settings  # noqa: E402
from harness.grading import grader  # noqa: E402
from harness.grading import guard as runtime_guard  # noqa: E402
from harness.records import Task  # noqa: E402
from harness.sandboxes.backends import get_backend  # noqa: E402
from harness.sandboxes.sandbox import Backend, EnvError  # noqa: E402


def timed(task: Task, backend: Backend, guarded: bool) -> tuple[str, float, str]:
    """(reason, seconds, detail) of one grade of gold, the guard on or off; the gold pattern (one
    guarded gold run, cached) is taken before the clock starts."""
    try:
        expected = grader.gold_pattern(task, backend)
    except EnvError as err:
        return "env_error", 0.0, str(err)[-600:]
    runtime_guard.ENABLED = guarded
    started = time.monotonic()
    try:
        result = grader.grade(task, task.answer.gold_patch, backend, expected=expected)
    except EnvError as err:
        return "env_error", time.monotonic() - started, str(err)[-300:]
    finally:
        runtime_guard.ENABLED = True
    return result.reason, time.monotonic() - started, result.detail[-600:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", action="append", choices=["bwrap", "docker"], help="default: both")
    parser.add_argument("--tasks", nargs="*", help="only these instance ids")
    args = parser.parse_args(argv)
    settings = Settings.from_env()
    tasks, _ = gold_tasks()
    if args.tasks:
        tasks = [t for t in tasks if t.instance_id in set(args.tasks)]
    broken = broken_on_purpose()
    bad = 0
    for name in args.backend or ["bwrap", "docker"]:
        backend = get_backend(SandboxConfig(backend=name), settings)
        on_s = off_s = 0.0
        positives, other = [], []
        for task in tasks:
            off_reason, off, _ = timed(task, backend, False)
            on_reason, on, detail = timed(task, backend, True)
            on_s, off_s = on_s + on, off_s + off
            print(f"{name} {task.instance_id}: guard on {on_reason} {on:.2f} s, off {off_reason} {off:.2f} s", flush=True)
            if on_reason == "tamper_suspected" or "tamper_suspected" in detail:
                positives.append(f"   FALSE POSITIVE {task.instance_id}: {detail}")
            elif on_reason != off_reason or (on_reason != "ok" and task.instance_id not in broken):
                other.append(f"   {task.instance_id}: guard on {on_reason}, off {off_reason}: {detail}")
        print(f"== {name}: {len(tasks)} gold grades, guard false positives {len(positives)} (target 0)")
        print("\n".join(positives + other))
        print(f"   grades' seconds: guard on {on_s:.1f}, off {off_s:.1f}: {on_s / off_s:.3f}x,"
              f" {(on_s - off_s) / len(tasks) * 1000:+.0f} ms per grade")  # fmt: skip
        bad += len(positives) + len(other)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
