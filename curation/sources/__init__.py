"""Corpus adapters: rows of R2E-Gym, SWE-rebench V2, Scale-SWE, SWE-bench and SWE-Gym -> Task.

Each corpus has one module with ``to_task(row) -> Task`` that raises ``RowError(field, message)`` for a
row it cannot take. ``load_rows`` runs an adapter over many rows and turns every failure into a
``LoadError`` naming the row and field, so one bad row never stops a corpus from loading.
"""

from __future__ import annotations

import os
from pathlib import Path
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from curation.sources import r2e_gym, scale_swe, swe_bench, swe_rebench
from curation.sources.base import RowError
from harness.records import LoadError, Task

ADAPTERS: dict[str, Callable[[Mapping[str, Any]], Task]] = {
    "r2e_gym": r2e_gym.to_task,
    "swe_rebench_v2": swe_rebench.to_task,
    "scale_swe": scale_swe.to_task,
    "swe_bench": swe_bench.swe_bench_task,
    "swe_gym": swe_bench.swe_gym_task,
}
_BUILDERS = {".parquet": "parquet", ".jsonl": "json", ".json": "json", ".arrow": "arrow"}
_SWE_BENCH_COLUMNS = {"instance_id", "repo", "base_commit", "patch", "test_patch", "FAIL_TO_PASS", "PASS_TO_PASS"}


class LoadResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tasks: list[Task]
    errors: list[LoadError]


def detect_corpus(columns: set[str]) -> str:
    """The corpus whose column layout this is; ValueError when none matches.

    SWE-bench and SWE-Gym share columns; without ``environment_setup_commit`` the rows are SWE-Gym's
    (``load_corpus_file`` also checks that the id columns are list-typed).
    """
    columns = set(columns)
    if "parsed_commit_content" in columns or {"docker_image", "commit_hash", "expected_output_json"} <= columns:
        return "r2e_gym"
    if "install_config" in columns or {"image_name", "test_patch"} <= columns:
        return "swe_rebench_v2"
    if "image_url" in columns or {"f2p_patch", "f2p_script", "parent_commit"} & columns:
        return "scale_swe"
    if columns >= _SWE_BENCH_COLUMNS:
        return "swe_bench" if "environment_setup_commit" in columns else "swe_gym"
    raise ValueError(f"no corpus has this column layout: {sorted(columns)}")


def load_rows(corpus: str, rows: Iterable[Mapping[str, Any]], location: str) -> LoadResult:
    """Every row through ``corpus``'s adapter; failures become LoadErrors at ``{location}#row{i}``."""
    try:
        adapter = ADAPTERS[corpus]
    except KeyError:
        raise ValueError(f"unknown corpus {corpus!r}; known: {', '.join(ADAPTERS)}") from None
    tasks: list[Task] = []
    errors: list[LoadError] = []
    for i, row in enumerate(rows):
        where = f"{location}#row{i}"
        try:
            tasks.append(adapter(row))
        except RowError as err:
            errors.append(LoadError(source=corpus, location=where, field=err.field, message=err.message))
        except ValidationError as err:
            first = err.errors()[0]
            field = "task." + ".".join(str(part) for part in first["loc"]) if first["loc"] else "task"
            errors.append(
                LoadError(
                    source=corpus, location=where, field=field, message=f"{first['msg']} ({err.error_count()} error(s))"
                )
            )
        except Exception as err:  # a row shape the adapter did not foresee: recorded, not fatal
            errors.append(
                LoadError(
                    source=corpus, location=where, field="", message=f"{type(err).__name__}: {err}", stage="our_code"
                )
            )
    return LoadResult(tasks=tasks, errors=errors)


def load_corpus_file(path: str, corpus: str | None = None) -> LoadResult:
    """Load a local .parquet/.jsonl/.json/.arrow file, or a Hugging Face hub id, through ``datasets``.

    ``corpus`` is detected from the columns when not given.
    """
    from datasets import load_dataset

    if os.path.isfile(path):
        ext = os.path.splitext(path)[1].lower()
        if ext not in _BUILDERS:
            raise ValueError(f"{path}: unsupported file type {ext!r} (expected one of {', '.join(_BUILDERS)})")
        dataset = load_dataset(_BUILDERS[ext], data_files=path, split="train")
    else:
        dataset = load_dataset(path, split="train")
    if corpus is None:
        corpus = _refine(detect_corpus(set(dataset.column_names)), dataset.features)
    return load_rows(corpus, dataset, path)


def _refine(corpus: str, features: Mapping[str, Any]) -> str:
    """SWE-bench family: list-typed id columns mean SWE-Gym, string-typed mean SWE-bench."""
    if corpus != "swe_gym":
        return corpus
    feature = features.get("FAIL_TO_PASS")
    dtype = getattr(feature, "dtype", None)
    if type(feature).__name__ == "Value" and dtype in ("string", "large_string"):
        return "swe_bench"
    return corpus


def load_source(path: str | Path) -> LoadResult:
    """Any source: a task folder, a folder of task folders, a corpus file, or a hub id."""
    from curation.sources.local import load_folders

    if Path(path).is_dir():
        tasks, errors = load_folders(Path(path))
        return LoadResult(tasks=tasks, errors=errors)
    return load_corpus_file(str(path))


def load_sources(paths: Iterable[str | Path]) -> LoadResult:
    results = [load_source(p) for p in paths]
    return LoadResult(tasks=[t for r in results for t in r.tasks], errors=[e for r in results for e in r.errors])


def find_task(instance_id: str, paths: Iterable[str | Path]) -> Task:
    """A task by id (or by task-folder path); KeyError naming the sources searched when absent."""
    from curation.sources.local import is_task_folder, load_task_folder

    if Path(instance_id).is_dir() and is_task_folder(Path(instance_id)):
        return load_task_folder(Path(instance_id))
    paths = list(paths)
    for task in load_sources(paths).tasks:
        if task.instance_id == instance_id:
            return task
    raise KeyError(f"no task {instance_id!r} in {', '.join(map(str, paths))}")


__all__ = [
    "ADAPTERS", "LoadResult", "RowError", "detect_corpus", "find_task", "load_corpus_file", "load_rows",
    "load_source", "load_sources",
]  # fmt: skip
