"""Parquet files written once per item, and a DuckDB catalog of views over them.

Arrow schemas derive from the record models in ``harness.records``; nothing here declares a column.
A task's results land in a folder that appears atomically (written aside, then renamed), so a run
killed at any moment leaves either a complete folder or none, and a rerun redoes only what is missing.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import types
import typing
from collections.abc import Iterable, Sequence
from enum import Enum
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import BaseModel

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


def write_records(path: Path, model: type[BaseModel], records: Sequence[BaseModel]) -> None:
    table = pa.Table.from_pylist([r.model_dump(mode="json") for r in records], schema=arrow_schema(model))
    pq.write_table(table, path, compression="zstd")


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
    version of it."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    for name, model, records in tables:
        write_records(work / f"{name}.parquet", model, records)
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


def sweep_partials(root: Path) -> None:
    """Remove folders left by a killed writer (their names start with a dot)."""
    if root.is_dir():
        for leftover in root.glob(".*"):
            shutil.rmtree(leftover, ignore_errors=True)


def build_catalog(db_path: Path, views: dict[str, tuple[str, type[BaseModel]]]) -> None:
    """(Re)create ``db_path`` with one view per name over a Parquet glob; an empty glob still gets a
    typed, empty view so queries never fail for want of files."""
    import duckdb

    tmp = db_path.with_name(db_path.name + ".tmp")
    tmp.unlink(missing_ok=True)
    con = duckdb.connect(str(tmp))
    try:
        for name, (glob, model) in views.items():
            if any(Path("/").glob(glob.lstrip("/"))):
                con.execute(
                    f"CREATE VIEW {name} AS SELECT * FROM read_parquet('{glob}', union_by_name=true)"
                )
            else:
                empty = pa.Table.from_pylist([], schema=arrow_schema(model))
                con.register("_empty", empty)
                con.execute(f"CREATE TABLE {name} AS SELECT * FROM _empty")
                con.unregister("_empty")
    finally:
        con.close()
    os.replace(tmp, db_path)
