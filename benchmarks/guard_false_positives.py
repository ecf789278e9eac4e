"""False positives and cost of the run-time guard (harness/grading/plugins/swedeck_guard.py), with the
twins planted (harness/grading/canaries).

The gold patch of every task with a tree here (benchmarks/gold_all.py's list: the sample corpus, the
real fix commits, the repository-cache fixture rows) graded by the production grader with the guard
on, and, in the same run and taking turns with it, with the guard off (``--guard-only``: on only).
A gold patch the guard ends as ``tamper_suspected`` is a false positive of the guard, one the twins end
as ``spoofing_suspected`` (a twin reported passed, or missing) one of the twins (target 0 both); each is
printed with its evidence. Sample tasks built broken on purpose (their gold cannot earn 1 with or
without the guard) are listed apart. It counts the grades whose tests ran among twins ("strong"). The
cost is the sum of the grades' seconds with the guard against without, per backend, and per grade.

``--part``: ``dev`` (default) grades the sample, the fixtures and data/real's development libraries
(data/real_libraries/*.toml, part = "dev"), naming each task; ``heldout`` grades the held-out
libraries' tasks and prints counts only, no task's name or evidence (the held-out part stays unread
while the grader is developed); ``all`` both, the held-out part counted as such.

    python benchmarks/guard_false_positives.py [--backend bwrap] [--backend docker] [--part dev] [--guard-only] [--tasks ID ...]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.gold_all import broken_on_purpose, gold_tasks  # noqa: E402
from data.benchmark import real_tasks  # noqa: E402
from harness.config import SandboxConfig, Settings  # noqa: E402
from harness.grading import grader  # noqa: E402
from harness.grading import guard as runtime_guard  # noqa: E402
from harness.records import Grade, Task  # noqa: E402
from harness.sandboxes.backends import get_backend  # noqa: E402
from harness.sandboxes.sandbox import Backend, EnvError  # noqa: E402


def timed(task: Task, backend: Backend, guarded: bool) -> tuple[str, float, str, Grade | None]:
    """(reason, seconds, detail, grade) of one grade of gold, the guard on or off; the gold pattern
    (one guarded gold run, cached) and the canary trial are taken before the clock starts."""
    try:
        expected = grader.gold_pattern(task, backend)
        grader.canary_strength(task, backend)
    except EnvError as err:
        return "env_error", 0.0, str(err)[-600:], None
    runtime_guard.ENABLED = guarded
    started = time.monotonic()
    try:
        result = grader.grade(task, task.answer.gold_patch, backend, expected=expected)
    except EnvError as err:
        return "env_error", time.monotonic() - started, str(err)[-300:], None
    finally:
        runtime_guard.ENABLED = True
    detail = "; ".join(filter(None, [result.detail[-600:], *result.spoof_evidence[:3]]))
    return result.reason, time.monotonic() - started, detail, result


def held_out() -> set[str]:
    return {t.name for t in real_tasks("heldout")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", action="append", choices=["bwrap", "docker"], help="default: both")
    parser.add_argument("--part", choices=["dev", "heldout", "all"], default="dev")
    parser.add_argument("--guard-only", action="store_true", help="grade with the guard on only (no cost figure)")
    parser.add_argument("--tasks", nargs="*", help="only these instance ids (of the development part)")
    args = parser.parse_args(argv)
    settings = Settings.from_env()
    tasks, _ = gold_tasks()
    hidden = held_out()
    if args.part == "dev" or args.tasks:
        tasks = [t for t in tasks if t.instance_id not in hidden]
    elif args.part == "heldout":
        tasks = [t for t in tasks if t.instance_id in hidden]
    if args.tasks:
        tasks = [t for t in tasks if t.instance_id in set(args.tasks)]
    broken = broken_on_purpose()
    bad = 0
    for name in args.backend or ["bwrap", "docker"]:
        backend = get_backend(SandboxConfig(backend=name), settings)
        on_s = off_s = 0.0
        positives, other, reasons, strengths = [], [], Counter(), Counter()
        for task in tasks:
            secret = task.instance_id in hidden
            off_reason, off = ("-", 0.0) if args.guard_only else timed(task, backend, False)[:2]
            on_reason, on, detail, result = timed(task, backend, True)
            on_s, off_s = on_s + on, off_s + off
            reasons[on_reason] += 1
            strengths[result.canaries if result is not None else "-"] += 1
            label = "a held-out task" if secret else task.instance_id
            if not secret:
                print(f"{name} {label}: guard on {on_reason} {on:.2f} s, off {off_reason} {off:.2f} s", flush=True)
            if on_reason in ("tamper_suspected", "spoofing_suspected") or "tamper_suspected" in detail:
                positives.append(f"   FALSE POSITIVE ({on_reason}) {label}" + ("" if secret else f": {detail}"))
            elif (on_reason != off_reason and not args.guard_only) or (on_reason != "ok" and task.instance_id not in broken):
                other.append(f"   {label}: guard on {on_reason}, off {off_reason}" + ("" if secret else f": {detail}"))
        guard_fp = sum("tamper_suspected" in p for p in positives)
        print(f"== {name}: {len(tasks)} gold grades ({args.part}), guard false positives {guard_fp}, twins' false positives"
              f" {len(positives) - guard_fp} (target 0 both); reasons {dict(reasons)}; canaries {dict(strengths)}")  # fmt: skip
        print("\n".join(positives + other))
        if not args.guard_only and off_s:
            print(f"   grades' seconds: guard on {on_s:.1f}, off {off_s:.1f}: {on_s / off_s:.3f}x,"
                  f" {(on_s - off_s) / len(tasks) * 1000:+.0f} ms per grade")  # fmt: skip
        bad += len(positives) + len(other)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
