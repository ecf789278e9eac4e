"""The trainer's policy: fp32 master weights and their optimiser, on one device or sharded over several.

``LocalPolicy`` keeps the model on one device in this process. ``ShardedPolicy`` shards it with FSDP2
over ``TrainConfig.devices`` (the 8-GPU layout's two trainer GPUs): this process is rank 0 and drives
one spawned process per further device. Each rank trains on its own rows of the batch. Every rank's
loss is normalised by the *whole* batch's token (or rollout) count and gradients are summed across
ranks, not averaged, so a sharded step is the one-device step with its work split (a test holds them
to the same weights).

Both speak ``Policy``: ``step`` takes a collated batch, ``full_state`` gives the whole weights to
publish to the engines, ``checkpoint`` gives weights and optimiser state in one layout whatever the
sharding. Workers take commands over a pipe rather than a collective, because between updates they
idle for as long as the rollouts take, longer than a collective should block; each command then
meets rank 0 in the collectives it implies.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Protocol

import torch
import torch.distributed as dist
from torch import Tensor
from torch.distributed.checkpoint.state_dict import (
    StateDictOptions,
    get_model_state_dict,
    get_optimizer_state_dict,
    set_optimizer_state_dict,
)
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import FSDPModule, fully_shard
from torch.distributed.tensor import DTensor

from harness.config import ConfigError
from training.config import TrainConfig
from training.metrics import TokenStats, token_stats
from training.objectives import cispo_loss, group_advantages, ppo_clip_loss

FULL = StateDictOptions(full_state_dict=True, cpu_offload=True)


TINY_MODELS = ("tiny-dense", "tiny-hybrid")


def check_model(model: str) -> None:
    """``train.model`` names a tiny model or a local checkpoint folder (nothing is downloaded)."""
    if model not in TINY_MODELS and not (Path(model) / "config.json").is_file():
        raise ConfigError(f"train.model {model!r} is neither one of {', '.join(TINY_MODELS)} nor a checkpoint folder here (no config.json)")


def build_policy(config: TrainConfig, vocab_size: int, device: str | None = None) -> Any:
    """The fp32 master policy: a tiny random model, or a checkpoint with its gate parameters kept fp32."""
    if config.model in TINY_MODELS:
        from training.models import tiny_model

        model = tiny_model(config.model.removeprefix("tiny-"), seed=config.seed, vocab_size=vocab_size)
    else:
        from transformers import AutoModelForCausalLM

        from training.models import keep_fp32

        model = AutoModelForCausalLM.from_pretrained(config.model, dtype=torch.float32)
        keep_fp32(model)
    return model.to(device or config.devices[0])


# ------------------------------------------------------------------------------------------ the step


def token_logprobs(model: Any, tokens: Tensor) -> tuple[Tensor, Tensor]:
    """(logits [R, T-1, V], log-prob of each next token [R, T-1]) under ``model``, in fp32, on the
    model's device."""
    tokens = tokens.to(next(model.parameters()).device)
    logits = model(input_ids=tokens).logits[:, :-1].float()
    logp = torch.log_softmax(logits, dim=-1).gather(-1, tokens[:, 1:, None]).squeeze(-1)
    return logits, logp


def shard_batch(batch: dict[str, Tensor], config: TrainConfig, world: int) -> list[dict[str, Tensor]]:
    """Split a collated batch into ``world`` row blocks that each carry what only the whole batch
    knows: the group advantages and the counts the loss is normalised by."""
    advantages = group_advantages(batch["rewards"], config.group_size, std_normalise=config.std_normalise)
    mask = batch["mask"]
    totals = {"num_tokens": mask.sum(), "num_rollouts": (mask.sum(dim=-1) > 0).sum()}
    return [
        {"tokens": batch["tokens"][rows], "mask": mask[rows], "logp_rollout": batch["logp_rollout"][rows],
         "advantages": advantages[rows], **totals}
        for rows in torch.arange(len(advantages)).tensor_split(world)
    ]  # fmt: skip


def loss_and_stats(model: Any, shard: dict[str, Tensor], config: TrainConfig) -> tuple[Tensor, TokenStats]:
    """This shard's part of the batch loss (the parts sum to the whole-batch loss) and its token sums."""
    logits, logp = token_logprobs(model, shard["tokens"])
    shard = {k: v.to(logp.device) for k, v in shard.items()}
    counts = {"normalisation": config.normalisation, "num_tokens": shard["num_tokens"], "num_rollouts": shard["num_rollouts"]}
    if config.objective == "cispo":
        loss, _ = cispo_loss(logp, shard["logp_rollout"], shard["advantages"], shard["mask"], max_ratio=config.max_ratio, **counts)
    else:
        loss, _ = ppo_clip_loss(logp, shard["logp_rollout"], shard["advantages"], shard["mask"], clip_eps=config.clip_eps, **counts)
    stats = token_stats(logits, logp, shard["logp_rollout"], shard["mask"], max_ratio=config.max_ratio)
    return loss, stats


@dataclass(frozen=True)
class StepResult:
    loss: float
    grad_norm: float  # before clipping
    stats: TokenStats


def _train_step(model: Any, optimizer: torch.optim.Optimizer, shard: dict[str, Tensor], config: TrainConfig) -> StepResult:
    model.train()
    loss, stats = loss_and_stats(model, shard, config)
    optimizer.zero_grad()
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), config.max_grad_norm)
    optimizer.step()
    model.eval()
    return StepResult(float(loss.detach()), float(norm.full_tensor() if isinstance(norm, DTensor) else norm), stats)


def _optimizer(model: Any, config: TrainConfig) -> torch.optim.Optimizer:
    return torch.optim.AdamW(model.parameters(), lr=config.lr, betas=config.betas, weight_decay=0.0)


def _resident_bytes(model: Any, optimizer: torch.optim.Optimizer) -> int:
    """What this rank holds of the training state: parameters, gradients and AdamW moments (its shards
    of each under FSDP)."""
    params = list(model.parameters())
    moments = [v for state in optimizer.state.values() for v in state.values() if isinstance(v, Tensor) and v.dim()]
    tensors = params + [p.grad for p in params if p.grad is not None] + moments
    return sum((t.to_local() if isinstance(t, DTensor) else t).nbytes for t in tensors)


def _checkpoint(model: Any, optimizer: torch.optim.Optimizer) -> dict[str, Any]:
    return {"policy": get_model_state_dict(model, options=FULL), "optimizer": get_optimizer_state_dict(model, optimizer, options=FULL)}


# ---------------------------------------------------------------------------------------- policies


class Policy(Protocol):
    def step(self, batch: dict[str, Tensor]) -> StepResult: ...

    def full_state(self) -> dict[str, Tensor]: ...

    def checkpoint(self) -> dict[str, Any]: ...

    def memory(self) -> list[int]:
        """Bytes of training state (weights, gradients, optimiser moments) each rank holds."""
        ...

    def close(self) -> None: ...


class LocalPolicy:
    def __init__(self, model: Any, config: TrainConfig, optimizer_state: dict[str, Any] | None = None):
        self.model, self.config = model, config
        self.optimizer = _optimizer(model, config)
        if optimizer_state is not None:
            set_optimizer_state_dict(model, self.optimizer, optimizer_state, options=FULL)

    def step(self, batch: dict[str, Tensor]) -> StepResult:
        return _train_step(self.model, self.optimizer, shard_batch(batch, self.config, 1)[0], self.config)

    def full_state(self) -> dict[str, Tensor]:
        return self.model.state_dict()

    def checkpoint(self) -> dict[str, Any]:
        return _checkpoint(self.model, self.optimizer)

    def memory(self) -> list[int]:
        return [_resident_bytes(self.model, self.optimizer)]

    def close(self) -> None:
        pass


def _join(rank: int, world: int, rendezvous: str, config: TrainConfig) -> None:
    """Enter the trainer's process group."""
    device = torch.device(config.devices[rank])
    if device.type == "cuda":
        torch.cuda.set_device(device)
    elif rank:  # CPU ranks share the cores
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // world))
    backend = "nccl" if device.type == "cuda" else "gloo"
    dist.init_process_group(backend, init_method=f"file://{rendezvous}", rank=rank, world_size=world)


def _shard(model: Any, config: TrainConfig, world: int, optimizer_state: dict[str, Any] | None) -> torch.optim.Optimizer:
    """Collective: every rank brings its own copy of the model; rank 0's weights (warmed up or resumed)
    and optimiser state win. Each decoder layer is its own FSDP unit, so only one layer is whole at a
    time."""
    for tensor in model.state_dict().values():
        dist.broadcast(tensor, src=0)
    mesh = init_device_mesh(next(model.parameters()).device.type, (world,))
    for module in list(model.modules()):
        if type(module).__name__ in model._no_split_modules:
            fully_shard(module, mesh=mesh)
    fully_shard(model, mesh=mesh)
    for module in model.modules():
        if isinstance(module, FSDPModule):
            # sum, not mean: each rank's loss is already normalised by the whole batch (and gloo has
            # no pre-multiplied sum, hence plain sums)
            module.set_gradient_divide_factor(1.0)
            module.set_force_sum_reduction_for_comms(True)
    optimizer = _optimizer(model, config)
    if optimizer_state is not None:
        options = StateDictOptions(full_state_dict=True, broadcast_from_rank0=True)
        set_optimizer_state_dict(model, optimizer, optimizer_state, options=options)
    return optimizer


def _run(command: str, model: Any, optimizer: torch.optim.Optimizer, shard: Any, config: TrainConfig) -> Any:
    """One command, the same on every rank; only rank 0's answer carries whole tensors (the others'
    state dicts are empty)."""
    if command == "step":
        return _train_step(model, optimizer, shard, config)
    if command == "state":
        return get_model_state_dict(model, options=FULL)
    if command == "checkpoint":
        return _checkpoint(model, optimizer)
    if command == "memory":
        return _resident_bytes(model, optimizer)
    raise ValueError(f"unknown trainer command {command!r}")


def _serve(rank: int, world: int, rendezvous: str, config: TrainConfig, vocab_size: int, resuming: bool, conn: Connection) -> None:
    """A worker rank: build the same model, shard it with rank 0, then run commands until told to stop.
    Building comes first and is reported: it is what fails (a bad path, memory), and a rank that died
    before the rendezvous would leave the others waiting in it."""
    model = build_policy(config, vocab_size, config.devices[rank])
    conn.send("built")
    _join(rank, world, rendezvous, config)
    optimizer = _shard(model, config, world, {} if resuming else None)
    try:
        while (message := conn.recv())[0] != "stop":
            conn.send(_run(message[0], model, optimizer, message[1], config))
    except EOFError:  # the driver is gone
        pass
    finally:
        dist.destroy_process_group()


def _receive(rank: int, process: Any, conn: Connection, when: str) -> Any:
    """A worker's answer; the pipe ends when the worker died."""
    try:
        return conn.recv()
    except EOFError:
        process.join(5)
        raise RuntimeError(f"trainer rank {rank} exited (code {process.exitcode}) {when}") from None


class ShardedPolicy:
    def __init__(self, model: Any, config: TrainConfig, vocab_size: int, optimizer_state: dict[str, Any] | None = None):
        self.model, self.config, self.world = model, config, len(config.devices)
        self.folder = Path(tempfile.mkdtemp(prefix="swedeck-ranks-"))
        rendezvous = str(self.folder / "rendezvous")
        context = torch.multiprocessing.get_context("spawn")
        self.workers = []
        for rank in range(1, self.world):
            mine, theirs = context.Pipe()
            args = (rank, self.world, rendezvous, config, vocab_size, optimizer_state is not None, theirs)
            process = context.Process(target=_serve, args=args, name=f"trainer-rank-{rank}", daemon=True)
            process.start()
            theirs.close()
            self.workers.append((process, mine))
        try:
            for rank, (process, conn) in enumerate(self.workers, start=1):
                _receive(rank, process, conn, "while building its model")
        except RuntimeError:
            for other, _ in self.workers:  # the rest may wait in the rendezvous: no pipe reaches them
                other.kill()
                other.join()
            shutil.rmtree(self.folder, ignore_errors=True)
            raise
        _join(0, self.world, rendezvous, config)
        self.optimizer = _shard(model, config, self.world, optimizer_state)

    def _all(self, command: str, shards: list[Any] | None = None) -> list[Any]:
        shards = shards or [None] * self.world
        for rank, (process, _) in enumerate(self.workers, start=1):
            if not process.is_alive():  # rank 0 would wait for it in the first collective
                raise RuntimeError(f"trainer rank {rank} exited (code {process.exitcode}) before {command!r}")
        for (_, conn), shard in zip(self.workers, shards[1:], strict=True):
            conn.send((command, shard))
        answers = [_run(command, self.model, self.optimizer, shards[0], self.config)]
        for rank, (process, conn) in enumerate(self.workers, start=1):
            answers.append(_receive(rank, process, conn, f"during {command!r}"))
        return answers

    def step(self, batch: dict[str, Tensor]) -> StepResult:
        results = self._all("step", shard_batch(batch, self.config, self.world))
        stats = TokenStats()
        for result in results:
            stats = stats + result.stats
        return StepResult(sum(r.loss for r in results), results[0].grad_norm, stats)

    def full_state(self) -> dict[str, Tensor]:
        return self._all("state")[0]

    def checkpoint(self) -> dict[str, Any]:
        return self._all("checkpoint")[0]

    def memory(self) -> list[int]:
        return self._all("memory")

    def close(self) -> None:
        for process, conn in self.workers:
            if process.is_alive():
                conn.send(("stop", None))
            process.join(30)
        dist.destroy_process_group()
        shutil.rmtree(self.folder, ignore_errors=True)


def open_policy(model: Any, config: TrainConfig, vocab_size: int, optimizer_state: dict[str, Any] | None = None) -> Policy:
    """``model`` holds the starting weights; with several devices it is sharded in place."""
    if len(config.devices) == 1:
        return LocalPolicy(model, config, optimizer_state)
    return ShardedPolicy(model, config, vocab_size, optimizer_state)
