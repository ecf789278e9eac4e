"""The resolved run configuration: embedded defaults, then a TOML file, then ``--set key.path=value``
(``flows.overrides`` reads them).

Its hash is stamped on every record, so a rerun with the same config reuses finished work and a change
of any knob that can change a result invalidates it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from curation.dedup import DedupConfig
from curation.pipeline1 import Pipeline1Config
from curation.sources.recipes import RepoCache
from flows.overrides import load_model
from flows.runners import RunnerConfig
from harness.agent.loop import AgentConfig
from harness.config import SandboxConfig
from harness.records import content_hash
from judge.config import Pipeline2Config


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


def load_config(path: Path | None = None, overrides: list[str] | None = None, **shortcuts: Any) -> SwedeckConfig:
    """Defaults < file < overrides < shortcuts (CLI flags such as --backend, given as dotted keys)."""
    return load_model(SwedeckConfig, path, overrides, **shortcuts)
