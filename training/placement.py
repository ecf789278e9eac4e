"""Rollout placement: which inference engine a new group of rollouts goes to.

A whole group goes to one engine: its G rollouts share the prompt, so they share prefix-cache blocks,
and every later turn of a rollout stays where its KV cache lives. Two policies, selectable by name:

``session_hash``  engine = stable hash(session id) mod n. Sticky and stateless (prime-rl's default
                  ``consistent_hash`` on ``X-Session-ID``), but blind to load: an engine that already
                  holds long rollouts keeps receiving its share of new groups.
``load_aware``    the engine with the fewest in-flight rollouts among those with room for the whole
                  group under a per-engine cap; ``None`` when none has room, and the caller queues the
                  group until a rollout finishes (SkyRL's ``sticky_least_loaded``, llm-d's
                  active-request scorer). The cap bounds the sequences resident on one engine, so no
                  engine's decode batch grows without bound while others idle.

Pure policy code: no I/O, no clock, no engine handles. The caller owns the loads (``loads[i]`` =
rollouts placed on engine i and not finished) and updates them when it places or finishes rollouts.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

PolicyName = Literal["load_aware", "session_hash"]
POLICY_NAMES: tuple[str, ...] = ("load_aware", "session_hash")
DEFAULT_CAP = 64


class Placement(Protocol):
    name: ClassVar[str]

    def choose(self, key: str, loads: Sequence[int], size: int) -> int | None:
        """The engine for a group of ``size`` rollouts with session/group id ``key``, given the
        in-flight rollouts per engine; ``None`` to hold the group back for now."""
        ...


@dataclass(frozen=True)
class SessionHash:
    """engine = blake2b(key) mod n: the same key always lands on the same engine of a fleet of n."""

    name: ClassVar[str] = "session_hash"

    def choose(self, key: str, loads: Sequence[int], size: int) -> int:
        if not loads:
            raise ValueError("no engines to place on")
        # not hash(): Python salts str hashes per process, and placement must survive restarts
        digest = hashlib.blake2b(key.encode(), digest_size=8).digest()
        return int.from_bytes(digest, "big") % len(loads)


@dataclass(frozen=True)
class LoadAware:
    """Fewest in-flight rollouts among engines where the group fits under ``cap``; ties go to the
    lowest engine index, so a run is reproducible."""

    cap: int
    name: ClassVar[str] = "load_aware"

    def __post_init__(self) -> None:
        if self.cap < 1:
            raise ValueError(f"cap must be at least 1, got {self.cap}")

    def choose(self, key: str, loads: Sequence[int], size: int) -> int | None:
        if size > self.cap:
            # would never fit anywhere: the caller would queue it forever
            raise ValueError(f"a group of {size} rollouts cannot fit under a per-engine cap of {self.cap}")
        room = [i for i, load in enumerate(loads) if load + size <= self.cap]
        return min(room, key=lambda i: (loads[i], i), default=None)


class PlacementConfig(BaseModel):
    """The trainer's placement settings; ``cap`` only constrains ``load_aware``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    policy: PolicyName = "load_aware"
    cap: int = Field(DEFAULT_CAP, ge=1, description="most in-flight rollouts on one engine (load_aware)")


def placement_policy(name: str, *, cap: int = DEFAULT_CAP) -> Placement:
    """The policy called ``name``. Session hash takes no cap: ignoring load is its definition, and the
    engine's own batch limit (vLLM ``max_num_seqs``) is what queues its excess."""
    if name == "load_aware":
        return LoadAware(cap)
    if name == "session_hash":
        return SessionHash()
    raise ValueError(f"unknown placement policy {name!r}; choose one of {POLICY_NAMES}")
