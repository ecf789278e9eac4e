"""Arrow schemas derived from the record models in ``harness.records``, and Parquet files of records."""

from __future__ import annotations

import functools
import types
import typing
from collections.abc import Sequence
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
