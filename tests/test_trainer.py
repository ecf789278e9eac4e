"""The async GRPO trainer end to end on CPU: a tiny model learns the toy environment with real weight
refreshes, stale groups are dropped, a killed run resumes, and the overfit fit reads a curve's ceiling."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from training.config import TrainConfig  # noqa: E402
from training.engine_server import EngineServer  # noqa: E402
from training.engines import VLLMClient  # noqa: E402
from training.envs import Episode, ToyEnv  # noqa: E402
from training.eviction import EvictionConfig  # noqa: E402
from training.metrics import read_metrics  # noqa: E402
from training.overfit import fit_acquisition  # noqa: E402
from training.policy import build_policy, token_logprobs  # noqa: E402
from training.trainer import collate, engine_copy, train  # noqa: E402

NO_EVICTION = EvictionConfig(retire_easy=False, hard_after=None, replay_every=None)


def run(env: ToyEnv, out: Path, **overrides: object) -> list:
    config = TrainConfig(**{"eviction": NO_EVICTION, **overrides})
    return train(config, env, env.tok, out, demos=lambda rng: env.demonstration(rng.choice(env.tasks()), rng))


def test_collate_aligns_each_position_with_the_token_it_predicts() -> None:
    e = Episode(task_id="t", group_id="g", tokens=[5, 6, 7, 8], mask=[0, 0, 1, 1], logprobs=[0, 0, -0.5, -0.25],
                reward=1.0, success=True, version=0, termination="submitted")  # fmt: skip
    short = e.model_copy(update={"tokens": [5, 6, 7], "mask": [0, 1, 1], "logprobs": [0, -1.0, -2.0]})
    batch = collate([e, short], pad_id=0)
    assert batch["tokens"].tolist() == [[5, 6, 7, 8], [5, 6, 7, 0]]
    assert batch["mask"].tolist() == [[0, 1, 1], [1, 1, 0]]  # position t scores tokens[t + 1]
    assert batch["logp_rollout"].tolist() == [[0, -0.5, -0.25], [-1.0, -2.0, 0]]


def test_trainer_and_engine_agree_on_the_sampled_tokens() -> None:
    """Same weights, so ω = 1 on every sampled token: what the trainer scores is what the engine sampled."""
    env = ToyEnv()
    config = TrainConfig()
    policy = build_policy(config, env.tok.vocab_size)
    engine = engine_copy(policy, config, env.tok, 0)
    episodes = [env.rollout(t, engine, seed=i, group_id="g", rollout_id=f"r{i}") for i, t in enumerate(env.tasks() * 4)]
    batch = collate(episodes, pad_id=0)
    with torch.no_grad():
        _, logp = token_logprobs(policy, batch["tokens"])
    keep = batch["mask"].bool()
    assert keep.sum() > 0
    assert torch.allclose(logp[keep], batch["logp_rollout"][keep], atol=1e-4)


def test_async_training_learns_the_toy_environment(tmp_path: Path) -> None:
    env = ToyEnv()
    history = run(env, tmp_path, updates=24)
    success = [m.success_rate for m in history]
    assert sum(success[-5:]) / 5 > sum(success[:3]) / 3 + 0.15, success
    # rollouts overlapped training: some were sampled under older weights, none beyond the cap
    assert max(m.policy_lag_max for m in history) >= 1
    assert all(m.policy_lag_max <= 4 for m in history)
    assert [m.update for m in read_metrics(tmp_path / "metrics")] == list(range(24))
    assert all(m.mismatch_kl >= 0 and 0 <= m.masked_fraction <= 1 for m in history)


def test_stale_groups_are_dropped_and_counted(tmp_path: Path) -> None:
    history = run(ToyEnv(), tmp_path, updates=6, staleness_cap=0, max_inflight_groups=16, warmup_steps=20, group_size=4)
    assert sum(m.stale_groups_dropped for m in history) > 0
    assert all(m.policy_lag_max == 0 for m in history)  # nothing older than the cap was trained on


class InfraFailingEnv(ToyEnv):
    """The toy environment, but every rollout of toy-1 ends in env_error, with a reward of 1 that
    would retire toy-1 at once if such a group were ever trained on."""

    def rollout(self, task_id: str, engine, *, seed: int, group_id: str, rollout_id: str) -> Episode:  # noqa: ANN001
        episode = super().rollout(task_id, engine, seed=seed, group_id=group_id, rollout_id=rollout_id)
        if task_id != "toy-1":
            return episode
        return episode.model_copy(update={"termination": "env_error", "reward": 1.0, "success": True})


def test_regression_groups_with_an_infrastructure_failure_are_dropped_not_trained(tmp_path: Path) -> None:
    env = InfraFailingEnv(skill=0.0)  # no other task's group is all correct: nothing else retires
    retire_only = EvictionConfig(retire_easy=True, hard_after=None, replay_every=None)
    history = run(env, tmp_path, updates=4, warmup_steps=20, group_size=4, groups_per_update=2, eviction=retire_only)
    assert sum(m.infra_failed_groups for m in history) > 0
    assert all(m.retired_fraction == 0 for m in history)


def test_regression_a_killed_run_resumes_from_its_checkpoint(tmp_path: Path) -> None:
    env = ToyEnv()
    seen: list[int] = []

    def crash(m) -> None:  # noqa: ANN001
        seen.append(m.update)
        if m.update == 4:
            raise KeyboardInterrupt

    config = TrainConfig(eviction=NO_EVICTION, updates=7, checkpoint_every=3, warmup_steps=20)
    with pytest.raises(KeyboardInterrupt):
        train(config, env, env.tok, tmp_path, demos=lambda rng: env.demonstration("toy-0", rng), on_update=crash)
    resumed = train(config, env, env.tok, tmp_path)
    assert [m.update for m in resumed] == [3, 4, 5, 6]  # from the checkpoint after update 2
    assert [m.update for m in read_metrics(tmp_path / "metrics")] == list(range(7))
    with pytest.raises(ValueError, match="another config"):
        train(config.model_copy(update={"lr": 0.5}), env, env.tok, tmp_path)


@pytest.mark.parametrize(("model", "dtype"), [("tiny-dense", "float32"), ("tiny-hybrid", "bfloat16")])
def test_weights_reach_vllm_style_servers(tmp_path: Path, model: str, dtype: str) -> None:
    """The remote path: pause, load the saved weights, resume; the server then samples the new policy.
    The file is in the engines' dtype, the hybrid's gate tensors kept fp32."""
    from training.models import FP32_BUFFERS, FP32_PARAMS, matches

    env = ToyEnv()
    config = TrainConfig(model=model, dtype=dtype, eviction=NO_EVICTION, updates=3, warmup_steps=20, engines=1,
                         max_inflight_groups=2, group_size=4)  # fmt: skip
    served = engine_copy(build_policy(config, env.tok.vocab_size), config, env.tok, 0)
    with EngineServer(served, model=model) as url, VLLMClient(url, model, env.tok) as client:
        history = train(config, env, env.tok, tmp_path, demos=lambda rng: env.demonstration("toy-0", rng), engines=[client])
        assert client.server_weight_version() == 3
    assert [m.weight_version for m in history] == [1, 2, 3]
    saved = torch.load(tmp_path / "weights.pt", weights_only=True)
    assert saved.keys() == served.model.state_dict().keys()
    for name, tensor in served.model.state_dict().items():
        assert torch.equal(tensor, saved[name]), name
        kept = matches(name, FP32_PARAMS + FP32_BUFFERS)
        assert saved[name].dtype == (torch.float32 if kept else getattr(torch, dtype)), name
    assert (model == "tiny-hybrid") == any(matches(name, FP32_PARAMS) for name in saved)


def test_the_vllm_worker_extension_loads_the_published_weights(tmp_path: Path) -> None:
    """vLLM mixes ``WeightsFromPath`` into its worker and calls it with the client's arguments; the model
    here stands in for vLLM's, whose ``load_weights`` takes (name, tensor) pairs."""
    from training.vllm_worker import WeightsFromPath

    config = TrainConfig()
    trained, served = build_policy(config, 32), build_policy(config.model_copy(update={"seed": 1}), 32)
    served.load_weights = lambda weights: served.load_state_dict(dict(weights))
    worker = WeightsFromPath()
    worker.model_runner = type("Runner", (), {"model": served})()
    path = tmp_path / "weights.pt"
    torch.save(trained.state_dict(), path)  # what publish() writes for remote engines
    worker.update_weights_from_path(str(path), version="3")
    for name, tensor in trained.state_dict().items():
        assert torch.equal(served.state_dict()[name], tensor), name


def test_eviction_retires_solved_tasks_and_adjusts_the_reward(tmp_path: Path) -> None:
    env = ToyEnv(skill=1.0, ramble=0.0)  # the warm-up already solves it: every group is all correct
    # async rollouts: which weights sample which group depends on the machine's timing, so a loaded
    # machine may see one wrong rollout in every group of an update; over three, some group is solved
    history = run(env, tmp_path, updates=3, eviction=EvictionConfig(replay_every=None), groups_per_update=2)
    retired = max(history, key=lambda m: m.retired_fraction)
    assert retired.retired_fraction > 0
    assert retired.adjusted_reward >= retired.retired_fraction


@pytest.mark.parametrize(("g", "d", "q0"), [(0.08, 0.01, 0.1), (0.2, 0.2, 0.0), (0.02, 0.0, 0.3)])
def test_fit_recovers_the_acquisition_model(g: float, d: float, q0: float) -> None:
    k, c = g + d, g / (g + d)
    rng = random.Random(0)
    q = [c - (c - q0) * math.exp(-k * u) + rng.gauss(0, 0.01) for u in range(80)]
    fit = fit_acquisition(q)
    assert fit.ceiling == pytest.approx(c, abs=0.05)
    assert fit.eps == pytest.approx(d / (g + d), abs=0.05)
    assert fit.g + fit.d == pytest.approx(k, rel=0.3)


def test_hybrid_engines_in_bf16_keep_the_gate_in_fp32_through_refreshes(tmp_path: Path) -> None:
    """The Qwen3.5 hybrid trains with bf16 engines; every weight refresh copies into the engine's own
    tensors, so A_log, dt_bias and the gated norm stay fp32 there (a silent bf16 cast would show)."""
    from training.models import fp32_violations

    env = ToyEnv()
    config = TrainConfig(model="tiny-hybrid", dtype="bfloat16", updates=2, warmup_steps=5, group_size=4,
                         groups_per_update=2, engines=1, eviction=NO_EVICTION)  # fmt: skip
    engine = engine_copy(build_policy(config, env.tok.vocab_size), config, env.tok, 0)
    assert next(engine.model.parameters()).dtype == torch.bfloat16 and not fp32_violations(engine.model)
    history = train(config, env, env.tok, tmp_path, engines=[engine])
    assert engine.weight_version == 2 and [m.update for m in history] == [0, 1]
    assert fp32_violations(engine.model) == []


def test_a_checkpoint_folder_is_a_policy(tmp_path: Path) -> None:
    """``train.model`` may name a local checkpoint: it loads in fp32 with the gate parameters kept fp32,
    trains, and its tokenizer speaks the harness's Tokenizer protocol."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    from training.models import HFTokenizer, fp32_violations, tiny_model
    from training.run import RunConfig, run

    env = ToyEnv()
    checkpoint = tmp_path / "ckpt"
    tiny_model("hybrid", seed=3, vocab_size=env.tok.vocab_size, dtype=torch.bfloat16).save_pretrained(checkpoint)
    words = Tokenizer(models.WordLevel({"<|im_end|>": 0, "fix": 1, "[UNK]": 2}, unk_token="[UNK]"))
    words.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(tokenizer_object=words, unk_token="[UNK]", additional_special_tokens=["<|im_end|>"]).save_pretrained(checkpoint)
    tok = HFTokenizer(str(checkpoint))
    assert tok.stop_id == 0 and tok.encode("fix <|im_end|>") == [1, 0] and "<|im_end|>" in tok.decode([1, 0])

    config = RunConfig.model_validate({"train": {"model": str(checkpoint), "updates": 2, "warmup_steps": 5,
                                                 "group_size": 4, "groups_per_update": 2, "eviction": NO_EVICTION.model_dump()}})  # fmt: skip
    history = run(config, tmp_path / "run")
    assert [m.update for m in history] == [0, 1]
    policy = build_policy(config.train, env.tok.vocab_size)
    assert next(policy.parameters()).dtype == torch.float32 and fp32_violations(policy) == []


def test_the_documented_8gpu_layout_is_a_valid_run_config() -> None:
    from flows.config import load_model
    from training.run import RunConfig

    config = load_model(RunConfig, Path(__file__).parents[1] / "configs" / "train-8gpu.toml")
    assert config.env == "swe" and config.train.devices == ["cuda:0", "cuda:1"]
    assert len(config.layout.engine_gpus) == len(config.layout.engine_urls) == 6
    assert config.train.placement.policy == "load_aware" and config.train.staleness_cap == 4
