"""The trainer's configuration: one record that the driver and every trainer rank read alike."""

from __future__ import annotations

from typing import Annotated, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt, PositiveFloat, PositiveInt, field_validator, model_validator

from harness.records import content_hash
from training.eviction import EvictionConfig
from training.placement import PlacementConfig

# how the loss is averaged (``training.objectives``); here so a config loads without torch
Normalisation = Literal["batch_tokens", "per_rollout"]


class TrainConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str = "tiny-dense"  # tiny-dense, tiny-hybrid (random, from a config), or a local HF checkpoint folder
    devices: list[str] = Field(
        default_factory=lambda: ["cpu"],
        description="the trainer's devices; more than one shards the policy (FSDP2, one process each); "
        "local engines run on the first",
    )
    dtype: Literal["float32", "bfloat16"] = "float32"  # the engines'; the trainer keeps fp32 masters
    group_size: int = Field(16, ge=2)  # GRPO's advantages are relative within a group: one rollout has none
    groups_per_update: PositiveInt = 4
    updates: PositiveInt = 60
    staleness_cap: NonNegativeInt = 4  # groups sampled more than this many updates ago are dropped
    max_inflight_groups: PositiveInt = 8
    engines: PositiveInt = 2
    placement: PlacementConfig = PlacementConfig(cap=64)
    lr: PositiveFloat = 7e-4
    betas: tuple[Annotated[float, Field(ge=0, lt=1)], Annotated[float, Field(ge=0, lt=1)]] = (0.9, 0.98)
    objective: Literal["cispo", "ppo"] = "cispo"
    max_ratio: float = Field(2.0, gt=1)  # IcePop: tokens with ω above it get no gradient
    clip_eps: PositiveFloat = 0.2  # ppo only
    max_grad_norm: PositiveFloat = 1.0
    normalisation: Normalisation = "batch_tokens"
    std_normalise: bool = False
    temperature: PositiveFloat = 1.0
    warmup_steps: NonNegativeInt = 150  # format warm-up before RL (toy environment)
    eviction: EvictionConfig = EvictionConfig()
    checkpoint_every: PositiveInt = 10
    seed: NonNegativeInt = 0

    @field_validator("devices")
    @classmethod
    def _one_kind(cls, devices: list[str]) -> list[str]:
        kinds = {d.split(":")[0] for d in devices}
        if not devices or len(kinds) > 1:
            raise ValueError(f"devices must be one kind (all cpu or all cuda), got {devices}")
        if kinds == {"cuda"} and len(devices) > 1 and len({_gpu_index(d) for d in devices}) < len(devices):
            raise ValueError(f"each trainer rank needs its own GPU: name them, e.g. cuda:0, cuda:1 (got {devices})")
        return devices

    @model_validator(mode="after")
    def _shardable(self) -> Self:
        if len(self.devices) > self.group_size * self.groups_per_update:
            raise ValueError(f"{len(self.devices)} trainer devices but only {self.group_size * self.groups_per_update} rollouts per update to split")
        return self

    def hash(self) -> str:
        return content_hash(self)


def _gpu_index(device: str) -> int:
    """``cuda`` means the current GPU, index 0 unless CUDA_VISIBLE_DEVICES says otherwise."""
    return int(device.partition(":")[2] or 0)
