"""Local task folders: tasks that are not in any corpus (the bundled sample corpus is made of them).

A folder holds ``task.toml``, ``issue.md``, the buggy tree as ``repo/`` (plain files) or ``repo.bundle``
(git history), ``gold.patch`` and ``tests.patch``; the README documents the format.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from curation.sources.base import RowError, parse_patch, patch_paths
from harness.records import Answer, Environment, HiddenTests, LoadError, RepoSource, Task

SOURCE = "local"
_TOP_KEYS = {"instance_id", "repo", "test_cmd", "log_parser", "environment", "repo_source"}


def is_task_folder(path: Path) -> bool:
    return (path / "task.toml").is_file()


def load_task_folder(folder: Path) -> Task:
    """One folder -> Task; RowError names the file (and key) at fault."""
    folder = folder.resolve()
    try:
        meta: dict[str, Any] = tomllib.loads((folder / "task.toml").read_text())
    except FileNotFoundError:
        raise RowError("task.toml", "missing") from None
    except tomllib.TOMLDecodeError as err:
        raise RowError("task.toml", f"is not valid TOML: {err}") from None
    unknown = set(meta) - _TOP_KEYS
    if unknown:
        raise RowError("task.toml", f"unknown keys {sorted(unknown)}")
    instance_id = meta.get("instance_id", folder.name)
    if instance_id != folder.name:
        raise RowError("task.toml:instance_id", f"{instance_id!r} differs from the folder name {folder.name!r}")
    test_cmd = meta.get("test_cmd")
    if isinstance(test_cmd, str):
        test_cmd = [test_cmd]
    if not test_cmd or not all(isinstance(c, str) and c.strip() for c in test_cmd):
        raise RowError("task.toml:test_cmd", "must be a non-empty string or list of strings")

    issue = _read(folder, "issue.md")
    if not issue.strip():
        raise RowError("issue.md", "is empty")
    gold = _read(folder, "gold.patch")
    parse_patch(gold, "gold.patch")
    tests_patch = _read(folder, "tests.patch")
    test_paths = patch_paths(parse_patch(tests_patch, "tests.patch"))

    repo_source = _repo_source(folder, meta.get("repo_source"))
    env = dict(meta.get("environment", {}))
    if "image" not in env:
        env.setdefault("recipe", {})
    try:
        environment = Environment.model_validate(env)
    except ValidationError as err:
        raise RowError("task.toml:environment", _first_error(err)) from None
    return Task(
        instance_id=instance_id,
        source=SOURCE,
        repo=meta.get("repo", f"local/{folder.name}"),
        base_commit=repo_source.ref,
        problem_statement=issue,
        environment=environment,
        repo_source=repo_source,
        test_cmd=test_cmd,
        log_parser=meta.get("log_parser", "pytest"),
        test_paths=test_paths,
        answer=Answer(gold_patch=gold, hidden_tests=HiddenTests(patch=tests_patch)),
    )


def _read(folder: Path, name: str) -> str:
    try:
        return (folder / name).read_text()
    except FileNotFoundError:
        raise RowError(name, "missing") from None
    except UnicodeDecodeError:
        raise RowError(name, "is not UTF-8 text") from None


def _repo_source(folder: Path, spec: dict[str, Any] | None) -> RepoSource:
    if spec is None:
        if not (folder / "repo").is_dir():
            raise RowError("repo/", "missing: a task folder needs repo/ (plain files) or repo.bundle + [repo_source]")
        return RepoSource(kind="files", path=str(folder / "repo"))
    if spec.get("kind") != "bundle":
        raise RowError("task.toml:repo_source.kind", "must be 'bundle' (plain files need no [repo_source])")
    bundle = folder / spec.get("path", "repo.bundle")
    if not bundle.is_file():
        raise RowError("task.toml:repo_source.path", f"{bundle.name} does not exist")
    ref = spec.get("ref", "")
    if not ref:
        raise RowError("task.toml:repo_source.ref", "a bundle needs the base commit to check out")
    return RepoSource(kind="bundle", path=str(bundle), ref=ref)


def _first_error(err: ValidationError) -> str:
    first = err.errors()[0]
    return f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}"


def load_folders(path: Path) -> tuple[list[Task], list[LoadError]]:
    """A task folder, or a folder of task folders; a broken folder is an error and the rest still load."""
    folders = [path] if is_task_folder(path) else sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith("."))
    tasks: list[Task] = []
    errors: list[LoadError] = []
    for folder in folders:
        try:
            tasks.append(load_task_folder(folder))
        except RowError as err:
            errors.append(LoadError(source=SOURCE, location=str(folder), field=err.field, message=err.message))
        except ValidationError as err:
            errors.append(LoadError(source=SOURCE, location=str(folder), field="task", message=_first_error(err)))
    return tasks, errors
