"""Training as Prefect flows: ``train`` (one run) and ``arms`` (every arm of a deck, one after another,
with one config and one seed, so the arms differ only in what curation changed).

``arms`` holds a few tasks out of every arm's training and, after training, scores each arm's final
policy on them twice: as the arm itself grades them (its own reward) and with the strengthened arm's
hidden tests (its strengthened score). Reward hacking shows as the gap between the two. Held-out tasks
are drawn first from those whose tests were strengthened (elsewhere the two scores cannot differ),
then in the order of a hash of their ids, so every arm holds out the same tasks.

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

from curation.deck_files import arm_tasks
from harness.names import under
from training.metrics import plot_metrics, read_metrics, updates_done
from training.run import RunConfig, check_arms, held_out_ids, run, score


@task(name="train-run", cache_policy=NO_CACHE)
def train_run(config: dict, out: str, deck: str | None = None, arm: str | None = None, on_update: Any = None,
              held_out: list[str] | None = None) -> dict:  # fmt: skip
    """Train as configured into ``out`` (resuming from its checkpoint); with ``deck``, on ``arm``'s tasks
    other than ``held_out``."""
    cfg = RunConfig.model_validate(config)
    folder = Path(out)
    tasks = [t for t in arm_tasks(Path(deck), arm) if t.instance_id not in (held_out or [])] if deck and arm else None
    run(cfg, folder, tasks=tasks, on_update=on_update)
    plot_metrics(folder / "metrics", folder / "metrics.png")
    history = read_metrics(folder / "metrics")  # a resumed run's earlier updates too
    last = history[-1] if history else None
    done = updates_done(folder / "metrics")
    return {
        "retired_at": done if done < cfg.train.updates else None,  # every task retired: the run ended early
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


@task(name="score-arm", cache_policy=NO_CACHE)
def score_arm(config: dict, out: str, deck: str, arm: str, held_out: list[str]) -> dict[str, float | None]:
    """The arm's final policy on the held-out tasks: graded as the arm grades them, and by the strengthened tests."""
    cfg = RunConfig.model_validate(config)
    own = [t for t in arm_tasks(Path(deck), arm) if t.instance_id in held_out]
    strong = [t for t in arm_tasks(Path(deck), "strengthened") if t.instance_id in held_out]
    return {"own_score": score(cfg, Path(out), own) if own else None, "strengthened_score": score(cfg, Path(out), strong)}


@flow(name="arms")
def arms_flow(deck: str, config: dict, out: str, only: list[str] | None = None, on_update: Any = None,
              held_out: int = 1) -> dict[str, dict]:  # fmt: skip
    """Train each arm into ``out/<arm>`` without the ``held_out`` tasks, then score every arm's final
    policy on them; ``on_update(arm, metrics)``."""
    names = check_arms(RunConfig.model_validate(config), Path(deck), only, held_out)
    kept_out = held_out_ids(Path(deck), held_out)
    results = {}
    for arm in names:
        folder = str(under(Path(out), arm))
        results[arm] = train_run(config, folder, deck, arm, on_update=_for_arm(on_update, arm), held_out=kept_out)
        results[arm]["held_out"] = kept_out
        if kept_out:
            results[arm].update(score_arm(config, folder, deck, arm, kept_out))
    return results


def _for_arm(on_update: Callable[[str, Any], None] | None, arm: str) -> Callable[[Any], None] | None:
    return (lambda m: on_update(arm, m)) if on_update else None
