"""A training run as configured in TOML: the trainer, the environment, the engines and the GPU layout.

``swedeck train --config FILE`` reads a ``RunConfig``. The embedded default is the CPU run: the toy
environment, a tiny random model, two local engines. ``configs/train-8gpu.toml`` documents the
production layout on one 8-GPU node (2 trainer GPUs, 6 vLLM engines); ``swedeck arms`` runs the arms of
a deck with one config and one seed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.agent.loop import AgentConfig
from harness.config import ConfigError, SandboxConfig
from harness.records import Task, content_hash
from training.config import TrainConfig


class ToyConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tasks: int = Field(4, ge=1)
    strict: bool = True  # False: the broken recipe that rewards repaired turns
    skill: float = Field(0.3, ge=0, le=1)  # how often the warm-up demonstrations answer right


class SWEConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    sources: list[str] = Field(default_factory=list, description="task sources; empty: the sample corpus")
    tasks: list[str] = Field(default_factory=list, description="instance ids; empty: every task of the sources")
    sandbox: SandboxConfig = SandboxConfig()
    agent: AgentConfig = AgentConfig()


class LayoutConfig(BaseModel):
    """Where the engines run (the trainer's devices are ``train.devices``). Empty ``engine_urls``: local
    engines in this process, on the trainer's first device."""

    model_config = ConfigDict(extra="forbid")

    engine_gpus: list[int] = Field(default_factory=list)  # informational: the vLLM servers own them
    engine_urls: list[str] = Field(default_factory=list)
    served_model: str = "tiny-dense"


class RunConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    env: Literal["toy", "swe"] = "toy"
    train: TrainConfig = TrainConfig()
    toy: ToyConfig = ToyConfig()
    swe: SWEConfig = SWEConfig()
    layout: LayoutConfig = LayoutConfig()

    def hash(self) -> str:
        return content_hash(self)


def swe_tasks(config: SWEConfig) -> list[Task]:
    from curation.sources import load_sources
    from data import SAMPLE

    tasks = load_sources([Path(s) for s in config.sources] or [SAMPLE]).tasks
    return [t for t in tasks if not config.tasks or t.instance_id in config.tasks]


def run(config: RunConfig, out: Path, *, tasks: list[Task] | None = None, on_update=None) -> list:  # noqa: ANN001
    """Train as configured. ``tasks`` overrides the SWE task list (``swedeck arms`` passes an arm's)."""
    from harness.sandboxes.backends import get_backend
    from training.engines import VLLMClient
    from training.envs import SWEEnv, ToyEnv
    from training.policy import check_model
    from training.trainer import train

    on_update = on_update or (lambda m: None)
    check_model(config.train.model)
    if config.env == "toy":
        env = ToyEnv(config.toy.tasks, seed=config.train.seed, strict=config.toy.strict, skill=config.toy.skill)
        tokenizer, demos = env.tok, (lambda rng: env.demonstration(rng.choice(env.tasks()), rng))
    else:
        tokenizer, demos = swe_tokenizer(config), None
        backend = get_backend(config.swe.sandbox)
        env = SWEEnv(tasks if tasks is not None else swe_tasks(config.swe), backend, config.swe.agent, config.hash())
    engines = [VLLMClient(url, config.layout.served_model, tokenizer) for url in config.layout.engine_urls] or None
    return train(config.train, env, tokenizer, out, demos=demos, engines=engines, on_update=on_update)


def swe_tokenizer(config: RunConfig):  # noqa: ANN201 - a Tokenizer
    from harness.agent.engine import ByteTokenizer
    from training.models import HFTokenizer
    from training.policy import TINY_MODELS

    return ByteTokenizer() if config.train.model in TINY_MODELS else HFTokenizer(config.train.model)


def score(config: RunConfig, out: Path, tasks: list[Task], *, samples: int = 1) -> float:
    """The mean gated reward of the policy checkpointed in ``out`` on ``tasks`` (``samples`` rollouts
    each, seeds fixed by the config's seed): a trained arm's policy scored on another version of tasks
    it never trained on, such as the strengthened tests of held-out tasks."""
    import torch

    from harness.sandboxes.backends import get_backend
    from training.envs import SWEEnv
    from training.policy import build_policy
    from training.trainer import CHECKPOINT, engine_copy

    tokenizer = swe_tokenizer(config)
    model = build_policy(config.train, tokenizer.vocab_size)
    saved = torch.load(out / CHECKPOINT, weights_only=False)
    model.load_state_dict(saved["policy"])
    engine = engine_copy(model, config.train, tokenizer, saved["update"] + 1)
    env = SWEEnv(tasks, get_backend(config.swe.sandbox), config.swe.agent, config.hash())
    rewards = [
        env.rollout(t.instance_id, engine, seed=config.train.seed * 1000 + i, group_id=f"score-{t.instance_id}",
                    rollout_id=f"score-{t.instance_id}-{i}").reward
        for t in tasks for i in range(samples)
    ]  # fmt: skip
    return sum(rewards) / len(rewards) if rewards else 0.0


def held_out_ids(deck: Path, n: int) -> list[str]:
    """The ``n`` tasks every arm of ``deck`` holds out of training, none without a strengthened arm (see
    ``flows.training``)."""
    import hashlib

    from curation.deck_files import DECK_FILE
    from curation.store import read_records
    from harness.records import DeckRow

    rows = [r for r in read_records(deck / DECK_FILE, DeckRow) if r.arm == "strengthened"]
    ranked = sorted(rows, key=lambda r: (r.tests != "strengthened", hashlib.sha256(r.instance_id.encode()).hexdigest()))
    return [r.instance_id for r in ranked[:n]]


def check_arms(cfg: RunConfig, deck: Path, only: list[str] | None = None, held_out: int = 0) -> list[str]:
    """What an arms run needs before Prefect starts: a SWE run config, a deck folder, arms it has
    (``only``, else all of them) and a task left to train on in each once ``held_out`` are held out:
    the arms to train, in that order."""
    from curation.deck_files import DECK_FILE, arms
    from curation.store import read_records
    from harness.records import DeckRow

    if cfg.env != "swe":
        raise ConfigError('arms train on a deck\'s SWE tasks: set env = "swe" in the run config (--config FILE or --set env=swe); '
                          "configs/arms-cpu.toml is one")
    if not (deck / DECK_FILE).exists():
        raise ConfigError(f"{deck}: not a deck folder (no {DECK_FILE}); make one with `swedeck deck RUN_DIR --out DECK`")
    present = arms(deck)
    if unknown := [a for a in only or [] if a not in present]:
        raise ConfigError(f"--arm {', '.join(unknown)}: deck {deck} has no such arm; its arms: {', '.join(present)}")
    names = list(dict.fromkeys(only or present))
    kept_out = set(held_out_ids(deck, held_out))
    rows = read_records(deck / DECK_FILE, DeckRow)
    if empty := [a for a in names if not [r for r in rows if r.arm == a and r.instance_id not in kept_out]]:
        raise ConfigError(f"--held-out {held_out}: arm {', '.join(empty)} of {deck} would have no task left to train on")
    return names
