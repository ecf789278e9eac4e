"""Where a run's tables live (per task folder or per run), the compacted parts' manifest, and scans of committed folders."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

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

CATALOG = "catalog.duckdb"
COMPACTED = "compacted"
MANIFEST = "manifest.json"


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
