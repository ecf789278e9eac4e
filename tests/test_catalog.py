"""The run catalog: compaction into parts, views over parts plus uncompacted task folders, several runs,
named views, later schema versions, and kills during compaction."""

from __future__ import annotations

import importlib.util
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curation.store import compaction, layout, views
from curation.store import journal as store_journal
from curation.store import (
    CATALOG,
    COMPACTED,
    JOURNAL,
    MANIFEST,
    RUN_TABLES,
    build_run_catalog,
    commit_folder,
    compact,
    load_manifest,
    open_catalog,
    read_records,
    refresh_catalog,
)
from harness.records import IncrementRecord, Pipeline1Result, VerdictRecord

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("catalog_scale", ROOT / "benchmarks" / "catalog_scale.py")
scale = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(scale)


def make_run(out: Path, ids: range) -> Path:
    for i in ids:
        scale.commit_task(out, i)
    return out


def rows(con, view: str) -> list[tuple]:
    return sorted(con.execute(f"select * exclude (run) from {view}").fetchall(), key=repr)


def snapshot(runs: list[Path]) -> dict[str, list[tuple]]:
    """Every row of every view, in a fixed order: two equal snapshots are the same catalog."""
    con = open_catalog(runs)
    try:
        return {view: rows(con, view) for view in RUN_TABLES}
    finally:
        con.close()


def replace_result(out: Path, i: int, **changes: object) -> None:
    folder = out / "p1" / scale.instance_id(i)
    tables = {name: read_records(folder / f"{name}.parquet", RUN_TABLES[view].model)
              for view, name in (("tasks", "task"), ("runs", "runs"), ("assertions", "assertions"), ("p1_results", "result"))}  # fmt: skip
    tables["result"] = [tables["result"][0].model_copy(update=changes)]
    models = {"task": "tasks", "runs": "runs", "assertions": "assertions", "result": "p1_results"}
    commit_folder(folder, [(name, RUN_TABLES[models[name]].model, records) for name, records in tables.items()], {"task.json": "{}"})


@pytest.fixture
def run(tmp_path: Path) -> Path:
    """Six tasks, each committed once (a copied run's folders are new inodes: no journal record matches them)."""
    return make_run(tmp_path / "run", range(6))


def test_compacted_views_equal_the_task_files(run: Path) -> None:
    before = snapshot([run])
    assert len(before["p1_results"]) == 6 and len(before["assertions"]) == 6 * 30
    assert compact(run).journaled == len(os.listdir(run / "p1")) + len(os.listdir(run / "p2"))
    assert snapshot([run]) == before
    manifest = load_manifest(run)
    assert manifest.parts["p1_results"] == ["p1_results/1.parquet"]
    part = pq.ParquetFile(run / COMPACTED / "p1_results/1.parquet")
    ids = part.read(columns=["instance_id"]).column(0).to_pylist()
    assert ids == sorted(ids), "parts are sorted by instance_id"
    assert compact(run).folders == 0, "nothing new, nothing to do"


def test_regression_views_never_read_dot_folders(run: Path) -> None:
    # DuckDB's glob matched half-committed `p2/.<id>.<rand>/` folders: 14 verdicts for 13 tasks
    before = snapshot([run])
    for stage in ("p1", "p2"):
        real = next(p for p in sorted((run / stage).iterdir()))
        shutil.copytree(real, run / stage / f".{real.name}.k3j2x1")
    assert snapshot([run]) == before
    compact(run)
    assert snapshot([run]) == before


def test_a_running_run_is_complete_before_and_after_each_compaction(run: Path) -> None:
    compact(run)
    make_run(run, range(6, 9))  # committed after the compaction: read from their task files
    con = open_catalog([run])
    assert con.execute("select count(*) from p1_results").fetchone() == (9,)
    compact(run)
    assert len(load_manifest(run).parts["p1_results"]) == 2, "an incremental compaction appends a part"
    assert snapshot([run]) == snapshot([make_run(run.parent / "whole", range(9))])


def test_a_replaced_folder_shows_its_new_version_once(run: Path) -> None:
    compact(run)
    replace_result(run, 3, reason="timeout", decision="reject")
    shutil.rmtree(run / "p2" / scale.instance_id(0))  # removed since: its compacted rows go too
    for step in ("before compaction", "after"):
        con = open_catalog([run])
        got = con.execute("select reason from p1_results where instance_id = ?", [scale.instance_id(3)]).fetchall()
        assert got == [("timeout",)], step
        assert con.execute("select count(*) from runs where instance_id = ?", [scale.instance_id(3)]).fetchone() == (6,), step
        assert con.execute("select count(*) from verdicts where instance_id = ?", [scale.instance_id(0)]).fetchone() == (0,), step
        compact(run)
    assert len(load_manifest(run).parts["p1_results"]) == 1, "hiding rows merges the parts into one"


def folders(run: Path) -> int:
    return len(os.listdir(run / "p1")) + len(os.listdir(run / "p2"))


@pytest.mark.parametrize("damage", ["truncated", "corrupt"])
def test_a_torn_journal_record_is_ignored_and_its_folder_read_from_its_files(run: Path, damage: str) -> None:
    # a writer killed mid-append leaves a short last record; a crash can leave one of the right length
    # but wrong bytes: either ends the journal's reading, and the folders it was for are read from their files
    store_journal.journal_flush()  # the fixture's six tasks: one record
    make_run(run, range(6, 8))
    store_journal.journal_flush()  # two more: the journal's last record
    (journal,) = (run / JOURNAL).iterdir()
    data = journal.read_bytes()
    journal.write_bytes(data[:-10] if damage == "truncated" else data[:-10] + bytes(b ^ 0xFF for b in data[-10:]))
    store_journal._JOURNALS.clear()  # the resumed run is another writer, with its own journal
    make_run(run, range(8, 10))
    done = compact(run)
    torn = sum((run / stage / scale.instance_id(i)).exists() for stage in ("p1", "p2") for i in (6, 7))
    assert (done.journaled, done.from_files) == (folders(run) - torn, torn)
    assert snapshot([run]) == snapshot([make_run(run.parent / "whole", range(10))])


def test_regression_a_folder_replaced_while_compaction_lists_its_files_is_read_next_time(run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a live run replacing a folder takes it away for an instant (renamed aside, then the new one renamed
    # in): a compaction or catalog that had just scanned it failed listing its files (FileNotFoundError)
    folder = run / "p1" / scale.instance_id(2)
    shutil.copytree(folder, run / "p1" / ".copy")
    shutil.rmtree(folder)
    os.rename(run / "p1" / ".copy", folder)  # a new inode no journal record names: read from its files
    expected = snapshot([run])
    real = layout.scan

    def scan_then_replace(stage_dir: Path) -> dict:
        found = real(stage_dir)
        if stage_dir.name == "p1" and folder.exists():
            os.rename(folder, run / "p1" / ".old")  # the instant between a replace's two renames
        return found

    for module in (compaction, views):  # where compaction and a catalog look it up
        monkeypatch.setattr(module, "scan", scan_then_replace)
    done = compact(run)
    assert done.from_files == 0
    open_catalog([run]).close()
    for module in (compaction, views):
        monkeypatch.setattr(module, "scan", real)
    shutil.copytree(run / "p1" / ".old", run / "p1" / ".new")
    shutil.rmtree(run / "p1" / ".old")
    os.rename(run / "p1" / ".new", folder)  # the replace completes
    assert snapshot([run]) == expected
    assert compact(run).from_files == 1
    assert snapshot([run]) == expected


def test_after_compaction_and_more_commits_the_views_are_the_union_once(run: Path) -> None:
    compact(run)
    make_run(run, range(6, 9))
    replace_result(run, 2, reason="timeout", decision="reject")  # a task committed again after its compaction
    whole = make_run(run.parent / "whole", range(9))
    replace_result(whole, 2, reason="timeout", decision="reject")
    for step in ("before the second compaction", "after"):
        con = open_catalog([run])
        assert con.execute("select count(*), count(distinct instance_id) from p1_results").fetchone() == (9, 9), step
        duplicated = "select count(*) from (select instance_id, tree, attempt from runs group by all having count(*) > 1)"
        assert con.execute(duplicated).fetchone() == (0,), step
        assert snapshot([run]) == snapshot([whole]), step
        compact(run)


def test_consumed_journals_are_swept_and_a_new_one_is_read_from_its_start(run: Path) -> None:
    refresh_catalog(run)
    assert not list((run / JOURNAL).iterdir()), "a journal read to its end goes once the catalog is rebuilt"
    make_run(run, range(6, 8))  # the same writer starts a new journal
    new = [f for stage in ("p1", "p2") for i in (6, 7) if (f := run / stage / scale.instance_id(i)).exists()]
    done = compact(run)
    assert (done.journaled, done.from_files) == (len(new), 0)
    assert snapshot([run]) == snapshot([make_run(run.parent / "whole", range(8))])


def test_a_table_journaled_with_another_schema_is_read_from_its_file(run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = store_journal.schema_print
    monkeypatch.setattr(store_journal, "schema_print", lambda model: "older" if model is VerdictRecord else real(model))
    make_run(run, range(6, 8))  # their verdicts journaled by a writer of another schema version
    monkeypatch.setattr(store_journal, "schema_print", real)
    compact(run)
    assert snapshot([run]) == snapshot([make_run(run.parent / "whole", range(8))])


@pytest.mark.parametrize(("batch", "spill", "fold"), [(64, 122_880, 512), (1, 122_880, 512), (3, 50, 2), (4, 1, 512)],
                         ids=["one record, sorted in memory", "a record per commit", "lots of two batches, spilled", "a lot per batch"])  # fmt: skip
def test_journaled_parts_fill_row_groups_in_order_without_splitting_a_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch: int, spill: int, fold: int
) -> None:
    monkeypatch.setattr(store_journal, "JOURNAL_BATCH", batch)  # commits a writer gathers into one record
    run = make_run(tmp_path / "run", range(12))
    replace_result(run, 4, reason="timeout", decision="reject")  # its first version's rows in a record are passed over
    shutil.rmtree(run / "p1" / scale.instance_id(7))  # and these
    expected = snapshot([run])
    monkeypatch.setattr(compaction, "ROW_GROUP_ROWS", 40)
    monkeypatch.setattr(compaction, "SPILL_ROWS", spill)  # rows sorted out to the row groups at a time
    monkeypatch.setattr(compaction, "FOLD", fold)  # ... or batches
    assert compact(run).from_files == 0
    assert snapshot([run]) == expected
    for view in ("assertions", "runs", "verdicts"):
        part = pq.ParquetFile(run / COMPACTED / load_manifest(run).parts[view][0])
        groups = [part.read_row_group(g, columns=["instance_id", "_folder"]) for g in range(part.num_row_groups)]
        assert len(groups) >= {"assertions": 3, "runs": 2, "verdicts": 1}[view]
        assert all(g.num_rows >= 40 for g in groups[:-1])
        ids = [i for g in groups for i in g.column("instance_id").to_pylist()]
        assert ids == sorted(ids)
        homes = [{f for f in g.column("_folder").to_pylist()} for g in groups]
        assert all(not (a & b) for k, a in enumerate(homes) for b in homes[k + 1 :]), "a folder's rows share one row group"
    assert not [p for p in (run / COMPACTED).rglob("*") if p.name.startswith(".")], "no spill files are left"


@pytest.mark.parametrize("spill", [122_880, 1], ids=["sorted in memory", "spilled"])
def test_regression_wide_rows_fill_row_groups_by_bytes_not_rows_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spill: int) -> None:
    """At 100k tasks every task row (its patches and issue) was one row group of 122,880 rows: compaction
    held all of them at once (peak RSS 810 MB, 394 MB once row groups were bounded by bytes)."""
    run = make_run(tmp_path / "run", range(12))
    expected = snapshot([run])
    task_bytes = pq.ParquetFile(next((run / "p1").glob("*/task.parquet"))).metadata.row_group(0).total_byte_size
    monkeypatch.setattr(compaction, "ROW_GROUP_BYTES", 3 * task_bytes)
    monkeypatch.setattr(compaction, "SPILL_ROWS", spill)
    monkeypatch.setattr(compaction, "SPILL_BYTES", 2 * task_bytes)
    assert compact(run).from_files == 0
    assert snapshot([run]) == expected
    part = pq.ParquetFile(run / COMPACTED / load_manifest(run).parts["tasks"][0])
    groups = [part.read_row_group(g, columns=["instance_id"]).column("instance_id").to_pylist() for g in range(part.num_row_groups)]
    assert 2 <= len(groups) < 12, [len(g) for g in groups]
    assert [i for g in groups for i in g] == sorted(scale.instance_id(i) for i in range(12))


def test_a_writer_appends_its_commits_a_record_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_journal, "JOURNAL_BATCH", 4)
    run = make_run(tmp_path / "run", range(4))

    def records() -> list[int]:  # the folders of each record
        return [len(meta["folders"]) for p in (run / JOURNAL).iterdir() for _, _, meta in store_journal.read_journal(p, 0, p.stat().st_size)]

    assert records() == [4] * (folders(run) // 4), "every JOURNAL_BATCH commits"
    monkeypatch.setattr(store_journal, "JOURNAL_SECONDS", 0.0)
    make_run(run, range(4, 5))  # the gathered commits waited long enough: appended with this one
    assert sum(records()) == folders(run)
    assert compact(run).from_files == 0


WRITER = """
import os, signal, sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
sys.path.insert(0, "benchmarks")
import catalog_scale
out, how = Path(sys.argv[1]), sys.argv[2]
if how == "pool":
    with ProcessPoolExecutor(1) as pool:
        pool.submit(catalog_scale.commit_range, out, 0, 3, 1).result()
else:
    catalog_scale.commit_range(out, 0, 3, 1)
if how == "killed":
    os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.parametrize("how", ["exits", "pool", "killed"])
def test_a_writer_appends_its_gathered_commits_at_exit_and_a_killed_one_is_read_from_its_files(tmp_path: Path, how: str) -> None:
    out = tmp_path / "run"
    subprocess.run([sys.executable, "-c", WRITER, str(out), how], cwd=ROOT, check=how != "killed")
    done = compact(out)
    assert (done.journaled, done.from_files) == ((folders(out), 0) if how != "killed" else (0, folders(out)))
    assert snapshot([out]) == snapshot([make_run(tmp_path / "whole", range(3))])


def test_a_folder_of_many_instance_ids_is_sorted_into_its_part(run: Path) -> None:
    changes = [IncrementRecord(config_hash="c", task_hash=f"{i}", instance_id=scale.instance_id(i), flow_run="f",
                               started="2026-01-01T00:00:00", change="new") for i in (5, 1, 3)]  # fmt: skip
    commit_folder(run / "increments" / "b-run", [("changes", IncrementRecord, changes[:2])])
    commit_folder(run / "increments" / "a-run", [("changes", IncrementRecord, changes[2:])])
    compact(run)
    (part,) = load_manifest(run).parts["increments"]
    ids = pq.read_table(run / COMPACTED / part, columns=["instance_id"]).column(0).to_pylist()
    assert ids == sorted(ids) and len(ids) == 3


def test_parts_are_merged_once_there_are_too_many(run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("curation.store.compaction.MAX_PARTS", 2)
    compact(run)
    for i in range(3):
        make_run(run, range(100 + i, 101 + i))
        compact(run)
        assert len(load_manifest(run).parts["runs"]) == [2, 1, 2][i]
    assert snapshot([run]) == snapshot([make_run(run.parent / "w", [*range(6), *range(100, 103)])])


def test_refresh_writes_the_catalog_and_drops_superseded_parts(run: Path) -> None:
    import duckdb

    refresh_catalog(run)
    replace_result(run, 1, reason="only_flaky", decision="reject")
    refresh_catalog(run)
    assert sorted(p.name for p in (run / COMPACTED / "p1_results").iterdir()) == ["2.parquet"]
    con = duckdb.connect(str(run / CATALOG), read_only=True)
    assert con.execute("select count(*), count(distinct run) from p1_results").fetchone() == (6, 1)
    assert con.execute("select count(*) from p1_results where reason = 'only_flaky' and instance_id = ?", [scale.instance_id(1)]).fetchone() == (1,)


def test_several_runs_are_told_apart_by_lineage(run: Path, tmp_path: Path) -> None:
    other = make_run(tmp_path / "other", range(4))
    compact(run)
    con = open_catalog([run, other])
    per_run = con.execute("select run, count(*), count(distinct config_hash) from p1_results group by run order by run").fetchall()
    assert per_run == [(str(other.resolve()), 4, 1), (str(run.resolve()), 6, 1)]
    shares = con.execute("select run, source, sum(share) from verdict_shares group by all").fetchall()
    assert shares and all(abs(total - 1) < 1e-9 for _, _, total in shares)


def test_named_views_answer_what_the_records_say(run: Path) -> None:
    compact(run)
    results = [read_records(run / "p1" / scale.instance_id(i) / "result.parquet", Pipeline1Result)[0] for i in range(6)]
    con = open_catalog([run])
    rejected = {}
    for r in results:
        if r.decision == "reject":
            rejected[(r.source, r.reason)] = rejected.get((r.source, r.reason), 0) + 1
    assert {(s, reason): n for s, reason, n in con.execute("select source, reason, tasks from reject_reasons").fetchall()} == rejected
    verdicts = con.execute("select sum(tasks) from verdict_shares").fetchone()[0]
    assert verdicts == sum(r.decision == "keep" for r in results)
    survival = con.execute("select kind, sum(probes), sum(survived) from probe_survival group by kind order by kind").fetchall()
    probes = con.execute("select kind, count(*), count(*) filter (where reward = 1) from probes group by kind order by kind").fetchall()
    assert survival == probes


def test_a_later_schema_version_reads_beside_the_current_one(run: Path) -> None:
    # a later version adds a field: its files carry one more column, older rows read it as NULL
    compact(run)
    folder = run / "p2" / scale.instance_id(1)
    (verdict,) = read_records(folder / "verdict.parquet", VerdictRecord)
    newer = pa.Table.from_pylist([verdict.model_dump(mode="json") | {"schema_version": 2, "judge_seed": 7}])
    work = run / "p2" / ".v2"
    shutil.copytree(folder, work)
    pq.write_table(newer, work / "verdict.parquet")
    shutil.rmtree(folder)
    os.rename(work, folder)
    for step in ("before compaction", "after"):
        con = open_catalog([run])
        got = con.execute("select schema_version, count(*), count(judge_seed) from verdicts group by 1 order by 1").fetchall()
        assert got[-1] == (2, 1, 1) and got[0][0] == 1 and got[0][2] == 0, step
        compact(run)


def _refresh_in_child(run: Path) -> tuple[subprocess.Popen, float]:
    """A child refreshing ``run``'s catalog, and when its compaction started (after Python's start-up)."""
    code = "import sys, pathlib; from curation.store import refresh_catalog; refresh_catalog(pathlib.Path(sys.argv[1]))"
    child = subprocess.Popen([sys.executable, "-c", code, str(run)], cwd=ROOT)
    while not (run / COMPACTED).exists() and child.poll() is None:
        time.sleep(0.005)
    return child, time.monotonic()


@pytest.mark.slow  # two child processes; test_a_kill_between_parts_and_manifest_keeps_the_last_manifest is the fast variant
def test_sigkill_during_compaction_then_rerun_gives_the_same_catalog(run: Path, tmp_path: Path) -> None:
    whole = tmp_path / "whole"
    shutil.copytree(run, whole, copy_function=shutil.copy)
    child, started = _refresh_in_child(whole)
    assert child.wait() == 0
    duration = time.monotonic() - started
    expected = snapshot([whole])
    child, _ = _refresh_in_child(run)
    time.sleep(random.uniform(0.1, 0.9) * duration)
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert snapshot([run]) == expected, "the catalog a kill leaves is consistent"
    refresh_catalog(run)
    assert snapshot([run]) == expected
    assert not [p for p in (run / COMPACTED).rglob("*") if p.name.startswith(".")], "no work files are left"


def test_a_kill_between_parts_and_manifest_keeps_the_last_manifest(run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    refresh_catalog(run)
    make_run(run, range(6, 8))
    expected = snapshot([make_run(run.parent / "whole", range(8))])
    real = os.replace

    def killed_at_manifest(src, dst):
        if Path(dst).name == MANIFEST:
            raise KeyboardInterrupt("killed")
        return real(src, dst)

    monkeypatch.setattr(os, "replace", killed_at_manifest)
    with pytest.raises(KeyboardInterrupt):
        compact(run)
    monkeypatch.setattr(os, "replace", real)
    assert load_manifest(run).generation == 1
    assert snapshot([run]) == expected
    refresh_catalog(run)
    assert snapshot([run]) == expected
    assert json.loads((run / COMPACTED / MANIFEST).read_text())["generation"] == 2


def test_run_catalog_file_is_a_snapshot_with_typed_empty_views(tmp_path: Path) -> None:
    import duckdb

    build_run_catalog(tmp_path / CATALOG, [tmp_path])
    con = duckdb.connect(str(tmp_path / CATALOG), read_only=True)
    for view in [*RUN_TABLES, "verdict_shares", "reject_reasons", "probe_survival"]:
        assert con.execute(f"select count(*) from {view}").fetchone() == (0,)
    assert "statuses" in [d[0] for d in con.execute("select * from runs").description]


def test_query_command_reads_several_runs_and_the_named_views(run: Path, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from flows.cli import app

    other = make_run(tmp_path / "other", range(3))
    refresh_catalog(run)
    sql = "select run, count(*) as n from p1_results group by run order by n"
    answer = CliRunner().invoke(app, ["query", sql, "--db", str(run), "--db", str(other / "p1"), "--json"])
    assert answer.exit_code != 0, "a folder that is neither a catalog nor a run is not guessed at"
    answer = CliRunner().invoke(app, ["query", sql, "--db", str(run / CATALOG), "--db", str(other), "--json"])
    assert answer.exit_code == 0, answer.output
    assert [(r["run"], r["n"]) for r in json.loads(answer.output)] == [(str(other.resolve()), 3), (str(run.resolve()), 6)]
    sql = "select (select sum(tasks) from reject_reasons) as named, (select count(*) from p1_results where decision = 'reject') as plain"
    answer = CliRunner().invoke(app, ["query", sql, "--db", str(run / CATALOG), "--json"])
    (row,) = json.loads(answer.output)
    assert row["named"] == row["plain"] > 0


def test_regression_a_run_resumed_after_an_upgrade_builds_its_catalog(tmp_path: Path) -> None:
    """Resuming a run folder whose Pipeline 1 records were written before a field existed (the twins'
    forgery_bound) failed to build the catalog: the forgery_bounds view named a column no file had.
    Every view has its record's columns now, NULL where a file lacks one."""
    run = tmp_path / "run"
    record = Pipeline1Result(config_hash="c", task_hash="t", instance_id="task-a", source="local", repo="o/r", decision="keep",
                             reason="", infrastructure=False, stage="", fail_to_pass=[], pass_to_pass=[], flaky=[],
                             gold_failing=[], binding_assertions=[], label_disagreements=[], expected_status={}, runs=1,
                             duration_s=1.0, detail="")  # fmt: skip
    commit_folder(run / "p1" / "task-a", [("result", Pipeline1Result, [record])])
    refresh_catalog(run)  # compacted as the earlier version did
    parts = [p for p in (run / COMPACTED).rglob("*.parquet") if "forgery_bound" in pq.read_schema(p).names]
    assert parts
    for part in parts:  # as the earlier version wrote them
        pq.write_table(pq.read_table(part).drop_columns(["forgery_bound"]), part)
    refresh_catalog(run)
    con = duckdb.connect(str(run / CATALOG), read_only=True)
    assert con.sql("select instance_id, forgery_bound from p1_results").fetchall() == [("task-a", None)]
    assert con.sql("select tasks, worst_bound from forgery_bounds").fetchall() == [(1, None)]
