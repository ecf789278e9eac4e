"""Parquet files written once per item, compacted per table, and a DuckDB catalog of views over them.

Arrow schemas derive from the record models in ``harness.records``; nothing here declares a record's
column. A task's results land in a folder that appears atomically (written aside, then renamed), so a
run killed at any moment leaves either a complete folder or none, and a rerun redoes only what is missing.

Thousands of one-task files are right for commits and wrong for queries (DuckDB opens each one, every
query). So at the end of a stage ``compact`` folds the task folders committed since the last compaction
into one Parquet part per table under ``RUN/compacted/`` (sorted by instance_id, DuckDB-sized row
groups), and ``manifest.json`` there names the parts and the folders they cover, each by inode and
mtime. Compaction reads each folder's rows from the commit journal its writer appended them to (one
sequential file per writer process, see ``journal_append``), and from the folder's files only where no
journal record matches it. A catalog's views read the parts plus the task files no part covers yet, and
hide the part rows of folders replaced or removed since, so a resumed or running run is always complete
and never counted twice. Dot-folders (a writer's work in progress) are never read.

Schema versions: views read files with ``union_by_name``, so a later ``schema_version`` that adds
fields reads beside the current one (older rows get NULL there). A later version that renames or
retypes a field must map its old spelling in the view's SELECT, keyed by ``schema_version``.
"""

from __future__ import annotations

import array
import functools
import gc
import hashlib
import json
import os
import secrets
import shutil
import socket
import struct
import sys
import tempfile
import threading
import time
import types
import typing
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pydantic import BaseModel, ConfigDict, Field

from harness.records import (
    AssertionRecord,
    ClusterMember,
    Contamination,
    Duplicate,
    Fingerprint,
    IncrementRecord,
    LoadError,
    Pipeline1Result,
    ProbeCounts,
    ProbeResult,
    RunRecord,
    Strengthening,
    TaskRow,
    VerdictRecord,
)

if TYPE_CHECKING:
    import duckdb

_SCALARS: dict[type, pa.DataType] = {str: pa.string(), int: pa.int64(), float: pa.float64(), bool: pa.bool_()}


def arrow_type(annotation: object) -> pa.DataType:
    origin = typing.get_origin(annotation)
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if origin in (typing.Union, types.UnionType):
        return arrow_type(args[0])
    if origin is typing.Literal:
        return arrow_type(type(args[0]))
    if origin is list:
        return pa.list_(arrow_type(args[0]))
    if origin is dict:
        return pa.map_(arrow_type(args[0]), arrow_type(args[1]))
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return pa.string()
    if annotation in _SCALARS:
        return _SCALARS[annotation]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):  # nested records: a struct
        return pa.struct(list(arrow_schema(annotation)))
    raise TypeError(f"no Arrow type for {annotation!r}")


@functools.cache  # every commit asks again, and type hints are slow to resolve
def arrow_schema(model: type[BaseModel]) -> pa.Schema:
    hints = typing.get_type_hints(model)
    return pa.schema([pa.field(name, arrow_type(hints[name])) for name in model.model_fields])


def _from_arrow(value: object, kind: pa.DataType) -> object:
    """Arrow maps come back as lists of pairs (an empty one as []), at any depth: make them dicts again."""
    if value is None:
        return None
    if pa.types.is_map(kind):
        return {k: _from_arrow(v, kind.item_type) for k, v in value}
    if pa.types.is_struct(kind):
        return {f.name: _from_arrow(value[f.name], f.type) for f in kind}
    if pa.types.is_list(kind):
        return [_from_arrow(v, kind.value_type) for v in value]
    return value


def to_arrow(model: type[BaseModel], records: Sequence[BaseModel]) -> pa.Table:
    return pa.Table.from_pylist([r.model_dump(mode="json") for r in records], schema=arrow_schema(model))


def write_records(path: Path, model: type[BaseModel], records: Sequence[BaseModel]) -> None:
    pq.write_table(to_arrow(model, records), path, compression="zstd")


def read_records(path: Path, model: type[BaseModel]) -> list[BaseModel]:
    table = pq.read_table(path)
    rows = table.to_pylist()
    return [model.model_validate(_from_arrow(row, pa.struct(list(table.schema)))) for row in rows]


def commit_folder(
    dest: Path,
    tables: Iterable[tuple[str, type[BaseModel], Sequence[BaseModel]]],
    files: dict[str, str] | None = None,
) -> None:
    """Write every table (and plain file) of one item into ``dest`` atomically, replacing an older
    version of it. A task folder of a run stage (``RUN/<stage>/<folder>``) is also journaled."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    arrow = [(name, model, to_arrow(model, records)) for name, model, records in tables]
    for name, _, table in arrow:
        pq.write_table(table, work / f"{name}.parquet", compression="zstd")
    for name, text in (files or {}).items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(text)
    if dest.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{dest.name}.old.", dir=dest.parent))
        os.rename(dest, old / "x")
        os.rename(work, dest)
        shutil.rmtree(old)
    else:
        os.rename(work, dest)
    if dest.parent.name in STAGES:
        st = os.stat(dest)  # after the rename: the stamp a scan will see
        journal_append(dest.parent.parent, dest.parent.name, dest.name, (st.st_ino, st.st_mtime_ns), arrow)


def sweep_partials(root: Path) -> None:
    """Remove folders left by a killed writer (their names start with a dot)."""
    if root.is_dir():
        for leftover in root.glob(".*"):
            shutil.rmtree(leftover, ignore_errors=True)


# ------------------------------------------------------------------------------------------ the catalog

CATALOG = "catalog.duckdb"
COMPACTED = "compacted"
MANIFEST = "manifest.json"
ROW_GROUP_ROWS = 122_880  # DuckDB's own row group: one scan thread per group, and zonemaps skip groups on instance_id
ROW_GROUP_BYTES = 32 << 20  # ... or fewer rows where they are wide (a task row holds its patches and issue): compaction holds a row group
MAX_PARTS = 8  # appended parts per table before a compaction merges them into one
COMPACTION_MEMORY = "1GB"  # DuckDB spills its sort to disk beyond this, so compaction memory stays flat


@dataclass(frozen=True)
class PerTask:
    """A table stored as one file per task folder: ``RUN/<stage>/<folder>/<file>.parquet``."""

    stage: str
    file: str
    model: type[BaseModel]


@dataclass(frozen=True)
class RunFile:
    """A table stored as one file of the run: ``RUN/<path>``."""

    path: str
    model: type[BaseModel]


RUN_TABLES: dict[str, PerTask | RunFile] = {
    "tasks": PerTask("p1", "task", TaskRow),
    "runs": PerTask("p1", "runs", RunRecord),
    "assertions": PerTask("p1", "assertions", AssertionRecord),
    "p1_results": PerTask("p1", "result", Pipeline1Result),
    "load_errors": RunFile("load_errors/errors.parquet", LoadError),
    "probes": PerTask("p2", "probes", ProbeResult),
    "probe_counts": PerTask("p2", "counts", ProbeCounts),
    "verdicts": PerTask("p2", "verdict", VerdictRecord),
    "strengthening": PerTask("strengthen", "strengthening", Strengthening),
    "increments": PerTask("increments", "changes", IncrementRecord),  # one folder per scheduled run
    # curation.dedup: written at load time, or by `swedeck dedup` over existing runs
    "fingerprints": RunFile("dedup/fingerprints.parquet", Fingerprint),
    "clusters": RunFile("dedup/clusters.parquet", ClusterMember),
    "duplicates": RunFile("dedup/duplicates.parquet", Duplicate),
    "contamination": RunFile("dedup/contamination.parquet", Contamination),
}
PER_TASK = {view: t for view, t in RUN_TABLES.items() if isinstance(t, PerTask)}
STAGES = sorted({t.stage for t in PER_TASK.values()})

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

Stamp = tuple[int, int]  # a committed folder's (inode, mtime_ns): a replaced folder is a new inode


class Manifest(BaseModel):
    """What ``RUN/compacted/`` holds: the parts of each table and the task folders they cover."""

    model_config = ConfigDict(extra="forbid")

    generation: int = 0
    parts: dict[str, list[str]] = Field(default_factory=dict)  # view -> part files, relative to compacted/
    covered: dict[str, dict[str, Stamp]] = Field(default_factory=dict)  # stage -> folder -> stamp when compacted
    journals: dict[str, int] = Field(default_factory=dict)  # journal -> offset read to


@dataclass(frozen=True)
class Delta:
    """How a stage's folders differ from its compacted parts."""

    fresh: list[str]  # committed, not in any part (new, or replaced since)
    stale: list[str]  # in a part, but replaced or removed since: their part rows are hidden


def load_manifest(run: Path) -> Manifest:
    path = run / COMPACTED / MANIFEST
    return Manifest.model_validate_json(path.read_bytes()) if path.exists() else Manifest()


def scan(stage_dir: Path) -> dict[str, Stamp]:
    """Committed task folders of a stage, by name; dot-folders are a writer's work in progress."""
    found: dict[str, Stamp] = {}
    if not stage_dir.is_dir():
        return found
    for entry in os.scandir(stage_dir):
        if entry.name.startswith(".") or not entry.is_dir(follow_symlinks=False):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except FileNotFoundError:  # replaced this instant by a live run: the next scan sees the new one
            continue
        found[entry.name] = (st.st_ino, st.st_mtime_ns)
    return found


def delta(covered: Mapping[str, Stamp], present: Mapping[str, Stamp]) -> Delta:
    fresh = sorted(name for name, stamp in present.items() if covered.get(name) != stamp)
    stale = sorted(name for name, stamp in covered.items() if present.get(name) != stamp)
    return Delta(fresh, stale)


def _lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _list(paths: Iterable[object]) -> str:
    return "[" + ", ".join(_lit(str(p)) for p in paths) + "]"


def _task_files(stage_dir: Path, folders: Iterable[str]) -> dict[str, set[str]]:
    """The files of each folder (a table added by a later version is absent from older folders). A
    folder gone since its scan (a live run replacing it takes it away for an instant) is left out: the
    next scan sees its new version."""
    found = {}
    for name in folders:
        try:
            found[name] = set(os.listdir(stage_dir / name))
        except FileNotFoundError:
            continue
    return found


def _table_files(stage_dir: Path, files: Mapping[str, set[str]], table: PerTask) -> list[Path]:
    return [stage_dir / name / f"{table.file}.parquet" for name, present in files.items() if f"{table.file}.parquet" in present]


# ---- the commit journal
#
# Reading 100k one-task Parquet files costs ~1 ms each, whoever reads them. So each commit of a task
# folder also appends its tables, as Arrow IPC record batches, to a journal of its writer process
# (``RUN/journal/<host>.<pid>.<token>.journal``), and compaction reads the journals instead of the files.
# Arrow's cost is per batch (~50 µs to read one and as much to concatenate it, whatever its rows), so a
# writer gathers its commits and appends them as one record of one batch per table: every
# JOURNAL_BATCH commits, once the first gathered is JOURNAL_SECONDS old, before a compaction in its
# process and at its exit (its threads append whole records, one O_APPEND writev each). A record is
# trusted, folder by folder, only while the folder it names still has the stamp it names, so a folder
# replaced or removed since, one never journaled (its writer killed before it appended, or a journal
# swept while a writer appended) or one in a torn record (a kill mid-append: short or failing its
# checksum, it ends the journal's reading) only sends compaction back to the folder's files. The
# journal is as durable as the folders it mirrors (neither is fsync'd): it is an index of them, never
# the data of record.

JOURNAL = "journal"
_FRAME = struct.Struct("<4sIQ")  # magic, CRC-32 of the body, body length
_MAGIC = b"SWJ2"  # records of several commits (SWJ1, one commit a record, ends a journal's reading: read from the files)
_META = struct.Struct("<I")  # the body: meta length, meta JSON, then the record batches it places
JOURNAL_BATCH = 64  # commits a writer gathers into one record
JOURNAL_SECONDS = 10.0  # ... or fewer, once the first of them waited this long
JOURNAL_BYTES = 32 << 20  # ... or fewer, once their tables hold this much
FOLD = 512  # journaled batches compaction reads at a time (a one-row batch costs ~10 kB of objects as it is)
SPILL_ROWS = ROW_GROUP_ROWS  # journaled rows compaction holds before it sorts them out to their row groups' spill files
SPILL_BYTES = ROW_GROUP_BYTES  # ... or fewer, once their batches hold this much


@functools.cache
def schema_print(model: type[BaseModel]) -> str:
    """A batch is read with the current schema only if it was written with it; any other goes by its file."""
    return hashlib.sha256(arrow_schema(model).serialize().to_pybytes()).hexdigest()[:16]


_JOURNALS: dict[tuple[int, Path], str] = {}  # (pid, run) -> this writer's journal: a forked child is another writer


def _open_journal(run: Path) -> int:
    """This writer's journal of ``run``; once swept, a new one under a new name, so that a name always
    means one file and the offset compaction read it to stays true."""
    key = (os.getpid(), run)
    if key in _JOURNALS:
        try:
            return os.open(run / JOURNAL / _JOURNALS[key], os.O_WRONLY | os.O_APPEND)
        except FileNotFoundError:
            pass
    (run / JOURNAL).mkdir(exist_ok=True)
    _JOURNALS[key] = f"{socket.gethostname()}.{os.getpid()}.{secrets.token_hex(6)}.journal"
    return os.open(run / JOURNAL / _JOURNALS[key], os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL, 0o644)


Tables = Sequence[tuple[str, type[BaseModel], pa.Table]]


@dataclass
class _Gathered:
    """A run's commits this process has not journaled yet."""

    since: float
    commits: list[tuple[str, str, Stamp, list[tuple[str, str, pa.Table]]]]  # (stage, folder, stamp, (table, schema print, rows))
    nbytes: int = 0


_GATHERED: dict[Path, _Gathered] = {}
_GATHER_LOCK = threading.Lock()
_EXIT_HOOKED = [False]  # this process flushes at its exit


def _forked() -> None:
    """A forked child is another writer: its parent's gathered commits are its parent's to append."""
    global _GATHER_LOCK
    _GATHER_LOCK = threading.Lock()
    _GATHERED.clear()
    _EXIT_HOOKED[0] = False


os.register_at_fork(after_in_child=_forked)


def _hook_exit() -> None:
    """Flush at exit: atexit for a plain process; a multiprocessing child leaves by os._exit after its
    finalizers (which it clears when it starts), so it gets a finalizer of its own."""
    import atexit
    from multiprocessing import util

    atexit.register(_flush_at_exit)
    util.Finalize(None, _flush_at_exit, exitpriority=0)
    _EXIT_HOOKED[0] = True


def _flush_at_exit() -> None:
    try:
        journal_flush()
    except Exception:  # noqa: BLE001, S110 - at exit, nothing is left to tell: the folders are read from their files
        pass


def journal_append(run: Path, stage: str, folder: str, stamp: Stamp, tables: Tables) -> None:
    """Gather one committed folder's tables for this process's journal of ``run``; append the gathered
    commits as one record once there are enough of them."""
    with _GATHER_LOCK:
        if not _EXIT_HOOKED[0]:
            _hook_exit()
        now = time.monotonic()
        gathered = _GATHERED.setdefault(run, _Gathered(now, []))
        gathered.commits.append((stage, folder, stamp, [(name, schema_print(model), table) for name, model, table in tables]))
        gathered.nbytes += sum(table.nbytes for _, _, table in tables)
        if len(gathered.commits) >= JOURNAL_BATCH or gathered.nbytes >= JOURNAL_BYTES or now - gathered.since >= JOURNAL_SECONDS:
            del _GATHERED[run]
            _append_record(run, gathered.commits)


def journal_flush() -> None:
    """Append every commit this process gathered, of every run (a compaction first calls this). A run
    that cannot take its record (its folder removed meanwhile) is passed over: its folders, if any, are
    read from their files."""
    with _GATHER_LOCK:
        while _GATHERED:
            run, gathered = _GATHERED.popitem()
            try:
                _append_record(run, gathered.commits)
            except OSError:
                continue


def _append_record(run: Path, commits: Sequence[tuple[str, str, Stamp, Sequence[tuple[str, str, pa.Table]]]]) -> None:
    """One record of ``commits``: per (stage, table, schema) one batch of their rows in commit order, and
    where each folder's rows lie in it, with their least and greatest instance_id."""
    folders, grouped = [], {}
    for i, (stage, folder, stamp, tables) in enumerate(commits):
        folders.append([stage, folder, *stamp])
        for name, fingerprint, table in tables:
            grouped.setdefault((stage, name, fingerprint), []).append((i, table))
    blobs, index, offset = [], [], 0
    for (stage, name, fingerprint), parts in grouped.items():
        places, row = [], 0
        for i, table in parts:
            if table.num_rows:
                ids = pc.min_max(table["instance_id"]).as_py()
                places.append([i, row, table.num_rows, ids["min"], ids["max"]])
            row += table.num_rows
        tables = [table for _, table in parts if table.num_rows]
        blob = pa.concat_tables(tables).combine_chunks().to_batches()[0].serialize() if tables else b""
        index.append([stage, name, fingerprint, offset, len(blob), places])
        blobs.append(blob)
        offset += len(blob)
    meta = json.dumps({"folders": folders, "tables": index}).encode()
    body = [_META.pack(len(meta)), meta, *blobs]
    crc = functools.reduce(lambda c, part: zlib.crc32(part, c), body, 0)
    fd = _open_journal(run)
    try:
        os.writev(fd, [_FRAME.pack(_MAGIC, crc, sum(len(part) for part in body)), *body])
    finally:
        os.close(fd)


def read_journal(path: Path, start: int, stop: int) -> Iterator[tuple[int, int, dict]]:
    """The whole records of a journal from ``start`` to ``stop``: where each one's batches begin, where it
    ends, its meta. Reading stops at a torn or corrupt record (its writer was killed, or is writing now)."""
    body = bytearray()  # one buffer for every record's body: a new one each is a fresh mapping to fault in
    with open(path, "rb", buffering=0) as f:
        f.seek(start)
        at = start
        while at + _FRAME.size <= stop:
            magic, crc, length = _FRAME.unpack(f.read(_FRAME.size))
            if magic != _MAGIC or at + _FRAME.size + length > stop:
                return
            if len(body) < length:
                body = bytearray(length)
            view, got = memoryview(body)[:length], 0
            while got < length and (n := f.readinto(view[got:])):
                got += n
            if got != length or zlib.crc32(view) != crc:
                return
            (size,) = _META.unpack_from(view)
            end = at + _FRAME.size + length
            yield at + _FRAME.size + _META.size + size, end, json.loads(view[_META.size : _META.size + size].tobytes())
            at = end


def list_journals(run: Path) -> dict[str, int]:
    """Each journal's size."""
    return {entry.name: entry.stat().st_size for entry in os.scandir(run / JOURNAL)} if (run / JOURNAL).is_dir() else {}


@dataclass
class Journaled:
    """Where the rows of fresh folders lie in the journals, per view, and which folders they serve."""

    journals: list[Path]
    batches: dict[str, list[tuple[int, int, int]]]  # view -> (journal, offset, length) of each batch holding its rows, in journal order
    folders: dict[str, list[str]]  # view -> the folders it has rows of
    first: dict[str, list[str]]  # view -> the least instance_id of each folder's rows, their place in the part
    places: dict[str, array.array]  # view -> (batch, first row, rows) of each folder's rows, flat
    mixed: set[str]  # views with a folder of several instance_ids (an increments folder): their rows need a sort
    odd: dict[str, list[Path]]  # view -> files of journaled folders written with another schema
    served: dict[str, set[str]]  # stage -> folders the journals hold
    consumed: dict[str, int]  # journal -> offset read to


def index_journals(run: Path, listed: Mapping[str, int], read: Mapping[str, int], fresh: Mapping[str, Mapping[str, Stamp]]) -> Journaled:
    """Index the journal records, past what earlier compactions ``read``, of the ``fresh`` folders as
    they are now (stage -> folder -> stamp)."""
    views = {(t.stage, t.file): view for view, t in PER_TASK.items()}
    prints = {view: schema_print(t.model) for view, t in PER_TASK.items()}
    found = Journaled(journals=[], batches={v: [] for v in PER_TASK}, folders={v: [] for v in PER_TASK}, first={v: [] for v in PER_TASK},
                      places={v: array.array("q") for v in PER_TASK}, mixed=set(), odd={v: [] for v in PER_TASK},
                      served={stage: set() for stage in fresh}, consumed={})  # fmt: skip
    for name, size in listed.items():
        start = read.get(name, 0)
        path = run / JOURNAL / name
        found.journals.append(path)
        j, offset = len(found.journals) - 1, start
        for data, offset, meta in read_journal(path, start, size):
            live = []
            for stage, folder, ino, mtime in meta["folders"]:
                # covered already, replaced or removed since, or journaled twice (once is enough)
                ok = fresh.get(stage, {}).get(folder) == (ino, mtime) and folder not in found.served[stage]
                if ok:
                    found.served[stage].add(folder)
                live.append(ok)
            for stage, file, fingerprint, at, length, places in meta["tables"]:
                view = views.get((stage, file))
                if view is None:
                    continue
                batch = None
                for i, row, rows, lo, hi in places:
                    if not live[i]:
                        continue
                    folder = meta["folders"][i][1]
                    if fingerprint != prints[view]:
                        found.odd[view].append(run / stage / folder / f"{file}.parquet")
                        continue
                    if batch is None:
                        batch = len(found.batches[view])
                        found.batches[view].append((j, data + at, length))
                    found.folders[view].append(folder)
                    found.first[view].append(sys.intern(lo))  # one string for all tables of a folder
                    found.places[view].extend((batch, row, rows))
                    if lo != hi:
                        found.mixed.add(view)
        found.consumed[name] = offset
    return found


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


# ---- views


def _run_selects(run: Path, con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """One SELECT per view of this run that has any data: compacted parts (minus rows of folders
    replaced since), the task files no part covers, the lineage column ``run``."""
    run = run.resolve()
    manifest = load_manifest(run)
    deltas = {stage: delta(manifest.covered.get(stage, {}), scan(run / stage)) for stage in STAGES}
    files = {stage: _task_files(run / stage, d.fresh) for stage, d in deltas.items()}
    for stage, d in deltas.items():
        if d.stale:
            con.executemany("INSERT INTO _stale_folders VALUES (?, ?, ?)", [(str(run), stage, f) for f in d.stale])
    selects = {}
    for view, table in RUN_TABLES.items():
        parts = []
        if isinstance(table, RunFile):
            if (run / table.path).exists():
                parts.append(f"SELECT * FROM read_parquet({_lit(str(run / table.path))})")
        else:
            if manifest.parts.get(view):
                stale = deltas[table.stage].stale
                hidden = (f" WHERE _folder NOT IN (SELECT folder FROM _stale_folders WHERE run = {_lit(str(run))} "
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
    con.execute("CREATE TABLE _stale_folders (run VARCHAR, stage VARCHAR, folder VARCHAR)")
    per_run = [_run_selects(run, con) for run in runs]
    for view, table in RUN_TABLES.items():
        selects = [s[view] for s in per_run if view in s]
        if selects:
            con.execute(f"CREATE VIEW {view} AS " + " UNION ALL BY NAME ".join(selects))
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
    """(Re)create ``db_path`` with one view per name over one Parquet file; a missing file still gets a
    typed, empty view so queries never fail for want of it. Views name their files relative to the
    catalog's folder, so the folder (a deck) can be copied or moved: open it with ``connect``."""
    folder = db_path.resolve().parent
    with _new_database(db_path) as con:
        con.execute(f"SET file_search_path = {_lit(str(folder))}")  # a session setting: never stored in the file
        for name, (path, model) in views.items():
            if Path(path).exists():
                con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet({_lit(os.path.relpath(Path(path).resolve(), folder))})")
            else:
                _create_empty(con, name, model)


def connect(db_path: Path) -> duckdb.DuckDBPyConnection:
    """A catalog file opened read-only, with relative file names resolved from its own folder (DuckDB's
    ``file_search_path``; plain ``duckdb`` run in that folder resolves them too)."""
    import duckdb

    return duckdb.connect(str(db_path), read_only=True, config={"file_search_path": str(db_path.resolve().parent)})
