"""The commit journal: each writer's commits appended as Arrow record batches, and read back as an index of fresh folders."""

from __future__ import annotations

import array
import functools
import hashlib
import json
import os
import secrets
import socket
import struct
import sys
import threading
import time
import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from pydantic import BaseModel

from curation.store.layout import PER_TASK, Stamp
from curation.store.schema import arrow_schema

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
