"""The DuckDB catalogs: a run's views over its parts and fresh task files, the named statistics views, and a deck's catalog file."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
from pydantic import BaseModel

from curation.store.compaction import compact, sweep_compacted
from curation.store.layout import (
    CATALOG,
    COMPACTED,
    RUN_TABLES,
    STAGES,
    RunFile,
    _lit,
    _list,
    _table_files,
    _task_files,
    delta,
    load_manifest,
    scan,
)
from curation.store.schema import arrow_schema

if TYPE_CHECKING:
    import duckdb

# Statistics the CLI and the report share. Every view has the lineage column ``run`` (the run folder)
# and the records' ``config_hash``; shares are within one run, config and source.
NAMED_VIEWS = {
    "verdict_shares": """
        SELECT v.run, v.config_hash, r.source, v.verdict, count(*) AS tasks,
               count(*) / sum(count(*)) OVER (PARTITION BY v.run, v.config_hash, r.source) AS share
        FROM verdicts v JOIN p1_results r USING (run, instance_id)
        GROUP BY v.run, v.config_hash, r.source, v.verdict""",
    "reject_reasons": """
        SELECT * FROM (
            SELECT run, config_hash, source, reason, bool_or(infrastructure) AS infrastructure, count(*) AS tasks,
                   count(*) / sum(count(*)) OVER (PARTITION BY run, config_hash, source) AS share_of_source
            FROM p1_results GROUP BY run, config_hash, source, reason)
        WHERE reason <> ''""",
    # how well the kept tasks' grades are guarded against forging in the test process: the share of
    # tasks with twins, and the bound on forging a grade of the full command (harness.grading.canaries)
    "forgery_bounds": """
        SELECT run, config_hash, source, canaries, count(*) AS tasks, min(forgery_bound) AS best_bound,
               median(forgery_bound) AS median_bound, max(forgery_bound) AS worst_bound
        FROM p1_results WHERE decision = 'keep' GROUP BY ALL""",
    # a plausible-but-wrong probe that survives (full reward) is too-loose evidence; a correct alternative
    # that does not survive is over-restrictive evidence
    "probe_survival": """
        SELECT p.run, p.config_hash, r.source, p.kind, p.operator, count(*) AS probes,
               count(DISTINCT p.instance_id) AS tasks, count(*) FILTER (WHERE p.reward = 1) AS survived,
               avg((p.reward = 1)::INT) AS survival
        FROM probes p JOIN p1_results r USING (run, instance_id)
        GROUP BY ALL""",
    # fixes two loaded sources share: corpora by their clusters (a corpus with itself: fixes it ships
    # twice), a corpus and an eval set by contamination records of an exact rule
    "overlap": """
        SELECT a.run, a.source AS source_a, b.source AS source_b, count(DISTINCT a.cluster_id) AS fixes
        FROM clusters a JOIN clusters b ON a.run = b.run AND a.cluster_id = b.cluster_id
             AND (a.source < b.source OR (a.source = b.source AND a.member < b.member))
        GROUP BY ALL
        UNION ALL
        SELECT c.run, c.source, c.eval_source, count(DISTINCT k.cluster_id)
        FROM contamination c JOIN clusters k USING (run, member)
        WHERE c.exact GROUP BY ALL""",
}


def _run_selects(run: Path, con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """One SELECT per view of this run that has any data: compacted parts (minus rows of folders
    replaced since), the task files no part covers, the lineage column ``run``."""
    run = run.resolve()
    manifest = load_manifest(run)
    deltas = {stage: delta(manifest.covered.get(stage, {}), scan(run / stage)) for stage in STAGES}
    files = {stage: _task_files(run / stage, d.fresh) for stage, d in deltas.items()}
    for stage, d in deltas.items():
        if d.stale:
            con.executemany("INSERT INTO swedeck_internal.stale_folders VALUES (?, ?, ?)", [(str(run), stage, f) for f in d.stale])
    selects = {}
    for view, table in RUN_TABLES.items():
        parts = []
        if isinstance(table, RunFile):
            if (run / table.path).exists():
                parts.append(f"SELECT * FROM read_parquet({_lit(str(run / table.path))})")
        else:
            if manifest.parts.get(view):
                stale = deltas[table.stage].stale
                hidden = (f" WHERE _folder NOT IN (SELECT folder FROM swedeck_internal.stale_folders WHERE run = {_lit(str(run))} "
                          f"AND stage = {_lit(table.stage)})") if stale else ""  # fmt: skip
                compacted = _list(run / COMPACTED / p for p in manifest.parts[view])
                parts.append(f"SELECT * EXCLUDE (_folder) FROM read_parquet({compacted}, union_by_name=true){hidden}")
            fresh = _table_files(run / table.stage, files[table.stage], table)
            if fresh:
                parts.append(f"SELECT * FROM read_parquet({_list(fresh)}, union_by_name=true)")
        if parts:
            selects[view] = f"SELECT *, {_lit(str(run))} AS run FROM ({' UNION ALL BY NAME '.join(parts)})"
    return selects


def create_run_views(con: duckdb.DuckDBPyConnection, runs: Sequence[Path]) -> None:
    """The catalog of ``runs`` in ``con``: each table of RUN_TABLES as one view over every run, with
    the lineage column ``run``, then the NAMED_VIEWS. A table no run has yet is a typed, empty one."""
    # in a schema of its own: the user's views (SHOW TABLES) are the catalog's, not its bookkeeping
    con.execute("CREATE SCHEMA swedeck_internal; CREATE TABLE swedeck_internal.stale_folders (run VARCHAR, stage VARCHAR, folder VARCHAR)")
    per_run = [_run_selects(run, con) for run in runs]
    for view, table in RUN_TABLES.items():
        selects = [s[view] for s in per_run if view in s]
        if selects:
            # with the record's every column: files written before a field existed (a run resumed
            # after an upgrade) give it as NULL, and the named views over it still bind
            _create_empty(con, f"swedeck_internal.{view}_columns", table.model, extra=pa.field("run", pa.string()))
            con.execute(f"CREATE VIEW {view} AS " + " UNION ALL BY NAME ".join([*selects, f"SELECT * FROM swedeck_internal.{view}_columns"]))
        else:
            _create_empty(con, view, table.model, extra=pa.field("run", pa.string()))
    for view, sql in NAMED_VIEWS.items():
        con.execute(f"CREATE VIEW {view} AS {sql}")


def _create_empty(con: duckdb.DuckDBPyConnection, name: str, model: type[BaseModel], extra: pa.Field | None = None) -> None:
    schema = arrow_schema(model)
    empty = pa.Table.from_pylist([], schema=schema.append(extra) if extra else schema)
    con.register("_empty", empty)
    con.execute(f"CREATE TABLE {name} AS SELECT * FROM _empty")
    con.unregister("_empty")


def open_catalog(runs: Sequence[Path], decks: Sequence[Path] = ()) -> duckdb.DuckDBPyConnection:
    """An in-memory catalog over run folders as they are now (a running run's commits included), plus
    a ``deck`` view over deck files (their rows name their run in ``source_run``)."""
    import duckdb

    con = duckdb.connect()
    create_run_views(con, runs)
    if decks:
        con.execute(f"CREATE VIEW deck AS SELECT * FROM read_parquet({_list(decks)}, union_by_name=true)")
    return con


@contextmanager
def _new_database(db_path: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    """A fresh database file that replaces ``db_path`` only once it is complete."""
    import duckdb

    tmp = db_path.with_name(db_path.name + ".tmp")
    tmp.unlink(missing_ok=True)
    con = duckdb.connect(str(tmp))
    try:
        yield con
    finally:
        con.close()
    os.replace(tmp, db_path)


def build_run_catalog(db_path: Path, runs: Sequence[Path]) -> None:
    """(Re)write ``db_path`` with the catalog of ``runs`` (a snapshot: rebuild it when they change)."""
    with _new_database(db_path) as con:
        create_run_views(con, runs)


def refresh_catalog(run: Path) -> None:
    """End of a stage: compact what was committed, rewrite the run's catalog, drop superseded parts."""
    compact(run)
    build_run_catalog(run / CATALOG, [run])
    sweep_compacted(run)


def build_catalog(db_path: Path, views: dict[str, tuple[str, type[BaseModel]]]) -> None:
    """(Re)create ``db_path`` with one table per name, a copy of one Parquet file's rows (a missing
    file: a typed, empty table, so queries never fail for want of it). Tables, not views over the
    files: a view's relative file name resolves against the opening process's folder, so the file
    would open from its own folder only, and an absolute one would break when the folder (a deck) is
    copied or moved. The Parquet files stay beside it for readers that want them."""
    with _new_database(db_path) as con:
        for name, (path, model) in views.items():
            if Path(path).exists():
                con.execute(f"CREATE TABLE {name} AS SELECT * FROM read_parquet({_lit(str(Path(path).resolve()))})")
            else:
                _create_empty(con, name, model)


def connect(db_path: Path) -> duckdb.DuckDBPyConnection:
    """A catalog file opened read-only, with relative file names resolved from its own folder (DuckDB's
    ``file_search_path``; plain ``duckdb`` run in that folder resolves them too)."""
    import duckdb

    return duckdb.connect(str(db_path), read_only=True, config={"file_search_path": str(db_path.resolve().parent)})
