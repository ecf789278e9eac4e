"""Deduplication at scale: synthetic tasks with planted duplicates, fingerprinted and clustered.

    python benchmarks/dedup_scale.py                 # 10k and 100k tasks
    python benchmarks/dedup_scale.py --tasks 20000 --duplicates 0.2

Each size runs in a fresh process (its peak RSS is its own). A synthetic fix is a Python change in
one of 2,000 repositories with an 80-word issue drawn from a 5,000-word vocabulary. A planted share of
the tasks are copies of another task's fix, one kind each in turn: the same fix under another corpus
(same PR), a backport (another base commit, the same patch and issue), a reformatted gold with a
renamed new local (same base, another issue text: only the syntax hash ties it), and an issue
reworded by three words (a docs line added to the gold: only the issue ties it). Tasks are made as
rows of SWE-bench's shape and read by its adapter, so the time includes fingerprinting from rows.
Recall and precision are over pairs of tasks: a pair is a duplicate when both are the same fix.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

REPOS = 2000
VOCABULARY = [f"w{i}" for i in range(5000)]
KINDS = ("same_pr", "backport", "reformatted", "reworded")


def gold(fix: int, rng: random.Random, *, reformatted: bool = False, docs: bool = False) -> str:
    name, const, attr = f"handle_{fix}", rng.randrange(10**6), f"field{fix % 97}"
    local = "value" if reformatted else "result"
    if reformatted:
        body = f'+    {local} = compute(\n+        item.{attr},\n+        "{const}",\n+    )\n+    return {local}\n'
        added = 5
    else:
        body = f"+    {local} = compute(item.{attr}, '{const}')\n+    return {local}\n"
        added = 2
    patch = (f"diff --git a/pkg/mod{fix % 50}.py b/pkg/mod{fix % 50}.py\n--- a/pkg/mod{fix % 50}.py\n+++ b/pkg/mod{fix % 50}.py\n"
             f"@@ -10,3 +10,{2 + added} @@ def {name}(item):\n     check(item)\n-    return None\n{body}     # end\n")  # fmt: skip
    if docs:
        patch += f"diff --git a/CHANGES.rst b/CHANGES.rst\n--- a/CHANGES.rst\n+++ b/CHANGES.rst\n@@ -1,1 +1,2 @@\n title\n+- fix {name}\n"
    return patch


def row(fix: int, task: int, rng: random.Random, kind: str = "") -> dict:
    """Row ``task`` of fix ``fix``; a planted copy of its kind draws nothing new but what its kind changes."""
    seeded = random.Random(fix)  # the fix's own content, the same in every copy
    repo = f"org{fix % REPOS}/repo{fix % REPOS}"
    issue = seeded.choices(VOCABULARY, k=80)
    base = f"{seeded.getrandbits(160):040x}"
    patch = gold(fix, random.Random(fix))
    number = fix
    if kind == "backport":
        base, number = f"{rng.getrandbits(160):040x}", 10**7 + task
    elif kind == "reformatted":
        patch, number, issue = gold(fix, random.Random(fix), reformatted=True), 10**7 + task, rng.choices(VOCABULARY, k=80)
    elif kind == "reworded":
        patch, number = gold(fix, random.Random(fix), docs=True), 10**7 + task
        for at in rng.sample(range(80), 3):
            issue[at] = rng.choice(VOCABULARY)
    owner, name = repo.split("/")
    return {
        "instance_id": f"{owner}__{name}-{number}", "repo": repo, "base_commit": base, "patch": patch,
        "test_patch": f"diff --git a/tests/test_{fix}.py b/tests/test_{fix}.py\n--- a/tests/test_{fix}.py\n+++ b/tests/test_{fix}.py\n@@ -1,1 +1,2 @@\n x\n+y\n",
        "problem_statement": " ".join(issue), "FAIL_TO_PASS": json.dumps([f"tests/test_{fix}.py::test_fix"]),
        "PASS_TO_PASS": "[]", "environment_setup_commit": base, "version": "1.0", "created_at": "2024-01-01T00:00:00Z",
    }  # fmt: skip


def run(n: int, share: float, seed: int) -> dict:
    from curation.dedup import DedupConfig, cluster
    from curation.sources import load_rows

    rng = random.Random(seed)
    copies = int(n * share)
    originals = n - copies
    truth: list[int] = list(range(originals))
    kinds = [""] * originals
    for k in range(copies):
        truth.append(rng.randrange(originals))
        kinds.append(KINDS[k % len(KINDS)])
    started = time.perf_counter()
    fingerprints = []
    for at in range(0, n, 5000):  # rows in batches: a corpus file is read whole, but its rows need not be held with the tasks
        rows = [row(truth[i], i, rng, kinds[i]) for i in range(at, min(n, at + 5000))]
        loaded = load_rows("swe_bench", rows, "synthetic", role="train")
        assert not loaded.errors, loaded.errors[:3]
        fingerprints += loaded.fingerprints
    loaded_s = time.perf_counter() - started
    # two corpora may ship one id (the same_pr copies): members are named by corpus and row
    fingerprints = [f.model_copy(update={"member": f"swe_bench:{f.instance_id}#{i}"}) for i, f in enumerate(fingerprints)]
    started = time.perf_counter()
    clustering = cluster(fingerprints, DedupConfig())
    cluster_s = time.perf_counter() - started
    predicted = {m.member: m.cluster_id for m in clustering.members}
    pred = [predicted[f.member] for f in fingerprints]

    def pairs(counts: Counter) -> int:
        return sum(c * (c - 1) // 2 for c in counts.values())

    both = pairs(Counter(zip(truth, pred)))
    true_pairs, pred_pairs = pairs(Counter(truth)), pairs(Counter(pred))
    return {
        "tasks": n, "planted_copies": copies, "fixes": originals, "clusters": len(set(pred)),
        "fingerprint_s": round(loaded_s, 1), "cluster_s": round(cluster_s, 1),
        "cpu_s": round(_cpu(), 1),  # the machine may be shared: CPU seconds say what the work costs
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "recall": round(both / true_pairs, 4) if true_pairs else 1.0,
        "precision": round(both / pred_pairs, 4) if pred_pairs else 1.0,
        "reported_pairs": sum(not p.merged for p in clustering.pairs),
    }  # fmt: skip


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--duplicates", type=float, default=0.2, help="share of tasks that are planted copies")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # a child process: one size
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run(args.tasks[0], args.duplicates, args.seed)))
        return
    print(f"{'tasks':>8} {'copies':>7} {'clusters':>8} {'fingerprint s':>13} {'cluster s':>9} {'CPU s':>7} {'peak RSS MB':>11} {'recall':>7} {'precision':>9}")
    for n in args.tasks:
        done = subprocess.run([sys.executable, __file__, "--one", "--tasks", str(n), "--duplicates", str(args.duplicates),
                               "--seed", str(args.seed)], capture_output=True, text=True, check=True)  # fmt: skip
        r = json.loads(done.stdout.splitlines()[-1])
        print(f"{r['tasks']:>8} {r['planted_copies']:>7} {r['clusters']:>8} {r['fingerprint_s']:>13} {r['cluster_s']:>9} "
              f"{r['cpu_s']:>7} {r['peak_rss_mb']:>11} {r['recall']:>7} {r['precision']:>9}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
