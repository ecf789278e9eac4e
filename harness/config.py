"""Configuration of the execution layer: sandbox limits and grading knobs.

Config is data (TOML + command-line overrides, hashed onto records); settings are where things live on
this machine (environment variables), and never change a result.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, NonNegativeFloat, PositiveFloat, PositiveInt


class UserError(ValueError):
    """A mistake the user can fix (a setting, a path, a source): the CLI says what, where and what to
    do in one line and exits 2; tracebacks are for swedeck's own bugs."""


class ConfigError(UserError):
    """A configuration the user can fix."""


class Limits(BaseModel):
    model_config = ConfigDict(extra="forbid")

    timeout_s: PositiveFloat = 300.0  # wall time per command
    memory_mb: PositiveInt = 2048
    processes: PositiveInt = 256
    output_bytes: PositiveInt = 8 * 1024 * 1024  # captured output per command; the rest is cut and the command killed
    file_bytes: PositiveInt = 512 * 1024 * 1024  # largest file a command may write
    tmp_mb: PositiveInt = 512
    tree_mb: PositiveInt = 1024  # how much the task's tree may grow
    shm_mb: PositiveInt = 64  # /dev/shm


class SandboxConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    backend: Literal["bwrap", "docker"] = "bwrap"
    limits: Limits = Limits()
    build_timeout_s: PositiveFloat = 1800.0
    # corpus images (docker): "never" uses only what the engine has, "missing" pulls what it lacks,
    # "always" pulls each image once per run; what swedeck pulled is kept within image_cache_gb
    # (least recently used removed first; 0: no limit)
    pull: Literal["never", "missing", "always"] = "missing"
    image_cache_gb: NonNegativeFloat = 0.0
    # what harness.grading.tamper's findings in a candidate's change do to its grade: "zero" the reward
    # (tamper_suspected), or only "flag" them on the Grade
    tamper: Literal["zero", "flag"] = "zero"


class Settings(BaseModel):
    """Machine facts from the environment (SWEDECK_*); not part of any config hash."""

    model_config = ConfigDict(extra="forbid")

    cache_dir: Path
    base_rootfs: Path
    base_image: str
    docker_user: str = "1000:1000"

    @classmethod
    def from_env(cls) -> Settings:
        # not under $HOME: sandboxes run as unprivileged uids that must traverse to the root filesystem
        cache = Path(os.environ.get("SWEDECK_CACHE", f"/var/tmp/swedeck-{os.getuid()}"))
        return cls(
            cache_dir=cache,
            base_rootfs=Path(os.environ.get("SWEDECK_BASE_ROOTFS", cache / "base-rootfs")),
            base_image=os.environ.get("SWEDECK_BASE_IMAGE", "swedeck-base:latest"),
        )
