"""An item's folder of tables committed atomically (a run's task folder also journaled); a killed writer's leftovers swept."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

import pyarrow.parquet as pq
from pydantic import BaseModel

from curation.store.journal import journal_append
from curation.store.layout import STAGES
from curation.store.schema import to_arrow


def commit_folder(
    dest: Path,
    tables: Iterable[tuple[str, type[BaseModel], Sequence[BaseModel]]],
    files: dict[str, str] | None = None,
    copies: dict[str, Path] | None = None,
) -> None:
    """Write every table (and plain file, and copy of a file) of one item into ``dest`` atomically,
    replacing an older version of it. A task folder of a run stage (``RUN/<stage>/<folder>``) is also journaled."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    arrow = [(name, model, to_arrow(model, records)) for name, model, records in tables]
    for name, _, table in arrow:
        pq.write_table(table, work / f"{name}.parquet", compression="zstd")
    for name, text in (files or {}).items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(text)
    for name, source in (copies or {}).items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, work / name)
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
