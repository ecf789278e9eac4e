"""Corpus adapters: rows of R2E-Gym, SWE-rebench V2, Scale-SWE, SWE-bench and SWE-Gym -> Task.

Each corpus has one module with ``to_task(row) -> Task`` that raises ``RowError(field, message)`` for a
row it cannot take. ``load_rows`` runs an adapter over many rows and turns every failure into a
``LoadError`` naming the row and field, so one bad row never stops a corpus from loading.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import BaseModel, ConfigDict, ValidationError

from curation.sources import r2e_gym, scale_swe, swe_bench, swe_rebench
from curation.sources.base import RowError
from curation.sources.recipes import RepoCache, other_language
from harness.config import UserError
from harness.names import id_problem
from harness.grading.parsers import UnsupportedParser, check_parser
from harness.records import Fingerprint, LoadError, Role, Task

ADAPTERS: dict[str, Callable[[Mapping[str, Any]], Task]] = {
    "r2e_gym": r2e_gym.to_task,
    "swe_rebench_v2": swe_rebench.to_task,
    "swe_rebench_v1": swe_rebench.v1_task,
    "scale_swe": scale_swe.to_task,
    "swe_bench": swe_bench.swe_bench_task,
    "swe_gym": swe_bench.swe_gym_task,
}
# Per row: the schema version it follows and what the adapter reads of it (SWE-bench varies row by row)
_VERSIONS: dict[str, Callable[[Mapping[str, Any]], tuple[str, str]]] = {
    "swe_bench": swe_bench.version,
    "swe_gym": lambda row: ("SWE-Gym", "list ids, image from the instance id"),
    "swe_rebench_v2": lambda row: ("SWE-rebench V2", "image_name, install_config.test_cmd and log_parser"),
    "swe_rebench_v1": lambda row: ("SWE-rebench v1", "docker_image, SWE-bench install spec"),
    "r2e_gym": lambda row: ("R2E-Gym", "patches rebuilt from parsed_commit_content"),
    "scale_swe": lambda row: ("Scale-SWE", "image_url, f2p_patch/f2p_script"),
}
_SWE_BENCH_COLUMNS = {"instance_id", "repo", "base_commit", "patch", "test_patch", "FAIL_TO_PASS", "PASS_TO_PASS"}
_V1_MARKS = ("docker_image", "FAIL_TO_FAIL", "PASS_TO_FAIL", "environment_setup_commit", "version")


class SourceError(UserError):
    """A source that cannot be read at all (no such file, a hub dataset out of reach): one line to show."""


class Detection(BaseModel):
    """Which adapter read a source's rows, which schema version they follow, and why."""

    model_config = ConfigDict(extra="forbid")

    location: str
    corpus: str
    version: str
    rows: int
    reason: str


class LoadResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tasks: list[Task]
    errors: list[LoadError]
    detected: list[Detection] = []
    fingerprints: list[Fingerprint] = []  # one per task, in order (``curation.fingerprints``)


def detect(columns: set[str]) -> tuple[str, str]:
    """``(corpus, why)`` for a column layout; ValueError naming what each corpus needs when none matches.

    SWE-bench and SWE-Gym share columns; without ``environment_setup_commit`` or ``eval_script`` the
    rows are SWE-Gym's (``load_corpus_file`` also checks that the id columns are list-typed).
    """
    columns = set(columns)
    if "parsed_commit_content" in columns or {"docker_image", "commit_hash", "expected_output_json"} <= columns:
        return "r2e_gym", "R2E-Gym columns (parsed_commit_content, expected_output_json)"
    if "image_name" in columns and ({"install_config", "test_patch"} & columns):
        return "swe_rebench_v2", "install_config with image_name (SWE-rebench V2)"
    if "install_config" in columns:
        marks = [c for c in _V1_MARKS if c in columns]
        if marks:
            return "swe_rebench_v1", f"install_config without image_name, with {', '.join(marks)} (SWE-rebench v1)"
        return "swe_rebench_v2", "install_config without v1 columns (SWE-rebench V2)"
    if "image_url" in columns or {"f2p_patch", "f2p_script", "parent_commit"} & columns:
        return "scale_swe", "Scale-SWE columns (image_url, f2p_patch, f2p_script, parent_commit)"
    if columns >= _SWE_BENCH_COLUMNS:
        if "eval_script" in columns:
            return "swe_bench", "SWE-bench columns, eval_script in some rows"
        if "environment_setup_commit" in columns:
            return "swe_bench", "SWE-bench columns with environment_setup_commit"
        return "swe_gym", "SWE-bench columns without environment_setup_commit (SWE-Gym)"
    raise ValueError(
        f"no corpus has this column layout: {sorted(columns)}; expected R2E-Gym's parsed_commit_content, "
        "SWE-rebench's install_config, Scale-SWE's image_url or SWE-bench's "
        f"{', '.join(sorted(_SWE_BENCH_COLUMNS))}"
    )


def detect_corpus(columns: set[str]) -> str:
    """The corpus whose column layout this is; ValueError when none matches."""
    return detect(columns)[0]


Located = tuple[str, Any]  # (file#row or file#line, the decoded row, or why it could not be decoded)


def load_rows(corpus: str, rows: Iterable[Mapping[str, Any]], location: str, repo_cache: RepoCache | None = None,
              role: Role | None = None) -> LoadResult:  # fmt: skip
    """Every row through ``corpus``'s adapter; failures become LoadErrors at ``{location}#row{i}``."""
    return _adapt(corpus, [(f"{location}#row{i}", row) for i, row in enumerate(rows)], location, "given", repo_cache, role)


def _adapt(corpus: str, rows: list[Located], location: str, reason: str, repo_cache: RepoCache | None = None,
           role: Role | None = None) -> LoadResult:  # fmt: skip
    """Each row through the adapter, in order; a row that could not be decoded arrives as the reason
    why (a string) and is recorded like any other bad row. With a repository cache, a row whose
    image cannot run here and whose repository is cached becomes a recipe task (``recipes``). With a
    ``role`` ("train" or "eval"), each task's fingerprint is taken from its row; without one (listing
    or finding tasks) none is."""
    try:
        adapter = ADAPTERS[corpus]
    except KeyError:
        raise ValueError(f"unknown corpus {corpus!r}; known: {', '.join(ADAPTERS)}") from None
    tasks: list[Task] = []
    errors: list[LoadError] = []
    versions: dict[tuple[str, str], int] = {}
    made: list[tuple[Task, Mapping[str, Any], str, str]] = []  # for the fingerprints: task, row, version, where
    from_recipe = 0
    image_only: dict[str, int] = {}  # V2 rows in languages a recipe cannot build, by language
    for where, row in rows:
        if not isinstance(row, str):
            version = _VERSIONS[corpus](row)
            versions[version] = versions.get(version, 0) + 1
        try:
            if isinstance(row, str):
                raise RowError("json", row)
            task = adapter(row)
            if repo_cache is not None:
                resolved = repo_cache.resolve(task, row)
                from_recipe += resolved is not task
                if language := other_language(task, row):
                    image_only[language] = image_only.get(language, 0) + 1
                task = resolved
            problem = id_problem(task.instance_id)
            if problem:  # an id is a name: a path-like one would put results outside the run folder
                raise RowError("instance_id", problem)
            check_parser(task.log_parser)
            tasks.append(task)
            made.append((task, row, version[0], where))
        except UnsupportedParser as err:  # the row is fine; nothing here can grade it
            errors.append(
                LoadError(source=corpus, location=where, field="log_parser", message=str(err), stage="unsupported_parser")
            )
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
    if corpus == "swe_rebench_v2":
        tasks, asked = swe_rebench.with_image_workdirs(tasks)
        reason += f"; workdir from the image for {asked} of {len(tasks)} rows, else /<repo-name>"
    if repo_cache is not None:
        reason += f"; {from_recipe} of {len(tasks)} rows built from a recipe (Recipe.origin says which), the repository from {repo_cache.root}"
        if image_only:
            languages = ", ".join(f"{n} {language}" for language, n in sorted(image_only.items()))
            reason += f"; rows in other languages than Python keep their image ({languages}): the base root filesystem has Python's toolchain only"
    detected = [
        Detection(location=location, corpus=corpus, version=version, rows=n, reason=f"{reason}; {why}")
        for (version, why), n in versions.items()
    ]
    return LoadResult(tasks=tasks, errors=errors, detected=detected, fingerprints=fingerprints(made, role))


def load_corpus_file(path: str, corpus: str | None = None, repo_cache: RepoCache | None = None, role: Role | None = None) -> LoadResult:
    """Load a local .parquet/.jsonl/.json/.arrow file row by row, or a Hugging Face hub id.

    A line that is not a JSON object is a LoadError at ``{path}#line{n}`` and the other rows still
    load. Local files are read in memory and nothing is written; a hub dataset is cached under the
    swedeck cache (``SWEDECK_CACHE``), never in the Hugging Face default. ``corpus`` is detected from
    the columns when not given. ``repo_cache``: see ``recipes``.
    """
    if os.path.isfile(path):
        rows = _file_rows(path)
    else:
        check_local([path])
        rows = _hub_rows(path)
    decoded = [row for _, row in rows if not isinstance(row, str)]
    reason = "given by the caller"
    if corpus is None:
        try:
            corpus, reason = _refine(*detect({column for row in decoded for column in row}), decoded)
        except ValueError as err:
            if decoded:
                error = LoadError(source="", location=path, field="columns", message=str(err), stage="corpus_file")
                return LoadResult(tasks=[], errors=[error])
            corpus = "unknown"  # nothing decoded: every row is an error of its own below
    return _adapt(corpus, rows, path, reason, repo_cache, role) if corpus in ADAPTERS else _undecoded(corpus, rows)


def _undecoded(corpus: str, rows: list[Located]) -> LoadResult:
    errors = [LoadError(source=corpus, location=where, field="json", message=why) for where, why in rows]
    return LoadResult(tasks=[], errors=errors)


def _file_rows(path: str) -> list[Located]:
    ext = os.path.splitext(path)[1].lower()
    if ext not in _READERS:
        raise SourceError(f"{path}: unsupported file type {ext!r} (expected one of {', '.join(_READERS)})")
    return _READERS[ext](path)


def _json_lines(path: str) -> list[Located]:
    rows: list[Located] = []
    with open(path, encoding="utf-8", errors="replace") as lines:
        for n, line in enumerate(lines, 1):
            if line.strip():
                rows.append((f"{path}#line{n}", _json_object(line)))
    return rows


def _json_object(text: str) -> dict | str:
    try:
        row = json.loads(text)
    except json.JSONDecodeError as err:
        return f"not valid JSON: {err.msg} at column {err.colno}: {text.strip()[:80]!r}"
    return _object_or_why(row)


def _object_or_why(row: Any) -> dict | str:
    return row if isinstance(row, dict) else f"expected a JSON object, got {type(row).__name__}"


def _json(path: str) -> list[Located]:
    """A JSON array of rows, or JSON lines (the Hugging Face json builder takes both)."""
    try:
        rows = json.loads(Path(path).read_text(encoding="utf-8", errors="replace"))
    except json.JSONDecodeError:
        return _json_lines(path)
    if not isinstance(rows, list):
        return _json_lines(path)
    return [(f"{path}#row{i}", _object_or_why(row)) for i, row in enumerate(rows)]


def _table_rows(path: str, read: Callable[[str], pa.Table]) -> list[Located]:
    try:
        rows = read(path).to_pylist()
    except (pa.ArrowException, OSError) as err:
        return [(path, f"unreadable: {type(err).__name__}: {err}")]
    return [(f"{path}#row{i}", row) for i, row in enumerate(rows)]


def _arrow_table(path: str) -> pa.Table:
    """An Arrow IPC stream (what ``datasets`` writes), else an Arrow IPC file."""
    with pa.memory_map(path) as source:
        try:
            return pa.ipc.open_stream(source).read_all()
        except pa.ArrowInvalid:
            source.seek(0)
            return pa.ipc.open_file(source).read_all()


_READERS: dict[str, Callable[[str], list[Located]]] = {
    ".jsonl": _json_lines,
    ".json": _json,
    ".parquet": lambda path: _table_rows(path, pq.read_table),
    ".arrow": lambda path: _table_rows(path, _arrow_table),
}


def _hub_rows(name: str) -> list[Located]:
    """A hub dataset's train split, cached under the swedeck cache. Offline (``HF_HUB_OFFLINE`` or
    ``HF_DATASETS_OFFLINE``) without a cached copy fails at once, before ``datasets`` is imported: it
    would otherwise retry for tens of seconds."""
    from harness.config import Settings

    cache = Settings.from_env().cache_dir / "huggingface"
    if _hub_offline() and not _hub_cached(cache, name):
        raise SourceError(
            f"{name}: not a local file or folder, and the Hugging Face hub is offline (HF_HUB_OFFLINE) "
            f"with no copy cached under {cache}"
        )
    if not _hub_cached(cache, name) and not _hub_reachable():
        raise SourceError(f"{name}: no such local file or folder, and the Hugging Face hub is unreachable from here "
                          "(its host name does not resolve): check the path, or the network")
    from datasets import load_dataset

    try:
        dataset = load_dataset(name, split="train", cache_dir=str(cache))
    except (OSError, ValueError) as err:  # connection, not found, gated, no such split: all unreadable here
        reason = str(err).strip().splitlines()[0] if str(err).strip() else ""
        raise SourceError(f"{name}: no such local file or folder, and the Hugging Face hub dataset cannot be loaded: "
                          f"{type(err).__name__}: {reason}") from None
    return [(f"{name}#row{i}", row) for i, row in enumerate(dataset)]


def _local_looking(name: str) -> bool:
    """A name no hub id has (ids are ``name`` or ``owner/name``), or whose first part is a folder here
    (``data/sampel`` beside ``data/``): a typo of a local path, not a dataset to look for on the hub."""
    parts = name.split("/")
    return name.startswith((".", "/", "~")) or len(parts) > 2 or (len(parts) == 2 and Path(parts[0]).is_dir())


def _hub_reachable(timeout_s: float = 5.0) -> bool:
    """Whether the hub's host name resolves: without a network ``datasets`` retries for half a minute."""
    import socket
    import threading
    from urllib.parse import urlsplit

    from huggingface_hub import constants

    answered, resolved = threading.Event(), []

    def resolve() -> None:
        try:
            resolved.append(socket.getaddrinfo(urlsplit(constants.ENDPOINT).hostname, 443))
        except OSError:
            pass
        answered.set()

    threading.Thread(target=resolve, daemon=True).start()  # a resolver that hangs is waited for timeout_s
    return answered.wait(timeout_s) and bool(resolved)


def _hub_offline() -> bool:
    return any(os.environ.get(v, "").upper() in ("1", "ON", "YES", "TRUE") for v in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"))


def _hub_cached(cache: Path, name: str) -> bool:
    """Whether ``datasets`` has a copy of ``name`` in ``cache`` (its folder ``namespace___name``, with
    the dataset part in whatever case and separators the datasets version chose)."""

    def key(text: str) -> str:
        return text.lower().replace("-", "").replace("_", "")

    wanted = key(name.replace("/", "___"))
    return cache.is_dir() and any(key(child.name) == wanted for child in cache.iterdir())


def _refine(corpus: str, reason: str, rows: list[Mapping[str, Any]]) -> tuple[str, str]:
    """SWE-bench family: list ids mean SWE-Gym, JSON-encoded string ids mean SWE-bench."""
    if corpus != "swe_gym":
        return corpus, reason
    first = next((row["FAIL_TO_PASS"] for row in rows if row.get("FAIL_TO_PASS") is not None), None)
    if isinstance(first, str):
        return "swe_bench", "SWE-bench columns with JSON-string FAIL_TO_PASS, no environment_setup_commit"
    return corpus, reason


def load_source(path: str | Path, repo_cache: RepoCache | None = None, role: Role | None = None) -> LoadResult:
    """Any source: a task folder, a folder of task folders, a corpus file, or a hub id."""
    from curation.sources.local import load_folders

    if Path(path).is_dir():
        tasks, errors = load_folders(Path(path))
        found = [Detection(location=str(path), corpus="local", version="task folder", rows=len(tasks) + len(errors),
                           reason="a folder of task folders (task.toml)")] if tasks or errors else []  # fmt: skip
        made = [(t, t.answer.leaky_columns, "task folder", f"{path}#{t.instance_id}") for t in tasks]
        return LoadResult(tasks=tasks, errors=errors, detected=found, fingerprints=fingerprints(made, role))
    return load_corpus_file(str(path), repo_cache=repo_cache, role=role)


def check_local(paths: Iterable[str | Path]) -> None:
    """SourceError for a source that names a local path which does not exist: said before a run starts."""
    for path in map(str, paths):
        if not os.path.exists(path) and (path.endswith(tuple(_READERS)) or _local_looking(path)):
            raise SourceError(f"{path}: no such file or folder (not tried as a Hugging Face hub id: it names a local path)")


def load_sources(paths: Iterable[str | Path], repo_cache: RepoCache | None = None, role: Role | None = None) -> LoadResult:
    """Every source in order. ``role``: fingerprint every task ("train"; "eval" for evaluation sets,
    loaded by the same adapters: a run keeps nothing else of them); None: no fingerprints."""
    if repo_cache is not None and not repo_cache.root.is_dir():
        raise SourceError(f"repository cache {repo_cache.root}: no such folder")
    results = [load_source(p, repo_cache, role) for p in paths]
    return LoadResult(
        tasks=[t for r in results for t in r.tasks],
        errors=[e for r in results for e in r.errors],
        detected=[d for r in results for d in r.detected],
        fingerprints=[f for r in results for f in r.fingerprints],
    )


def fingerprints(made: list[tuple[Task, Mapping[str, Any], str, str]], role: Role | None) -> list[Fingerprint]:
    """The fingerprints of tasks made from rows (``made``: task, row, schema version, location), the
    issue MinHashes in bulk; none without a role."""
    from curation.fingerprints import fingerprint, issue_minhashes

    if role is None:
        return []

    hashes = issue_minhashes(t.problem_statement for t, _, _, _ in made)
    return [fingerprint(t, row, version=version, location=where, role=role, minhash=h)
            for (t, row, version, where), h in zip(made, hashes)]  # fmt: skip


def find_task(instance_id: str, paths: Iterable[str | Path], repo_cache: RepoCache | None = None) -> Task:
    """A task by id (or by task-folder path); KeyError naming the sources searched when absent."""
    from curation.sources.local import is_task_folder, load_task_folder

    if Path(instance_id).is_dir() and is_task_folder(Path(instance_id)):
        return load_task_folder(Path(instance_id))
    paths = list(paths)
    for task in load_sources(paths, repo_cache).tasks:
        if task.instance_id == instance_id:
            return task
    raise KeyError(f"no task {instance_id!r} in {', '.join(map(str, paths))}")


__all__ = [
    "ADAPTERS", "Detection", "LoadResult", "RepoCache", "RowError", "SourceError", "detect", "detect_corpus", "find_task", "load_corpus_file", "load_rows",
    "load_source", "load_sources",
]  # fmt: skip
