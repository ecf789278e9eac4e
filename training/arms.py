"""Paired arms: train on each arm of a deck with one config and one seed, so the arms differ only in
what curation changed (the issue text, the task set, later the tests)."""

from __future__ import annotations

from pathlib import Path

from curation.decks import arm_tasks, arms
from training.run import RunConfig, run


def run_arms(deck: Path, config: RunConfig, out: Path, *, only: list[str] | None = None, on_update=None) -> dict[str, list]:  # noqa: ANN001
    if config.env != "swe":
        raise ValueError('arms train on a deck\'s SWE tasks: set env = "swe" in the run config')
    results = {}
    for arm in only or arms(deck):
        results[arm] = run(config, out / arm, tasks=arm_tasks(deck, arm), on_update=(lambda m, a=arm: on_update(a, m)) if on_update else None)
    return results
