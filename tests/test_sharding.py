"""The policy sharded over several trainer devices (FSDP2, one process per device, gloo on CPU) takes
the same step as the policy on one device, checkpoints in the same layout, and drives a training run."""

from __future__ import annotations

import copy
import os
import random
import signal
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from training.config import TrainConfig
from training.envs import ToyEnv
from training.eviction import EvictionConfig
from training.metrics import read_metrics
from training.policy import LocalPolicy, ShardedPolicy, build_policy, loss_and_stats, shard_batch, token_logprobs
from training.trainer import train

VOCAB = 48
CONFIG = TrainConfig(devices=["cpu", "cpu"], group_size=4, groups_per_update=2, lr=3e-3, max_grad_norm=50.0)


def batch(model: object, seed: int) -> dict[str, torch.Tensor]:
    """Eight rollouts of uneven length; rollout log-probs near the model's, some far enough off for the
    IcePop mask to drop them; rewards that give every group a non-zero advantage."""
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(1, VOCAB, (8, 12), generator=g)
    mask = (torch.rand(8, 11, generator=g) < 0.7).float()
    for row, length in enumerate([11, 9, 6, 11, 3, 8, 10, 5]):
        tokens[row, length + 1 :] = 0
        mask[row, length:] = 0
    with torch.no_grad():
        _, logp = token_logprobs(model, tokens)
    logp_rollout = logp + 0.5 * torch.randn(logp.shape, generator=g)
    rewards = torch.tensor([1.0, 0, 0, 1, 0, 1, 1, 1])
    return {"tokens": tokens, "mask": mask, "logp_rollout": logp_rollout, "rewards": rewards}


@pytest.mark.parametrize("normalisation", ["batch_tokens", "per_rollout"])
@pytest.mark.parametrize("objective", ["cispo", "ppo"])
def test_shard_losses_sum_to_the_whole_batch_loss_and_gradient(normalisation: str, objective: str) -> None:
    config = CONFIG.model_copy(update={"normalisation": normalisation, "objective": objective})
    model = build_policy(config, VOCAB)
    whole = batch(model, seed=1)

    def gradient(shards: list[dict[str, torch.Tensor]]) -> tuple[float, torch.Tensor]:
        model.zero_grad()
        losses = [loss_and_stats(model, shard, config)[0] for shard in shards]
        sum(losses).backward()
        return float(sum(losses).detach()), torch.cat([p.grad.flatten() for p in model.parameters()])

    one_loss, one_grad = gradient(shard_batch(whole, config, 1))
    three_loss, three_grad = gradient(shard_batch(whole, config, 3))
    assert one_grad.abs().sum() > 0
    assert three_loss == pytest.approx(one_loss, rel=1e-5)
    assert torch.allclose(three_grad, one_grad, atol=1e-6)


@pytest.mark.parametrize(
    ("devices", "error"),
    [([], "one kind"), (["cpu", "cuda:1"], "one kind"), (["cuda", "cuda:0"], "its own GPU"), (["cpu"] * 9, "rollouts per update")],
)
def test_trainer_devices_are_checked_before_anything_starts(devices: list[str], error: str) -> None:
    with pytest.raises(ValueError, match=error):
        TrainConfig(devices=devices, group_size=4, groups_per_update=2)


def assert_same_state(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> None:
    assert a.keys() == b.keys()
    for name in a:
        assert torch.allclose(a[name].cpu(), b[name].cpu(), atol=1e-5), name


def test_a_sharded_step_is_the_one_device_step_and_resumes_from_its_checkpoint() -> None:
    start = build_policy(CONFIG, VOCAB)
    with torch.no_grad():  # rank 0's weights differ from what the other ranks build: its weights must win
        for p in start.parameters():
            p.add_(0.01 * torch.randn_like(p))
    local = LocalPolicy(copy.deepcopy(start), CONFIG)
    sharded = ShardedPolicy(copy.deepcopy(start), CONFIG, VOCAB)
    try:
        for seed in (1, 2):
            data = batch(local.model, seed)
            want, got = local.step(data), sharded.step(data)
            assert got.loss == pytest.approx(want.loss, rel=1e-4)
            assert got.grad_norm == pytest.approx(want.grad_norm, rel=1e-4)
            assert got.stats.tokens == want.stats.tokens
            assert got.stats.masked_fraction == pytest.approx(want.stats.masked_fraction)
            assert got.stats.mismatch_kl == pytest.approx(want.stats.mismatch_kl, rel=1e-4)
        assert_same_state(sharded.full_state(), local.model.state_dict())
        # each rank holds about half of the weights, gradients and AdamW moments
        whole, halves = local.memory()[0], sharded.memory()
        assert len(halves) == 2 and max(halves) < 0.6 * whole <= 0.6 * sum(halves), (whole, halves)
        saved = sharded.checkpoint()
    finally:
        sharded.close()
    assert all(not process.is_alive() for process, _ in sharded.workers)
    reference = local.checkpoint()
    assert_same_state(saved["policy"], reference["policy"])
    assert saved["optimizer"]["state"].keys() == reference["optimizer"]["state"].keys()

    # resume: the saved weights and AdamW moments on every rank, so the next step matches again
    model = build_policy(CONFIG, VOCAB)
    model.load_state_dict(saved["policy"])
    resumed = ShardedPolicy(model, CONFIG, VOCAB, saved["optimizer"])
    try:
        data = batch(local.model, seed=3)
        assert resumed.step(data).loss == pytest.approx(local.step(data).loss, rel=1e-4)
        assert_same_state(resumed.full_state(), local.model.state_dict())
    finally:
        resumed.close()


def test_regression_a_dead_rank_is_reported_not_waited_for() -> None:
    """A rank that died (out of memory, killed) must fail the next step with its name, not leave rank 0
    waiting in a collective for it."""
    model = build_policy(CONFIG, VOCAB)
    data = batch(model, seed=1)
    sharded = ShardedPolicy(model, CONFIG, VOCAB)
    try:
        sharded.step(data)
        process = sharded.workers[0][0]
        os.kill(process.pid, signal.SIGKILL)
        process.join(10)
        with pytest.raises(RuntimeError, match=r"rank 1 exited \(code -9\) before 'step'"):
            sharded.step(data)
    finally:
        sharded.close()


def test_regression_a_rank_that_cannot_build_its_model_is_reported_at_start(tmp_path: Path) -> None:
    """Rank 0 holds a model, but the other ranks build theirs from the config: a path they cannot load
    must end the start with their error, not leave rank 0 in the rendezvous."""
    config = CONFIG.model_copy(update={"model": str(tmp_path / "missing-checkpoint")})
    with pytest.raises(RuntimeError, match="rank 1 exited .* while building its model"):
        ShardedPolicy(build_policy(CONFIG, VOCAB), config, VOCAB)


@pytest.mark.slow  # the default tier resumes a sharded step from its checkpoint and a one-device run after a kill
def test_a_sharded_run_trains_and_resumes_after_a_kill(tmp_path: Path) -> None:
    env = ToyEnv(skill=0.5)  # half the warmed-up answers right: groups of mixed reward, so a gradient
    config = TrainConfig(
        devices=["cpu", "cpu"], updates=4, checkpoint_every=2, warmup_steps=60, group_size=8, groups_per_update=2,
        staleness_cap=0,  # every trained rollout was sampled under the trainer's current weights
        eviction=EvictionConfig(retire_easy=False, hard_after=None, replay_every=None),
    )  # fmt: skip

    def crash(m) -> None:  # noqa: ANN001
        if m.update == 2:
            raise KeyboardInterrupt

    def demos(rng: random.Random) -> tuple[list[int], list[int]]:
        return env.demonstration(rng.choice(env.tasks()), rng)

    with pytest.raises(KeyboardInterrupt):
        train(config, env, env.tok, tmp_path, demos=demos, on_update=crash)
    resumed = train(config, env, env.tok, tmp_path)
    assert [m.update for m in resumed] == [2, 3]
    history = read_metrics(tmp_path / "metrics")
    assert [m.update for m in history] == [0, 1, 2, 3]
    assert all(m.n_tokens > 0 for m in history) and all(m.grad_norm > 0 for m in history), [m.reward for m in history]
    # the engines were refreshed from the gathered weights: what they sampled, the trainer scores alike
    assert all(m.policy_lag_max == 0 and m.mismatch_kl < 1e-6 for m in history), [m.mismatch_kl for m in history]
