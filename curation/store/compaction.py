"""Compaction: the task folders committed since the last one folded into one sorted Parquet part per table."""

from __future__ import annotations

import gc
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from curation.store.journal import JOURNAL, Journaled, index_journals, journal_flush, list_journals
from curation.store.layout import (
    COMPACTED,
    MANIFEST,
    PER_TASK,
    STAGES,
    Manifest,
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

ROW_GROUP_ROWS = 122_880  # DuckDB's own row group: one scan thread per group, and zonemaps skip groups on instance_id
ROW_GROUP_BYTES = 32 << 20  # ... or fewer rows where they are wide (a task row holds its patches and issue): compaction holds a row group
MAX_PARTS = 8  # appended parts per table before a compaction merges them into one
COMPACTION_MEMORY = "1GB"  # DuckDB spills its sort to disk beyond this, so compaction memory stays flat
FOLD = 512  # journaled batches compaction reads at a time (a one-row batch costs ~10 kB of objects as it is)
SPILL_ROWS = ROW_GROUP_ROWS  # journaled rows compaction holds before it sorts them out to their row groups' spill files
SPILL_BYTES = ROW_GROUP_BYTES  # ... or fewer, once their batches hold this much


def _ints(values: np.ndarray) -> pa.Array:
    """An int64 Arrow array over ``values`` (pa.array and take of a NumPy array first import pandas, ~0.3 s)."""
    values = np.ascontiguousarray(values, np.int64)
    return pa.Array.from_buffers(pa.int64(), len(values), [None, pa.py_buffer(values)])


def _strings(values: Sequence[str]) -> pa.Array:
    """A string Arrow array of ``values``, as _ints builds one."""
    data = [v.encode() for v in values]
    offsets = np.zeros(len(data) + 1, np.int32)
    np.cumsum([len(d) for d in data], out=offsets[1:])
    return pa.Array.from_buffers(pa.string(), len(data), [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(data))])


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """starts[0], starts[0] + 1, ... (lengths[0] of them), then starts[1], ...: as one array."""
    ends = np.cumsum(lengths)
    return np.arange(ends[-1] if len(ends) else 0, dtype=np.int64) + np.repeat(starts - (ends - lengths), lengths)


def write_journaled(found: Journaled, view: str, path: Path) -> None:
    """Write the journaled rows of ``view`` to ``path`` folder by folder, in the order of each folder's
    least instance_id, then its name, with the column ``_folder``; row groups about DuckDB's size that
    never split a folder.

    A record holds the rows of many folders in commit order, so they are sorted out in two passes. The
    batches are read in journal order, a lot of SPILL_ROWS rows, SPILL_BYTES or FOLD batches at a time; each lot is
    put in part order (one take) and cut into one piece per row group, which goes to the row group's
    spill file (unless the first lot is the only one: then the pieces stay in memory). Then each row
    group's pieces are put in order (one take) and written. Memory holds a lot and a row group."""
    schema = arrow_schema(PER_TASK[view].model)
    folders, first, batches = found.folders[view], found.first[view], found.batches[view]
    if not folders:
        return
    order = sorted(range(len(folders)), key=lambda k: (first[k], folders[k]))  # the part's order (a folder is in it once)
    batch, first_row, rows = np.frombuffer(found.places[view], np.int64).reshape(-1, 3)[order].T.copy()
    lengths = np.array([length for _, _, length in batches], np.int64)
    sizes = rows * (lengths / np.maximum(np.bincount(batch, weights=rows, minlength=len(batches)), 1))[batch]  # bytes, as its batch's rows average
    group = np.empty(len(order), np.int64)  # each folder's row group
    at = np.empty(len(order), np.int64)  # where its rows begin in it
    g = filled = 0
    filled_bytes = 0.0
    for k, (n, size) in enumerate(zip(rows.tolist(), sizes.tolist(), strict=True)):
        group[k], at[k] = g, filled
        filled += n
        filled_bytes += size
        if filled >= ROW_GROUP_ROWS or filled_bytes >= ROW_GROUP_BYTES:
            g, filled, filled_bytes = g + 1, 0, 0.0
    groups = g + (filled > 0)
    bounds = np.searchsorted(group, np.arange(groups + 1))  # row group g holds folders order[bounds[g]:bounds[g + 1]]
    by_batch = np.argsort(batch, kind="stable")
    batch_starts = np.searchsorted(batch[by_batch], np.arange(len(batches) + 1))
    spilled = schema.append(pa.field("_pos", pa.int64()))
    spills: dict[int, pa.ipc.RecordBatchStreamWriter] = {}
    held: dict[int, pa.Table] = {}

    def spill_path(g: int) -> Path:
        return path.with_name(f"{path.name}.{g}.spill")

    def sort_out(lot: list[pa.RecordBatch], b0: int, b1: int, only: bool) -> None:
        """Put the rows of batches b0..b1 (``lot``) in part order and hand each row group its piece."""
        ks = by_batch[batch_starts[b0] : batch_starts[b1]]
        ks = ks[np.lexsort((at[ks], group[ks]))]
        starts = np.cumsum([0, *(len(x) for x in lot)])[batch[ks] - b0] + first_row[ks]
        source = _ranges(starts, rows[ks])
        table = pa.Table.from_batches(lot, schema)
        lot.clear()
        if not len(source):  # every folder of the lot replaced or removed since
            return
        if len(source) == len(table) and np.array_equal(source, np.arange(len(table))):
            table = table.combine_chunks()
        else:  # also drops the rows of folders no longer fresh; concatenates no flat column
            table = table.take(_ints(source))
        if not only:
            table = table.append_column("_pos", _ints(_ranges(at[ks], rows[ks])))
        counts = np.bincount(group[ks], weights=rows[ks], minlength=groups).astype(np.int64)
        offset = 0
        for g in np.flatnonzero(counts).tolist():
            piece = table.slice(offset, int(counts[g]))
            offset += int(counts[g])
            if only:  # in order already
                held[g] = piece
                continue
            if g not in spills:
                spills[g] = pa.ipc.new_stream(str(spill_path(g)), spilled)
            spills[g].write_table(piece)

    fds = [os.open(p, os.O_RDONLY) for p in found.journals]
    try:
        lot: list[pa.RecordBatch] = []
        b0 = lot_rows = lot_bytes = 0
        for b, (j, offset, length) in enumerate(batches):
            blob = pa.allocate_buffer(length)  # in Arrow's pool, as what is made of it
            if os.preadv(fds[j], [memoryview(blob)], offset) != length:  # checked whole when indexed: a journal never shrinks
                raise OSError(f"journal {found.journals[j]} is shorter than when it was indexed")
            lot.append(pa.ipc.read_record_batch(blob, schema))
            lot_rows += len(lot[-1])
            lot_bytes += length
            if lot_rows >= SPILL_ROWS or lot_bytes >= SPILL_BYTES or len(lot) >= FOLD:
                sort_out(lot, b0, b + 1, only=b0 == 0 and b + 1 == len(batches))
                b0, lot_rows, lot_bytes = b + 1, 0, 0
        if lot:
            sort_out(lot, b0, len(batches), only=b0 == 0)
        del lot
        for writer in spills.values():
            writer.close()
        with pq.ParquetWriter(path, schema.append(pa.field("_folder", pa.string())), compression="zstd") as out:
            for g in range(groups):
                if g in held:
                    table = held.pop(g)
                else:
                    with pa.OSFile(str(spill_path(g))) as source:
                        table = pa.ipc.open_stream(source).read_all()
                    spill_path(g).unlink()
                    pos = table.column("_pos").combine_chunks()
                    position = np.frombuffer(pos.buffers()[1], np.int64)[pos.offset : pos.offset + len(pos)]  # to_numpy imports pandas
                    table = table.drop_columns(["_pos"])
                    if np.array_equal(position, np.arange(len(position))):
                        table = table.combine_chunks()
                    else:
                        inverse = np.empty(len(position), np.int64)
                        inverse[position] = np.arange(len(position))
                        table = table.take(_ints(inverse))
                e0, e1 = bounds[g], bounds[g + 1]
                names = _strings([folders[k] for k in order[e0:e1]]).take(_ints(np.repeat(np.arange(e1 - e0), rows[e0:e1])))
                table = table.append_column("_folder", names)
                out.write_table(table, row_group_size=table.num_rows)
                del table
    finally:
        for writer in spills.values():
            writer.close()
        for fd in fds:
            os.close(fd)


def _in_order(paths: Sequence[Path]) -> str:
    """Parts and journaled files hold each folder's rows in order: their row number is the sort's tie-break."""
    return f"SELECT * EXCLUDE (file_row_number), file_row_number AS _row FROM read_parquet({_list(paths)}, union_by_name=true, file_row_number=true)"


@dataclass(frozen=True)
class Compaction:
    """What a compaction read: folders from the journals, and from their own files."""

    journaled: int
    from_files: int

    @property
    def folders(self) -> int:
        return self.journaled + self.from_files


def compact(run: Path) -> Compaction:
    """Fold the task folders committed since the last compaction into one new part per table. A kill
    at any point leaves the last manifest and its parts standing."""
    collecting = gc.isenabled()
    gc.disable()  # compaction makes a few objects per folder and no cycles: the collector's passes over them cost ~15 %
    try:
        return _compact(run)
    finally:
        if collecting:
            gc.enable()


def _compact(run: Path) -> Compaction:
    run = run.resolve()
    journal_flush()  # this process's commits gathered for the journal: appended, so that they are read from it
    manifest = load_manifest(run)
    journals = list_journals(run)  # listed before the scan: every record they hold is of a folder it sees (or of one replaced since)
    present = {stage: scan(run / stage) for stage in STAGES}  # stamped before reading: a folder replaced meanwhile reads as stale next time
    deltas = {stage: delta(manifest.covered.get(stage, {}), present[stage]) for stage in STAGES}
    if not any(d.fresh or d.stale for d in deltas.values()):
        return Compaction(0, 0)
    fresh = {stage: {name: present[stage][name] for name in deltas[stage].fresh} for stage in STAGES}
    found = index_journals(run, journals, manifest.journals, fresh)
    files = {stage: _task_files(run / stage, set(fresh[stage]) - found.served[stage]) for stage in STAGES}
    for stage in STAGES:  # a folder gone since the scan is not covered: its next version is fresh next time
        fresh[stage] = {name: stamp for name, stamp in fresh[stage].items() if name in files[stage] or name in found.served[stage]}
    generation = manifest.generation + 1
    root = run / COMPACTED
    work = root / f".work.{generation}"  # DuckDB's spill files, and parts until they are renamed in
    shutil.rmtree(work, ignore_errors=True)  # a killed compaction's leftovers
    work.mkdir(parents=True)
    connection: list[duckdb.DuckDBPyConnection] = []

    def duck() -> duckdb.DuckDBPyConnection:
        """DuckDB, for what the journal alone does not give in order (opened only then)."""
        if not connection:
            import duckdb

            connection.append(duckdb.connect())
            connection[0].execute(f"SET memory_limit = '{COMPACTION_MEMORY}'; SET temp_directory = {_lit(str(work))}")
        return connection[0]

    parts = dict(manifest.parts)
    try:
        for view, table in PER_TASK.items():
            d = deltas[table.stage]
            if not (d.fresh or d.stale):
                continue
            old = parts.get(view, [])
            merge = bool(d.stale) or len(old) >= MAX_PARTS
            files_read = _table_files(run / table.stage, files[table.stage], table) + found.odd[view]
            aside = work / f"{view}.parquet"
            journaled = work / f"{view}.journaled.parquet"
            if found.folders[view]:
                write_journaled(found, view, journaled)
            # in order already: the journal alone, a folder per instance_id (an increments folder holds many)
            if found.folders[view] and not files_read and not (merge and old) and view not in found.mixed:
                os.replace(journaled, aside)
            else:
                selects = []
                if merge and old:
                    duck().register("_stale", pa.table({"folder": pa.array(d.stale, pa.string())}))
                    selects.append(_in_order([root / p for p in old]) + " WHERE _folder NOT IN (SELECT folder FROM _stale)")
                if found.folders[view]:
                    selects.append(_in_order([journaled]))
                if files_read:
                    selects.append(f"SELECT * EXCLUDE (filename, file_row_number), string_split(filename, '/')[-2] AS _folder, "
                                   f"file_row_number AS _row FROM read_parquet({_list(files_read)}, union_by_name=true, filename=true, "
                                   "file_row_number=true)")  # fmt: skip
                if not selects:
                    parts[view] = [] if merge else old
                    continue
                body = " UNION ALL BY NAME ".join(selects)
                duck().execute(
                    f"COPY (SELECT * EXCLUDE (_row) FROM ({body}) ORDER BY instance_id, _folder, _row) "
                    f"TO {_lit(str(aside))} (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE {ROW_GROUP_ROWS})"
                )
            name = f"{view}/{generation}.parquet"
            (root / view).mkdir(exist_ok=True)
            os.replace(aside, root / name)
            parts[view] = [name] if merge else [*old, name]
    finally:
        for con in connection:
            con.close()
    covered = {}
    for stage in STAGES:
        d, before = deltas[stage], manifest.covered.get(stage, {})
        kept = {name: stamp for name, stamp in before.items() if name not in d.stale}
        covered[stage] = kept | fresh[stage]
    compacted = Manifest(generation=generation, parts=parts, covered=covered, journals=found.consumed)
    _write_atomic(root / MANIFEST, compacted.model_dump_json())
    shutil.rmtree(work)
    served = sum(len(s) for s in found.served.values())
    return Compaction(served, sum(len(f) for f in fresh.values()) - served)


def _write_atomic(path: Path, text: str) -> None:
    aside = path.with_name(f".{path.name}.tmp")
    aside.write_text(text)
    os.replace(aside, path)


def sweep_compacted(run: Path) -> None:
    """Remove parts no manifest names (superseded, or written by a killed compaction), spill folders and
    the journals read to their end. Call it only after the run's catalog was rebuilt: the previous
    catalog may still read those parts."""
    root = run / COMPACTED
    if not root.is_dir():
        return
    manifest = load_manifest(run)
    for name, size in list_journals(run).items():
        if manifest.journals.get(name) == size:  # a record appended this instant is lost: its folder is read from its files
            (run / JOURNAL / name).unlink()
    named = {root / p for parts in manifest.parts.values() for p in parts}
    for path in root.iterdir():
        if path.name.startswith(".work."):
            shutil.rmtree(path)
        elif path.is_dir():
            for part in path.iterdir():
                if part not in named:
                    part.unlink()
