"""What both engines share: the pause modes, the weight-update contract the trainer drives, the prompt check."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal, Protocol

from harness.agent.engine import Engine

PauseMode = Literal["abort", "wait", "keep"]
PAUSE_MODES: tuple[str, ...] = ("abort", "wait", "keep")
UPDATE_METHOD = "update_weights_from_path"


class ManagedEngine(Engine, Protocol):
    """What the trainer needs beyond sampling: pausing around weight updates and cache control."""

    @property
    def weight_version(self) -> int: ...

    def pause(self, mode: PauseMode = ...) -> None: ...

    def resume(self) -> None: ...

    def is_paused(self) -> bool: ...

    def reset_prefix_cache(self, reset_running_requests: bool = False) -> bool: ...

    def update_weights_from_path(self, path: str | Path, version: int | None = None) -> int: ...


def checked(prompt_ids: Sequence[int], max_tokens: int = 1) -> list[int]:
    if not prompt_ids:
        raise ValueError("the prompt is empty: an engine continues at least one token")
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be at least 1, got {max_tokens}")
    return [int(i) for i in prompt_ids]
