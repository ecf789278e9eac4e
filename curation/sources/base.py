"""What every corpus adapter shares: the row error, column readers, and unified-diff handling.

An adapter turns one corpus row into a :class:`harness.records.Task` or raises :class:`RowError` naming
the column at fault. Nothing here knows about a particular corpus except the test-file heuristics, which
are named after the harness they come from.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import PurePosixPath
from typing import Any

from harness.grading.diffs import (
    NON_TEST_EXTENSIONS,
    FileDiff,
    file_diff,
    is_r2e_test_path,
    is_test_directive,
    patch_paths,
    split_diff,
    unique,
)
from harness.records import Answer, HiddenTests


class RowError(Exception):
    """A corpus row that cannot become a Task; ``field`` names the column (or ``column.key``) at fault."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


# ------------------------------------------------------------------------------------------- columns


def _type_name(value: Any) -> str:
    return type(value).__name__


def require(row: Mapping[str, Any], field: str) -> Any:
    """The column's value; a column that is absent or null is an error (Parquet fills absent cells with null)."""
    value = row.get(field)
    if value is None:
        raise RowError(field, "missing required column")
    return value


def require_str(row: Mapping[str, Any], field: str, *, allow_empty: bool = False) -> str:
    value = require(row, field)
    if not isinstance(value, str):
        raise RowError(field, f"expected a string, got {_type_name(value)}")
    if not allow_empty and not value.strip():
        raise RowError(field, "is empty")
    return value


def optional_str(row: Mapping[str, Any], field: str, default: str = "") -> str:
    """A string column that may be absent, null or empty (then ``default``)."""
    value = row.get(field)
    if value is None:
        return default
    if not isinstance(value, str):
        raise RowError(field, f"expected a string, got {_type_name(value)}")
    return value if value.strip() else default


def decode_json(value: Any, field: str) -> Any:
    """A structured value that may arrive decoded (dict/list) or as a JSON string."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError as err:
            raise RowError(field, f"is not valid JSON ({err.msg} at line {err.lineno} column {err.colno})") from None
    return value


def json_object(row: Mapping[str, Any], field: str) -> dict[str, Any]:
    """A required column holding a JSON object, given as a dict or as a JSON string."""
    value = decode_json(require(row, field), field)
    if not isinstance(value, Mapping):
        raise RowError(field, f"expected a JSON object, got {_type_name(value)}")
    return dict(value)


def id_list(row: Mapping[str, Any], field: str) -> list[str]:
    """A list of test ids: a native list (SWE-Gym, SWE-rebench V2) or a JSON-encoded list (SWE-bench, Scale-SWE)."""
    raw = require(row, field)
    if not isinstance(raw, (str, list, tuple)):
        raise RowError(field, f"expected a list of test ids or a JSON list string, got {_type_name(raw)}")
    try:
        value = decode_json(raw, field)
    except RowError as err:
        raise RowError(field, f"is a string but not a JSON-encoded list: {err.message}") from None
    if not isinstance(value, (list, tuple)):
        raise RowError(field, f"expected a list of test ids, the JSON decodes to {_type_name(value)}")
    bad = [i for i, item in enumerate(value) if not isinstance(item, str)]
    if bad:
        raise RowError(field, f"item {bad[0]} is {_type_name(value[bad[0]])}, expected a string test id")
    return list(value)


def leaky_columns(row: Mapping[str, Any], names: Iterable[str]) -> dict[str, str]:
    """The named columns that are present, for ``Answer.leaky_columns``.

    Text columns are kept verbatim (several already hold JSON); structured ones (lists, structs) are
    JSON-encoded with sorted keys so the value is stable across Parquet/JSON round trips.
    """
    out: dict[str, str] = {}
    for name in names:
        value = row.get(name)
        if value is None:
            continue
        out[name] = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return out


def relative_path(path: str, field: str) -> str:
    """A path that stays inside the workdir (no absolute path, no ``..``)."""
    p = PurePosixPath(path)
    if not path or p.is_absolute() or ".." in p.parts:
        raise RowError(field, f"{path!r} is not a relative path inside the repository")
    return str(p)


def conda_activation(*prefixes: str, env: str = "testbed") -> str:
    """Activate a conda env, trying each installation prefix in turn (images differ in where conda lives)."""
    if len(prefixes) == 1:
        return f"source {prefixes[0]}/bin/activate {env}"
    return " || ".join(f"{{ [ -e {p}/bin/activate ] && source {p}/bin/activate {env}; }}" for p in prefixes)


def parse_patch(patch: str, field: str) -> list[FileDiff]:
    """split_diff, with the error as a RowError on ``field``."""
    try:
        return split_diff(patch)
    except ValueError as err:
        raise RowError(field, str(err)) from None


# kept beside the leaky columns though it leaks nothing: a deck's SWE-bench ``version`` column reads it,
# and SWE-bench's harness keys a repository's environment spec by it
VERSION = "version"


def pr_answer(row: Mapping[str, Any], leaky: Iterable[str]) -> tuple[Answer, list[FileDiff]]:
    """The answer of a SWE-bench-shaped row (``patch``, ``test_patch``, FAIL_TO_PASS, PASS_TO_PASS), and
    the hidden test patch's files, from which adapters take test paths and runner directives. The
    row's ``version``, where it has one, is kept with the leaky columns."""
    gold = require_str(row, "patch")
    parse_patch(gold, "patch")
    test_patch = require_str(row, "test_patch")
    hidden = parse_patch(test_patch, "test_patch")
    answer = Answer(
        gold_patch=gold,
        hidden_tests=HiddenTests(patch=test_patch),
        fail_to_pass=id_list(row, "FAIL_TO_PASS"),
        pass_to_pass=id_list(row, "PASS_TO_PASS"),
        leaky_columns=leaky_columns(row, [*leaky, VERSION]),
    )
    return answer, hidden




__all__ = [
    "NON_TEST_EXTENSIONS", "FileDiff", "RowError", "file_diff", "is_r2e_test_path", "is_test_directive",
    "parse_patch", "patch_paths", "pr_answer", "split_diff", "unique",
]  # fmt: skip
