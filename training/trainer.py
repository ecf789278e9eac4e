"""The asynchronous GRPO trainer: rollouts, environment steps and optimisation overlap.

The spine (``train``):

    engines sample groups in background threads (placement picks the engine, eviction picks the task)
    loop over updates:
        take B complete groups; drop and count those older than the staleness cap
        CISPO loss (IcePop mask) over the batch, one AdamW step on the fp32 master weights
        push the new weights to every engine: caches invalidated, in-flight histories re-prefilled
        eviction, replay probe, metrics, checkpoint

A group is trained only when all its rollouts are done; every rollout carries the oldest weight
version its tokens were sampled under, so its lag is known exactly. A killed run resumes from its last
checkpoint (weights, optimiser, eviction state) and rewrites the metrics from there.
"""

from __future__ import annotations

import copy
import itertools
import os
import queue
import random
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import torch

from training.config import TrainConfig
from training.engines import LocalEngine
from training.envs import Environment, Episode
from training.eviction import EvictionState, Evictor
from training.metrics import MetricsWriter, UpdateMetrics, policy_lag
from training.models import cast_state
from training.placement import placement_policy
from training.policy import build_policy, open_policy, token_logprobs

CHECKPOINT = "checkpoint.pt"


# ------------------------------------------------------------------------------------------ batches


def collate(episodes: Sequence[Episode], pad_id: int) -> dict[str, torch.Tensor]:
    """Right-padded [R, T] tensors; ``mask``/``logp_rollout`` are aligned with the *predicted* token,
    i.e. position t scores tokens[t + 1]."""
    width = max(len(e.tokens) for e in episodes)
    tokens = torch.full((len(episodes), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(episodes), width - 1))
    logp = torch.zeros((len(episodes), width - 1))
    for i, e in enumerate(episodes):
        n = len(e.tokens)
        tokens[i, :n] = torch.tensor(e.tokens)
        mask[i, : n - 1] = torch.tensor(e.mask[1:], dtype=torch.float32)
        logp[i, : n - 1] = torch.tensor(e.logprobs[1:])
    rewards = torch.tensor([e.reward for e in episodes])
    return {"tokens": tokens, "mask": mask, "logp_rollout": logp, "rewards": rewards}


def warm_up(model: Any, demos: Callable[[random.Random], tuple[list[int], list[int]]], steps: int, seed: int) -> None:
    """Teach the response format by cross-entropy on demonstrations (the instruct model RL starts from)."""
    rng = random.Random(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(steps):
        pairs = [demos(rng) for _ in range(32)]
        batch = collate([
            Episode(task_id="", group_id="", tokens=t, mask=m, logprobs=[0.0] * len(t), reward=0.0, success=False,
                    version=0, termination="")
            for t, m in pairs
        ], pad_id=0)  # fmt: skip
        _, logp = token_logprobs(model, batch["tokens"])
        mask = batch["mask"].to(logp.device)
        loss = -(logp * mask).sum() / mask.sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()


# ------------------------------------------------------------------------------------------ the fleet


def publish(engines: Sequence[Any], state: dict[str, torch.Tensor], version: int, scratch: Path, dtype: str) -> None:
    """New weights to every engine. Local engines copy them in place; vLLM servers are paused (in-flight
    requests aborted, then resubmitted with their partial output by the client), load the state dict
    saved in their ``dtype`` (half the bytes of the fp32 masters in bf16; the kept gate tensors stay
    fp32) and resume. Either way every cache is invalidated."""
    remote = [e for e in engines if not isinstance(e, LocalEngine)]
    for engine in engines:
        if isinstance(engine, LocalEngine):
            engine.update_weights(state, version)
    if remote:
        path = scratch / "weights.pt"
        _save(path, cast_state(state, getattr(torch, dtype)))
        for engine in remote:
            engine.pause("abort")
            engine.update_weights_from_path(path, version)
            engine.resume()


class Fleet:
    """Rollout generation in the background: groups are placed on engines and run in worker threads;
    complete groups wait in a queue for the trainer."""

    def __init__(self, engines: Sequence[Any], env: Environment, evictor: Evictor, config: TrainConfig, start: int):
        self.engines, self.env, self.evictor, self.config = list(engines), env, evictor, config
        self.placement = placement_policy(config.placement.policy, cap=config.placement.cap)
        self.loads = [0] * len(self.engines)
        self.inflight = 0
        self.done: queue.Queue[list[Episode]] = queue.Queue()
        self.errors: queue.Queue[BaseException] = queue.Queue()
        self.cond = threading.Condition()
        self.stopped = False
        self.counter = itertools.count(start * 100_000)
        self.pool = ThreadPoolExecutor(max_workers=max(2, config.max_inflight_groups), thread_name_prefix="rollout")
        self.thread = threading.Thread(target=self._dispatch, name="dispatcher", daemon=True)
        self.thread.start()

    def _dispatch(self) -> None:
        while True:
            with self.cond:
                while not self.stopped and self.inflight >= self.config.max_inflight_groups:
                    self.cond.wait()
                if self.stopped:
                    return
                active = self.evictor.active(self.env.tasks())
                if not active:  # everything retired: nothing left to learn from
                    self.cond.wait(0.5)
                    continue
                n = next(self.counter)
                # round robin: every update sees the whole active pool, so no task starves
                task, group_id = active[n % len(active)], f"g{n}"
                engine = self.placement.choose(group_id, self.loads, self.config.group_size)
                if engine is None:
                    self.cond.wait(0.1)
                    continue
                self.loads[engine] += self.config.group_size
                self.inflight += 1
            self.pool.submit(self._group, task, group_id, engine, n)

    def _group(self, task: str, group_id: str, engine: int, n: int) -> None:
        try:
            episodes = [
                self.env.rollout(task, self.engines[engine], seed=n * 64 + i, group_id=group_id, rollout_id=f"{group_id}-{i}")
                for i in range(self.config.group_size)
            ]
            self.done.put(episodes)
        except BaseException as err:  # surfaced in the trainer's thread, which stops the run
            self.errors.put(err)
        finally:
            with self.cond:
                self.loads[engine] -= self.config.group_size
                self.inflight -= 1
                self.cond.notify_all()

    def take(self, n: int, version: int) -> tuple[list[list[Episode]], int, int]:
        """``n`` groups to train on, and how many were dropped on the way: stale ones, and ones with a
        rollout that infrastructure ended (its reward 0 says nothing about the policy, and the group's
        advantages are relative to it). Fewer than ``n`` only when every task is retired and nothing is
        left in flight: no group will ever come again."""
        groups, stale, failed = [], 0, 0
        while len(groups) < n:
            if not self.errors.empty():
                raise RuntimeError("a rollout failed") from self.errors.get()
            try:
                group = self.done.get(timeout=0.2)
            except queue.Empty:
                if self._exhausted():
                    break
                continue
            if any(e.termination == "env_error" for e in group):
                failed += 1
            elif version - min(e.version for e in group) > self.config.staleness_cap:
                stale += 1
            else:
                groups.append(group)
        return groups, stale, failed

    def _exhausted(self) -> bool:
        with self.cond:
            return self.inflight == 0 and self.done.empty() and not self.evictor.active(self.env.tasks())

    def stop(self) -> None:
        with self.cond:
            self.stopped = True
            self.cond.notify_all()
        self.thread.join()
        self.pool.shutdown(wait=True)


# ------------------------------------------------------------------------------------------ the loop


def _save(path: Path, payload: dict[str, Any]) -> None:
    tmp = path.with_suffix(".part")
    torch.save(payload, tmp)
    os.replace(tmp, path)


def engine_copy(policy: Any, config: TrainConfig, tokenizer: Any, version: int) -> LocalEngine:
    from training.models import cast_model

    model = cast_model(copy.deepcopy(policy), getattr(torch, config.dtype))
    return LocalEngine(model, tokenizer, weight_version=version)


def train(
    config: TrainConfig,
    env: Environment,
    tokenizer: Any,
    out: Path,
    *,
    demos: Callable[[random.Random], tuple[list[int], list[int]]] | None = None,
    engines: Sequence[Any] | None = None,
    on_update: Callable[[UpdateMetrics], None] = lambda m: None,
) -> list[UpdateMetrics]:
    """Train until ``config.updates``, or until every task is retired (nothing is left to learn from);
    resume from ``out/checkpoint.pt`` when one is there."""
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(config.seed)
    model = build_policy(config, tokenizer.vocab_size)
    evictor, optimizer_state, start = Evictor(config.eviction), None, 0
    checkpoint = out / CHECKPOINT
    if checkpoint.exists():
        saved = torch.load(checkpoint, weights_only=False)
        if saved["config_hash"] != config.hash():
            raise ValueError(f"{checkpoint} was written by another config; use a new output folder")
        model.load_state_dict(saved["policy"])
        optimizer_state = saved["optimizer"]
        evictor = Evictor(config.eviction, EvictionState.model_validate_json(saved["evictor"]))
        start = saved["update"] + 1
    elif demos is not None and config.warmup_steps:
        warm_up(model, demos, config.warmup_steps, config.seed)
    served_elsewhere = engines is not None
    if engines is None:  # copied before sharding takes the model apart
        engines = [engine_copy(model, config, tokenizer, start) for _ in range(config.engines)]
    policy = open_policy(model, config, tokenizer.vocab_size, optimizer_state)
    fleet = None
    history = []

    def save(update: int) -> None:
        _save(checkpoint, {"update": update, "config_hash": config.hash(), **policy.checkpoint(),
                           "evictor": evictor.state.model_dump_json()})  # fmt: skip

    try:
        if served_elsewhere:  # vLLM servers: bring them to the trainer's weights first
            publish(engines, policy.full_state(), start, out, config.dtype)
        fleet = Fleet(engines, env, evictor, config, start)
        pool = env.tasks()
        with MetricsWriter(out / "metrics", start_update=start) as writer:
            for update in range(start, config.updates):
                started = time.time()
                groups, dropped, failed = fleet.take(config.groups_per_update, update)
                waited = time.time() - started
                if not groups:  # the pool is retired: the checkpoint says so, and a rerun ends at once
                    save(update - 1)
                    break
                episodes = [e for g in groups for e in g]
                step = policy.step(collate(episodes, pad_id=0))
                publish(engines, policy.full_state(), update + 1, out, config.dtype)
                for group in groups:
                    evictor.observe(group[0].task_id, [e.reward for e in group])
                reward = sum(e.reward for e in episodes) / len(episodes)
                lag_mean, lag_max = policy_lag([e.version for e in episodes], update)
                metrics = UpdateMetrics(
                    update=update, weight_version=update + 1, started_at=started, finished_at=time.time(),
                    rollout_wait_s=waited, train_s=time.time() - started - waited, loss=step.loss,
                    lr=config.lr, grad_norm=step.grad_norm, n_tokens=step.stats.tokens,
                    mismatch_kl=step.stats.mismatch_kl, entropy=step.stats.entropy,
                    masked_fraction=step.stats.masked_fraction, policy_lag_mean=lag_mean,
                    policy_lag_max=lag_max, stale_groups_dropped=dropped, infra_failed_groups=failed, reward=reward,
                    adjusted_reward=evictor.adjusted_reward(reward, pool),
                    retired_fraction=evictor.retired_fraction(pool),
                    success_rate=sum(e.success for e in episodes) / len(episodes),
                    replay_accuracy=_replay(evictor, env, engines[0], config, update),
                )  # fmt: skip
                writer.write(metrics)
                history.append(metrics)
                on_update(metrics)
                if (update + 1) % config.checkpoint_every == 0 or update + 1 == config.updates:
                    save(update)
    finally:
        if fleet is not None:
            fleet.stop()
        policy.close()
    return history


def _replay(evictor: Evictor, env: Environment, engine: Any, config: TrainConfig, update: int) -> float | None:
    """Forgetting probe: re-run a sample of easy-retired tasks (never trained on again)."""
    if not evictor.replay_due(update):
        return None
    tasks = evictor.replay_sample(update, config.seed)
    if not tasks:
        return None
    groups = {
        t: [env.rollout(t, engine, seed=10**9 + update * 1000 + i, group_id=f"replay-{update}", rollout_id=f"replay-{update}-{t}-{i}").reward
            for i in range(config.group_size)]
        for t in tasks
    }  # fmt: skip
    return evictor.replay_accuracy(groups)
