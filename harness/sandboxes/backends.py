"""The backend a sandbox config names: the one place that knows both backends."""

from __future__ import annotations

from harness.config import SandboxConfig, Settings
from harness.sandboxes.bwrap import BwrapBackend
from harness.sandboxes.docker import DockerBackend
from harness.sandboxes.sandbox import Backend


def get_backend(config: SandboxConfig | None = None, settings: Settings | None = None) -> Backend:
    config = config or SandboxConfig()
    settings = settings or Settings.from_env()
    if config.backend == "bwrap":
        return BwrapBackend(config, settings)
    if config.backend == "docker":
        return DockerBackend(config, settings)
    raise ValueError(f"unknown sandbox backend {config.backend!r} (expected 'bwrap' or 'docker')")
