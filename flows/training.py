"""Training as Prefect flows: ``train`` (one run) and ``arms`` (every arm of a deck, one after another,
with one config and one seed, so the arms differ only in what curation changed).

A run is one coarse task: its loop already checkpoints and resumes after a kill, so Prefect adds the
record of what ran, with which config, and how it ended. ``on_update`` receives each update's metrics
(the CLI draws progress with it).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from prefect import flow, task
from prefect.cache_policies import NO_CACHE

from curation.decks import arm_tasks, arms
from harness.names import under
from training.metrics import plot_metrics
from training.run import RunConfig, run


@task(name="train-run", cache_policy=NO_CACHE)
def train_run(config: dict, out: str, deck: str | None = None, arm: str | None = None, on_update: Any = None) -> dict:
    """Train as configured into ``out`` (resuming from its checkpoint); with ``deck``, on ``arm``'s tasks."""
    cfg = RunConfig.model_validate(config)
    folder = Path(out)
    history = run(cfg, folder, tasks=arm_tasks(Path(deck), arm) if deck and arm else None, on_update=on_update)
    plot_metrics(folder / "metrics", folder / "metrics.png")
    last = history[-1] if history else None
    return {
        "run": out,
        "config_hash": cfg.hash(),
        "updates": [m.update for m in history],
        "reward": last.reward if last else None,
        "success_rate": last.success_rate if last else None,
        "metrics": str(folder / "metrics"),
        "plot": str(folder / "metrics.png"),
        "checkpoint": str(folder / "checkpoint.pt"),
    }


@flow(name="train")
def train_flow(config: dict, out: str, on_update: Any = None) -> dict:
    return train_run(config, out, on_update=on_update)


@flow(name="arms")
def arms_flow(deck: str, config: dict, out: str, only: list[str] | None = None, on_update: Any = None) -> dict[str, dict]:
    """Train each arm into ``out/<arm>``; ``on_update(arm, metrics)``."""
    if RunConfig.model_validate(config).env != "swe":
        raise ValueError('arms train on a deck\'s SWE tasks: set env = "swe" in the run config')
    return {
        arm: train_run(config, str(under(Path(out), arm)), deck, arm, on_update=_for_arm(on_update, arm))
        for arm in only or arms(Path(deck))
    }


def _for_arm(on_update: Callable[[str, Any], None] | None, arm: str) -> Callable[[Any], None] | None:
    return (lambda m: on_update(arm, m)) if on_update else None
