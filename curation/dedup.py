"""One deck row per upstream fix, and no evaluation task in training.

Rules, over the fingerprints of every task loaded (``curation.fingerprints``):

- **Clusters** (merged): two tasks are the same fix when they share the repository and upstream PR
  (``same_pr``), the repository, base commit and normalised gold (``same_patch``) or its syntax hash
  (``syntax_equal``), or the repository and a near-identical issue (``near_issue``: estimated Jaccard
  similarity of the issues' word shingles at least ``merge_similarity``). Clusters are the connected
  components of these pairs.
- **Near-duplicates** (reported, never merged): the same repository with issues between
  ``report_similarity`` and ``merge_similarity`` (``near_issue_below``), near-identical issues on
  different repositories (``near_issue_other_repo``), the same gold on another base commit of the same
  repository whose issues differ (``same_patch_other_base``).
- **Contamination**: a training task matches an eval task by the same PR, the same gold (any base),
  the same syntax hash or a near-identical issue, all on the same repository (``exact``), or only by
  being of a repository the eval set holds (``same_repo``). A cluster with a contaminated member is
  contaminated as a whole: it is one fix.
- **The deck** keeps one row per cluster: among the members Pipeline 1 kept, the best Pipeline 2
  verdict (``VERDICT_ORDER``), then the corpus order the config gives, then the member name; the row's
  lineage names every member. ``policy`` drops contaminated clusters: ``drop_exact`` those with an
  exact match, ``drop_repo`` also those only of an eval repository, ``flag`` none (rows list them).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from curation.fingerprints import NUM_PERM, decode_minhash, lean_minhash, qualify
from harness.records import ClusterMember, Contamination, DeckDrop, Duplicate, Fingerprint, LoadError, content_hash

DEDUP_DIR = "dedup"
VERDICT_ORDER = ("accept", "issue_rewritten", "", "too_loose", "over_restrictive", "unjudgeable", "gold_wrong")
EXACT_RULES = ("same_pr", "same_patch", "syntax_equal", "near_issue")


class DedupConfig(BaseModel):
    """``[dedup]`` in the run config; it never changes a Pipeline 1 or 2 result, so it stays out of the
    config hash."""

    model_config = ConfigDict(extra="forbid")

    eval: list[str] = []  # evaluation sets: hub ids, Parquet or JSONL files, task folders
    policy: Literal["drop_exact", "drop_repo", "flag"] = "drop_exact"
    corpus_order: list[str] = []  # preferred corpora first when a cluster's members tie on outcome
    merge_similarity: float = Field(0.7, ge=0, le=1)  # near_issue merges at or above this estimated Jaccard similarity
    report_similarity: float = Field(0.5, ge=0, le=1)  # ... and is reported, not merged, from this one
    eval_cutoffs: dict[str, str] = {}  # eval source -> ISO date; default: its latest created_at


@dataclass
class Clustering:
    members: list[ClusterMember]
    pairs: list[Duplicate]


# ------------------------------------------------------------------------------------------ clusters


class _Components:
    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def union(self, i: int, j: int) -> None:
        ri, rj = self.find(i), self.find(j)
        if ri != rj:
            self.parent[max(ri, rj)] = min(ri, rj)


Key = Callable[[Fingerprint], Hashable | None]
EXACT_KEYS: dict[str, Key] = {
    "same_pr": lambda f: (f.repo, f.pr) if f.pr is not None else None,
    "same_patch": lambda f: (f.repo, f.base_commit, f.patch_hash) if f.patch_hash and f.base_commit else None,
    "syntax_equal": lambda f: (f.repo, f.base_commit, f.syntax_hash) if f.syntax_hash and f.base_commit else None,
}


def _groups(fps: Sequence[Fingerprint], key: Key) -> list[list[int]]:
    found: dict[Hashable, list[int]] = defaultdict(list)
    for i, f in enumerate(fps):
        k = key(f)
        if k is not None:
            found[k].append(i)
    return [g for g in found.values() if len(g) > 1]


def near_pairs(fps: Sequence[Fingerprint], threshold: float, queries: Sequence[Fingerprint] | None = None) -> Iterable[tuple[int, int, float]]:
    """``(i, j, similarity)`` for issue pairs at or above ``threshold``, found with datasketch's
    MinHashLSH: within ``fps`` (i < j), or from each of ``queries`` (i) to ``fps`` (j)."""
    from datasketch import MinHashLSH

    lsh = MinHashLSH(threshold=threshold, num_perm=NUM_PERM)
    matrix = np.zeros((len(fps), NUM_PERM), dtype=np.uint32)
    for j, f in enumerate(fps):
        if f.issue_minhash:
            matrix[j] = decode_minhash(f.issue_minhash)
            lsh.insert(j, lean_minhash(f.issue_minhash))
    for i, f in enumerate(fps if queries is None else queries):
        if not f.issue_minhash:
            continue
        candidates = [j for j in lsh.query(lean_minhash(f.issue_minhash)) if queries is not None or j > i]
        if not candidates:
            continue
        sims = (matrix[candidates] == decode_minhash(f.issue_minhash)).mean(axis=1)
        for j, sim in zip(candidates, sims.tolist()):
            if sim >= threshold:
                yield i, j, round(sim, 4)


def cluster(fps: Sequence[Fingerprint], cfg: DedupConfig) -> Clustering:
    """Clusters of the same fix, and the near-duplicates reported beside them (see the module)."""
    comp = _Components(len(fps))
    edges: list[tuple[int, int, str, float]] = []
    for rule, key in EXACT_KEYS.items():
        for group in _groups(fps, key):
            for j in group[1:]:
                comp.union(group[0], j)
                edges.append((group[0], j, rule, 1.0))
    reported: list[tuple[int, int, str, float]] = []
    for i, j, sim in near_pairs(fps, cfg.report_similarity):
        same_repo = fps[i].repo == fps[j].repo
        if same_repo and sim >= cfg.merge_similarity:
            comp.union(i, j)
            edges.append((i, j, "near_issue", sim))
        elif same_repo:
            reported.append((i, j, "near_issue_below", sim))
        elif sim >= cfg.merge_similarity:
            reported.append((i, j, "near_issue_other_repo", sim))
    for group in _groups(fps, lambda f: (f.repo, f.patch_hash) if f.patch_hash else None):
        for j in group[1:]:
            reported.append((group[0], j, "same_patch_other_base", 1.0))
    roots: dict[int, list[int]] = defaultdict(list)
    for i in range(len(fps)):
        roots[comp.find(i)].append(i)
    ids = {root: "c-" + content_hash(sorted(fps[i].member for i in group)) for root, group in roots.items()}
    members = [
        ClusterMember(cluster_id=ids[comp.find(i)], member=f.member, instance_id=f.instance_id, source=f.source,
                      version=f.version, location=f.location, size=len(roots[comp.find(i)]))
        for i, f in enumerate(fps)
    ]  # fmt: skip
    pairs = [Duplicate(cluster_id=ids[comp.find(i)], a=fps[i].member, b=fps[j].member, rule=rule, similarity=sim, merged=True)
             for i, j, rule, sim in edges]  # fmt: skip
    pairs += [Duplicate(cluster_id="", a=fps[i].member, b=fps[j].member, rule=rule, similarity=sim, merged=False)
              for i, j, rule, sim in reported if comp.find(i) != comp.find(j)]  # fmt: skip
    return Clustering(members, pairs)


# ------------------------------------------------------------------------------------------ contamination


def contamination(train: Sequence[Fingerprint], evals: Mapping[str, Sequence[Fingerprint]], cfg: DedupConfig) -> list[Contamination]:
    """Every match of a training task with an eval task, by rule (see the module); ``same_repo`` only
    for tasks with no exact match in that eval set."""
    out: list[Contamination] = []
    for eval_source, eval_fps in evals.items():
        cutoff = cfg.eval_cutoffs.get(eval_source) or max((f.created_at for f in eval_fps), default="")
        found: dict[tuple[int, str, str], float] = {}
        index: dict[tuple[str, Hashable], list[int]] = defaultdict(list)
        keys: dict[str, Key] = {
            "same_pr": EXACT_KEYS["same_pr"],
            "same_patch": lambda f: (f.repo, f.patch_hash) if f.patch_hash else None,  # any base: a backport is the fix
            "syntax_equal": lambda f: (f.repo, f.syntax_hash) if f.syntax_hash else None,
        }
        for j, e in enumerate(eval_fps):
            for rule, key in keys.items():
                if (k := key(e)) is not None:
                    index[(rule, k)].append(j)
        for i, t in enumerate(train):
            for rule, key in keys.items():
                if (k := key(t)) is not None:
                    for j in index.get((rule, k), []):
                        found.setdefault((i, eval_fps[j].member, rule), 1.0)
        for i, j, sim in near_pairs(eval_fps, cfg.merge_similarity, queries=train):
            if train[i].repo == eval_fps[j].repo:
                found.setdefault((i, eval_fps[j].member, "near_issue"), sim)
        eval_repos = {e.repo for e in eval_fps}
        exact = {i for i, _, _ in found}
        for i, t in enumerate(train):
            if i not in exact and t.repo in eval_repos:
                found[(i, "", "same_repo")] = 1.0
        for (i, eval_member, rule), sim in sorted(found.items()):
            t = train[i]
            predates = (t.created_at < cutoff) if t.created_at and cutoff else None
            out.append(Contamination(member=t.member, instance_id=t.instance_id, source=t.source, eval_source=eval_source,
                                     eval_member=eval_member, rule=rule, similarity=sim, exact=rule in EXACT_RULES,
                                     task_created=t.created_at, eval_cutoff=cutoff, predates_cutoff=predates))  # fmt: skip
    return out


# ------------------------------------------------------------------------------------------ the deck


@dataclass
class Selection:
    """What a deck keeps of Pipeline 1's kept tasks: the kept members, each with its cluster, lineage
    and contamination flags, and what it dropped."""

    kept: list[str]  # members
    cluster: dict[str, str]
    lineage: dict[str, list[str]]
    flags: dict[str, list[str]]
    dropped: list[DeckDrop]


def select(candidates: Sequence[str], verdicts: Mapping[str, str], members: Sequence[ClusterMember],
           records: Sequence[Contamination], cfg: DedupConfig) -> Selection:  # fmt: skip
    """One member per cluster among ``candidates`` (members Pipeline 1 kept, in run order), by the
    module's rule, and the contamination policy applied per cluster."""
    by_member = {m.member: m for m in members}
    of_cluster: dict[str, list[ClusterMember]] = defaultdict(list)
    for m in members:
        of_cluster[m.cluster_id].append(m)
    flags: dict[str, list[str]] = defaultdict(list)
    dirty: dict[str, list[Contamination]] = defaultdict(list)
    for r in records:
        cluster_id = by_member[r.member].cluster_id if r.member in by_member else r.member
        dirty[cluster_id].append(r)

    def rank(member: str) -> tuple[int, int, str]:
        source = by_member[member].source if member in by_member else ""
        order = cfg.corpus_order.index(source) if source in cfg.corpus_order else len(cfg.corpus_order)
        verdict = verdicts.get(member, "")
        return (VERDICT_ORDER.index(verdict) if verdict in VERDICT_ORDER else len(VERDICT_ORDER), order, member)

    chosen: dict[str, str] = {}
    for member in candidates:
        cluster_id = by_member[member].cluster_id if member in by_member else member
        if cluster_id not in chosen or rank(member) < rank(chosen[cluster_id]):
            chosen[cluster_id] = member
    kept, dropped = [], []
    for member in candidates:
        cluster_id = by_member[member].cluster_id if member in by_member else member
        matches = dirty.get(cluster_id, [])
        drop = [r for r in matches if cfg.policy == "drop_repo" or (cfg.policy == "drop_exact" and r.exact)]
        if drop:
            detail = "; ".join(sorted({f"{r.rule}: {r.eval_member or r.eval_source}" for r in drop}))
            dropped.append(DeckDrop(member=member, instance_id=_iid(member), reason="contaminated", detail=detail, cluster_id=cluster_id))
        elif chosen[cluster_id] != member:
            dropped.append(DeckDrop(member=member, instance_id=_iid(member), reason="duplicate",
                                    detail=f"same fix as {chosen[cluster_id]}", cluster_id=cluster_id))  # fmt: skip
        else:
            kept.append(member)
            flags[member] = sorted({f"{r.rule}:{r.eval_member or r.eval_source}" for r in matches})
    lineage = {m: sorted(f"{x.source}/{x.version}/{x.instance_id}" for x in of_cluster.get(by_member[m].cluster_id, []))
               if m in by_member else [] for m in kept}  # fmt: skip
    clusters = {m: by_member[m].cluster_id if m in by_member else "" for m in kept}
    return Selection(kept, clusters, lineage, dict(flags), dropped)


def _iid(member: str) -> str:
    return member.split(":", 1)[1]


# ------------------------------------------------------------------------------------------ a run's files

TABLES = {"fingerprints": Fingerprint, "clusters": ClusterMember, "duplicates": Duplicate, "contamination": Contamination}


def analyse(fps: Sequence[Fingerprint], cfg: DedupConfig) -> tuple[Clustering, list[Contamination]]:
    """Clusters of the training fingerprints and their contamination by the eval ones (``role``)."""
    bare = qualify(f.repo for f in fps)
    fps = [f.model_copy(update={"repo": bare[f.repo]}) if f.repo in bare else f for f in fps]
    train = [f for f in fps if f.role == "train"]
    evals: dict[str, list[Fingerprint]] = defaultdict(list)
    for f in fps:
        if f.role == "eval":
            evals[f.location.split("#")[0]].append(f)
    return cluster(train, cfg), contamination(train, evals, cfg)


def write(out: Path, fps: Sequence[Fingerprint], cfg: DedupConfig) -> tuple[Clustering, list[Contamination]]:
    """Analyse and store in ``out/dedup/`` (one folder, replaced whole: the catalog's views read it)."""
    from curation.store import commit_folder

    clustering, records = analyse(fps, cfg)
    commit_folder(out / DEDUP_DIR, [("fingerprints", Fingerprint, fps), ("clusters", ClusterMember, clustering.members),
                                    ("duplicates", Duplicate, clustering.pairs), ("contamination", Contamination, records)])  # fmt: skip
    return clustering, records


def with_evals(fps: Sequence[Fingerprint], cfg: DedupConfig, repo_cache: Path | None = None) -> tuple[list[Fingerprint], list[LoadError]]:
    """The training fingerprints and those of ``cfg.eval`` (loaded by the corpus adapters), forks
    named as one where a repository cache holds them (their root commits)."""
    from curation.fingerprints import fork_aliases, root_commits
    from curation.sources import load_sources

    evals = load_sources(cfg.eval, role="eval") if cfg.eval else None
    every = [*fps, *(evals.fingerprints if evals else [])]
    aliases = fork_aliases(root_commits(repo_cache)) if repo_cache else {}
    every = [f.model_copy(update={"repo": aliases[f.repo]}) if f.repo in aliases else f for f in every]
    return every, list(evals.errors) if evals else []


def read(run: Path) -> tuple[list[ClusterMember], list[Contamination]] | None:
    """A run's clusters and contamination records; None for a run made before fingerprints."""
    from curation.store import read_records

    folder = run / DEDUP_DIR
    if not (folder / "clusters.parquet").exists():
        return None
    return read_records(folder / "clusters.parquet", ClusterMember), read_records(folder / "contamination.parquet", Contamination)  # type: ignore[return-value]


def read_fingerprints(run: Path) -> list[Fingerprint]:
    from curation.store import read_records

    path = run / DEDUP_DIR / "fingerprints.parquet"
    return read_records(path, Fingerprint) if path.exists() else []  # type: ignore[return-value]


def run_fingerprints(run: Path) -> list[Fingerprint]:
    """A run's training fingerprints: as stored at load time, or, for a run made before them, from the
    tasks Pipeline 1 stored (their rows are gone: PR numbers and dates come from the kept raw columns)."""
    from curation.fingerprints import fingerprint, issue_minhashes
    from curation.pipeline1 import TASK_FILE
    from harness.records import Task

    stored = [f for f in read_fingerprints(run) if f.role == "train"]
    if stored:
        return stored
    tasks = [Task.model_validate_json(p.read_text()) for p in sorted((run / "p1").glob(f"*/{TASK_FILE}"))]
    hashes = issue_minhashes(t.problem_statement for t in tasks)
    return [fingerprint(t, location=f"{run}#{t.instance_id}", minhash=h) for t, h in zip(tasks, hashes)]


def dedup_runs(runs: Sequence[Path], out: Path, cfg: DedupConfig) -> tuple[Clustering, list[Contamination], list[LoadError]]:
    """``swedeck dedup``: clusters and contamination over existing runs (one catalog of them), without
    re-running anything, stored in ``out/dedup/`` with a catalog of ``out``."""
    from curation.store import CATALOG, build_run_catalog

    seen: set[str] = set()
    train = []
    for run in runs:
        for f in run_fingerprints(run):
            if f.member not in seen:  # one task in several runs is one member
                seen.add(f.member)
                train.append(f)
    every, errors = with_evals(train, cfg)
    clustering, records = write(out, every, cfg)
    build_run_catalog(out / CATALOG, [out])
    return clustering, records, errors


def overlap(members: Sequence[ClusterMember], records: Sequence[Contamination]) -> dict[tuple[str, str], int]:
    """Fixes shared per pair of sources: two corpora by their clusters (a corpus with itself: fixes it
    ships more than once), a corpus and an eval set by exact contamination. The catalog's ``overlap``
    view says the same in SQL."""
    per_source: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for m in members:
        per_source[m.cluster_id][m.source] += 1
    counts: dict[tuple[str, str], set[str]] = defaultdict(set)
    for cluster_id, found in per_source.items():
        names = sorted(found)
        for i, a in enumerate(names):
            for b in names[i:]:
                if a != b or found[a] > 1:
                    counts[(a, b)].add(cluster_id)
    cluster_of = {m.member: m.cluster_id for m in members}
    for r in records:
        if r.exact:
            counts[(r.source, r.eval_source)].add(cluster_of.get(r.member, r.member))
    return {k: len(v) for k, v in sorted(counts.items())}


def summary(clustering: Clustering, records: Sequence[Contamination]) -> dict:
    clusters = {m.cluster_id for m in clustering.members}
    return {
        "tasks": len(clustering.members),
        "fixes": len(clusters),
        "merged_pairs": dict(sorted(_count(p.rule for p in clustering.pairs if p.merged).items())),
        "reported_pairs": dict(sorted(_count(p.rule for p in clustering.pairs if not p.merged).items())),
        "contaminated_tasks": len({r.member for r in records if r.exact}),
        "eval_repo_tasks": len({r.member for r in records}),
        "contamination": dict(sorted(_count(r.rule for r in records).items())),
    }


def _count(items: Iterable[str]) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for item in items:
        out[item] += 1
    return dict(out)
