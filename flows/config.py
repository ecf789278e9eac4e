"""The resolved run configuration: embedded defaults, then a TOML file, then ``--set key.path=value``.

Its hash is stamped on every record, so a rerun with the same config reuses finished work and a change
of any knob that can change a result invalidates it.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from curation.dedup import DedupConfig
from curation.pipeline1 import Pipeline1Config
from curation.sources.recipes import RepoCache
from flows.runners import RunnerConfig
from harness.agent.loop import AgentConfig
from harness.config import ConfigError, SandboxConfig
from harness.records import content_hash

M = TypeVar("M", bound=BaseModel)
from judge.pipeline2 import Pipeline2Config


class Schedule(BaseModel):
    """One deployment of ``swedeck serve``: a curate run over ``sources`` into ``out`` on a cron."""

    model_config = ConfigDict(extra="forbid")

    sources: list[str]  # corpus files, hub ids, task folders (relative paths: to where `swedeck serve` runs)
    cron: str
    timezone: str = "UTC"
    out: str  # the run folder every run of this schedule adds to
    workers: int = 2
    judge: bool | None = None  # True the scripted judge, False none (probes only), None SWEDECK_JUDGE_* from the environment


class SourcesConfig(BaseModel):
    """Where corpus rows find what they do not carry."""

    model_config = ConfigDict(extra="forbid")

    # a folder of git bundles (<owner>__<name>.bundle) or clones (<owner>__<name>/): SWE-bench-shaped
    # rows whose image cannot run here are built from their install spec with the repository from it
    repo_cache: str = ""


class SwedeckConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    sources: SourcesConfig = SourcesConfig()
    sandbox: SandboxConfig = SandboxConfig()
    pipeline1: Pipeline1Config = Pipeline1Config()
    pipeline2: Pipeline2Config = Pipeline2Config()
    agent: AgentConfig = AgentConfig()
    runner: RunnerConfig = RunnerConfig()
    dedup: DedupConfig = DedupConfig()
    schedules: dict[str, Schedule] = {}

    def hash(self) -> str:
        # where and when the work runs never changes a result, so they stay out of the hash records carry;
        # a task built from the repository cache differs from its image task, so its own hash tells them apart
        # deduplication picks among results and never changes one, so it stays out too
        return content_hash(self.model_dump(mode="json", exclude={"runner", "schedules", "sources", "dedup"}))

    def repo_cache(self) -> RepoCache | None:
        if not self.sources.repo_cache:
            return None
        return RepoCache(Path(self.sources.repo_cache), images=self.sandbox.backend == "docker")


def _parse_value(raw: str) -> Any:
    """TOML's own value syntax (numbers, booleans, quoted strings, arrays); bare words are strings."""
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        out[key] = _merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def apply_override(data: dict[str, Any], assignment: str) -> dict[str, Any]:
    if "=" not in assignment:
        raise ConfigError(f"override {assignment!r} is not key.path=value")
    path, raw = assignment.split("=", 1)
    nested: dict[str, Any] = {}
    cursor = nested
    keys = path.strip().split(".")
    for key in keys[:-1]:
        cursor = cursor.setdefault(key, {})
    cursor[keys[-1]] = _parse_value(raw.strip())
    return _merge(data, nested)


def load_config(path: Path | None = None, overrides: list[str] | None = None, **shortcuts: Any) -> SwedeckConfig:
    """Defaults < file < overrides < shortcuts (CLI flags such as --backend, given as dotted keys)."""
    return load_model(SwedeckConfig, path, overrides, **shortcuts)


def load_model(model: type[M], path: Path | None = None, overrides: list[str] | None = None, **shortcuts: Any) -> M:
    """Any config model from embedded defaults, a TOML file, ``--set`` overrides and CLI shortcuts."""
    data: dict[str, Any] = {}
    if path is not None:
        try:
            data = tomllib.loads(Path(path).read_text())
        except (OSError, tomllib.TOMLDecodeError) as err:
            reason = err.strerror if isinstance(err, OSError) else err
            raise ConfigError(f"config file {path}: {reason}") from err
    for assignment in overrides or []:
        data = apply_override(data, assignment)
    for dotted, value in shortcuts.items():
        if value is not None:
            data = apply_override(data, f"{dotted.replace('__', '.')}={_toml(value)}")
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise ConfigError("; ".join(_problem(model, e, path, overrides or []) for e in err.errors())) from err


def _problem(model: type[BaseModel], error: Any, path: Path | None, overrides: list[str]) -> str:
    """One validation error as the user can act on it: the setting, where it was given, and what is
    allowed there (the known settings beside an unknown one)."""
    dotted = ".".join(map(str, error["loc"])) or "config"
    given = next((f" (--set {o})" for o in overrides if o.partition("=")[0].strip() == dotted), f" (in {path})" if path else "")
    if error["type"] != "extra_forbidden":
        return f"{dotted}{given}: {error['msg']}, got {error['input']!r}"
    owner: Any = model
    for key in error["loc"][:-1]:
        field = owner.model_fields.get(str(key)) if isinstance(owner, type) and issubclass(owner, BaseModel) else None
        owner = field.annotation if field else None
    known = sorted(owner.model_fields) if isinstance(owner, type) and issubclass(owner, BaseModel) else []
    return f"unknown setting {dotted}{given}" + (f"; known here: {', '.join(known)}" if known else "")


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'
