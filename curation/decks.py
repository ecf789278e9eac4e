"""Decks: the tasks a training run draws from, one row per task and arm, in Parquet with the tasks beside.

A deck is a folder, self-contained (copy it anywhere): ``deck.parquet`` (``DeckRow``s: SWE-bench's
columns and swedeck's), ``tasks/<instance_id>.json`` (named by ``harness.names``; the full tasks the
rows point at), ``tasks/strengthened/<instance_id>.json`` (the strengthened arm's version of a task whose
tests were strengthened), ``repos/<instance_id>.bundle`` (each repository at its base commit, where the
corpus ships no image), ``probes.parquet`` (the probes the verdicts cite as evidence) and
``catalog.duckdb`` with ``deck``, ``dropped`` and ``probes`` tables. Rows of different arms share
instance ids, so paired arms train on the same tasks and differ only in what the curation changed.

A deck holds one task per upstream fix: where the run has fingerprints (``curation.dedup``), the kept
tasks are chosen one per cluster and the contamination policy applied first (``dedupe``); what that
left out is ``dropped.parquet`` (a ``dropped`` view), with the reason for each.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from curation import dedup
from curation.deck_dataset import export_dataset
from curation.deck_files import DECK_FILE, DROPPED_FILE, REPOS_DIR, task_file
from curation.store import build_catalog, commit_folder
from harness.grading.diffs import file_diff
from harness.names import file_name
from harness.records import (
    DeckDrop,
    DeckRow,
    HiddenTests,
    Pipeline1Result,
    ProbeResult,
    RepoSource,
    Status,
    Strengthening,
    Task,
    VerdictRecord,
    content_hash,
)

KEEP = ("accept", "issue_rewritten")  # verdicts whose task goes into the curated arm


def deck_rows(
    kept: Iterable[tuple[Task, Pipeline1Result]],
    verdicts: Mapping[str, VerdictRecord],
    *,
    deck_id: str,
    source_run: str,
    strengthened: Mapping[str, Strengthening] | None = None,
    selection: dedup.Selection | None = None,
    scripted_verdicts: bool = False,
) -> list[DeckRow]:
    """Rows of the three arms. ``strengthened`` holds the run's strengthening records by instance id; the
    strengthened arm has every raw task, with its strengthened tests where a record added some.
    ``selection`` (``dedupe``) gives each row its cluster, lineage and contamination flags. A verdict of
    the scripted test double admits a task to the curated arm only with ``scripted_verdicts``."""
    rows = []
    for task, p1 in kept:
        stamp = {"config_hash": p1.config_hash, "task_hash": task.task_hash(), "instance_id": task.instance_id}
        common = {**stamp, "deck_id": deck_id, "source_run": source_run, **_lineage(task, selection)}
        verdict = verdicts.get(task.instance_id)
        judged = {"verdict": verdict.verdict, "evidence": verdict.evidence, "judge": verdict.judge} if verdict else {"verdict": ""}
        original = {**common, **judged, **swe_columns(verified_task(task, p1), p1)}
        rows.append(DeckRow(**original, arm="raw"))
        if verdict is not None and verdict.verdict in KEEP and (verdict.judge != "scripted" or scripted_verdicts):
            text = verdict.rewritten_issue if verdict.verdict == "issue_rewritten" else task.problem_statement
            rows.append(DeckRow(**original | {"problem_statement": text}, arm="curated"))
        record = (strengthened or {}).get(task.instance_id)
        lineage = {"strengthening": record_id(source_run, record), "strengthening_status": record.status} if record else {}
        tests = "strengthened" if record and record.tests_patch else "original"
        columns = swe_columns(strengthened_task(verified_task(task, p1), record), p1) if tests == "strengthened" else {}
        rows.append(DeckRow(**original | columns, arm="strengthened", tests=tests, **lineage))
    return rows


def swe_columns(task: Task, p1: Pipeline1Result) -> dict:
    """A task version's SWE-bench columns: its hidden tests as one diff (files it writes as diffs that
    create them), and FAIL_TO_PASS / PASS_TO_PASS as that version grades them: the corpus's lists, else
    gold's recorded pattern, else Pipeline 1's measurement."""
    answer = task.answer
    files = "".join(file_diff(path, None, text) for path, text in sorted(answer.hidden_tests.files.items()))
    fail_to_pass = answer.fail_to_pass or p1.fail_to_pass
    pattern = [t for t, s in (answer.expected_status or {}).items() if s == Status.PASSED and t not in fail_to_pass]
    return {
        "repo": task.repo, "base_commit": task.base_commit, "patch": answer.gold_patch, "test_patch": answer.hidden_tests.patch + files,
        "problem_statement": task.problem_statement, "FAIL_TO_PASS": fail_to_pass,
        "PASS_TO_PASS": answer.pass_to_pass or sorted(pattern) or p1.pass_to_pass, "image_name": task.environment.image or "",
        "version": answer.leaky_columns.get("version", ""), "workdir": task.environment.workdir, "test_cmd": task.test_cmd,
        "log_parser": task.log_parser,
    }  # fmt: skip


def _lineage(task: Task, selection: dedup.Selection | None) -> dict:
    member = f"{task.source}:{task.instance_id}"
    if selection is None or member not in selection.cluster:
        return {}
    return {"cluster_id": selection.cluster[member], "lineage": selection.lineage[member], "contamination": selection.flags.get(member, [])}


def dedupe(run: Path, kept: list[tuple[Task, Pipeline1Result]], verdicts: Mapping[str, VerdictRecord],
           cfg: dedup.DedupConfig) -> tuple[list[tuple[Task, Pipeline1Result]], dedup.Selection | None]:  # fmt: skip
    """Pipeline 1's kept tasks, one per cluster of the run's fingerprints, contaminated clusters
    dropped by ``cfg.policy``; a run without fingerprints keeps them all (and no selection)."""
    found = dedup.read(run)
    if found is None:
        return kept, None
    members, records = found
    by_member = {f"{t.source}:{t.instance_id}": (t, p1) for t, p1 in kept}
    judged = {m: verdicts[t.instance_id].verdict for m, (t, _) in by_member.items() if t.instance_id in verdicts}
    selection = dedup.select(list(by_member), judged, members, records, cfg)
    return [by_member[m] for m in selection.kept], selection


def record_id(run: str, record: Strengthening) -> str:
    return f"{run}/strengthen/{file_name(record.instance_id)}#{content_hash(record)}"


def verified_task(task: Task, p1: Pipeline1Result) -> Task:
    """The task as the deck grades it: where its corpus lists no FAIL_TO_PASS, Pipeline 1's. Every
    grade then copies one of them as a must-fail canary, which code forcing only the tests without a
    near-twin (a canary is a copy) leaves failing; the corpus's own list, where it has one, stands."""
    if task.answer.fail_to_pass or not p1.fail_to_pass:
        return task
    return task.model_copy(update={"answer": task.answer.model_copy(update={"fail_to_pass": p1.fail_to_pass})})


def strengthened_task(task: Task, record: Strengthening | None) -> Task:
    """The task as the strengthened arm grades it: its strengthened hidden tests and gold's pattern on
    them. A task without added tests (not repaired, or never strengthened) keeps its own; the task
    itself is never changed."""
    if record is None or not record.tests_patch:
        return task
    answer = task.answer.model_copy(update={
        "hidden_tests": HiddenTests(patch=record.tests_patch, files=record.hidden_files),
        "expected_status": {k: Status(v) for k, v in record.expected_status.items()},
        "fail_to_pass": record.fail_to_pass,
    })  # fmt: skip
    return task.model_copy(update={"answer": answer})


def write_deck(out: Path, rows: list[DeckRow], tasks: Iterable[Task], strengthened: Mapping[str, Strengthening] | None = None,
               dropped: Iterable[DeckDrop] = (), probes: Iterable[ProbeResult] = ()) -> None:  # fmt: skip
    """The deck folder, self-contained: each task's repository as a git bundle in ``repos/`` (its
    sealed buggy tree: the base commit and its ancestors only; a task whose corpus ships an image keeps
    it), task files naming it relative to the deck, the probes its verdicts cite, and a catalog of tables."""
    import tempfile

    with tempfile.TemporaryDirectory(dir=out.parent if out.parent.is_dir() else None) as scratch:
        by_id, copies = {}, {}
        for task in tasks:  # git writes the bundle from inside the tree: a relative path would land there
            by_id[task.instance_id], bundle = _bundled(task, Path(scratch).resolve())
            if bundle is not None:
                copies[by_id[task.instance_id].repo_source.path] = bundle
        rows = [r.model_copy(update={"base_commit": by_id[r.instance_id].base_commit}) for r in rows]

        def version(row: DeckRow) -> Task:
            task = by_id[row.instance_id]
            return strengthened_task(task, (strengthened or {}).get(row.instance_id)) if row.tests == "strengthened" else task

        files = {task_file(r): version(r).model_dump_json() for r in rows}
        cited = {e for r in rows for e in r.evidence}
        tables = [("deck", DeckRow, rows), ("dropped", DeckDrop, list(dropped)),
                  ("probes", ProbeResult, [p for p in probes if p.instance_id in by_id and p.probe_id in cited])]  # fmt: skip
        commit_folder(out, tables, files, copies)
    build_catalog(out / "catalog.duckdb", {name: (str(out / f"{name}.parquet"), model) for name, model, _ in tables})
    export_dataset(out)


def _bundled(task: Task, scratch: Path) -> tuple[Task, Path | None]:
    """The task with its repository in the deck: a bundle of its sealed tree (written into ``scratch``)
    at ``repos/<name>.bundle``, checked out at the base commit, which the task then names."""
    if task.repo_source.kind == "image":
        return task, None
    import subprocess

    from harness.config import Settings
    from harness.sandboxes.envs import prepare_tree

    tree = prepare_tree(task, Settings.from_env())
    base = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tree, capture_output=True, text=True, check=True).stdout.strip()
    bundle = scratch / f"{file_name(task.instance_id)}.bundle"
    subprocess.run(["git", "bundle", "create", "-q", str(bundle), "main"], cwd=tree, capture_output=True, check=True)
    source = RepoSource(kind="bundle", path=f"{REPOS_DIR}/{bundle.name}", ref=base)
    return task.model_copy(update={"repo_source": source, "base_commit": task.base_commit or base}), bundle
