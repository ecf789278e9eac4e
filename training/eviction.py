"""Easy/hard task eviction and the replay probe that watches for forgetting.

A group whose rollouts all succeed, or all fail, has zero advantage everywhere and so gives no
gradient; sampling its task again spends rollouts (the expensive part) on nothing. So a task is
*retired* from the training pool:

- **easy** the first time one of its groups is all correct (``retire_easy``);
- **hard** after ``hard_after`` consecutive all-wrong groups; any group with a correct rollout resets
  the count, since it shows the task is within reach.

Retirement is permanent. Once easy tasks leave, the raw batch reward drops although the policy did not
get worse, so the *eviction-adjusted reward* estimates the reward over the whole pool instead: the
batch reward stands for the active tasks, easy-retired tasks count as solved and hard-retired ones as
unsolved. The adjusted reward assumes a solved task stays solved; the *replay probe* checks that by
re-running a seeded sample of easy-retired tasks every ``replay_every`` updates and reporting their
success rate (forgetting shows up as a falling replay accuracy). The probe only measures: a replayed
task is never put back into the pool.

Everything here is pure and deterministic; ``EvictionState`` is the whole mutable state, a pydantic
model so a checkpoint can store it as JSON and a resumed run continues exactly where it stopped.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Reason = Literal["easy", "hard"]


class EvictionConfig(BaseModel):
    """``hard_after`` / ``replay_every`` of None switch the hard rule / the replay probe off.

    A rollout is correct when its reward reaches ``solved_reward`` (the grader's reward is 1 or 0), and
    wrong otherwise, so "all wrong" means "no rollout solved it" even under partial or shaped rewards.
    """

    model_config = ConfigDict(extra="forbid")

    retire_easy: bool = True
    hard_after: int | None = Field(default=3, ge=1)
    replay_every: int | None = Field(default=10, ge=1)
    replay_k: int = Field(default=8, ge=1)
    solved_reward: float = Field(1.0, gt=0, le=1)


class EvictionState(BaseModel):
    """Retired tasks (in retirement order) and the running all-wrong streak of each active task."""

    model_config = ConfigDict(extra="forbid")

    retired: dict[str, Reason] = Field(default_factory=dict)
    all_wrong_streak: dict[str, int] = Field(default_factory=dict)


class Evictor:
    """Applies an ``EvictionConfig`` to an ``EvictionState``, which it mutates in place.

    Checkpoint ``evictor.state.model_dump_json()``; resume with
    ``Evictor(config, EvictionState.model_validate_json(text))``.
    """

    def __init__(self, config: EvictionConfig, state: EvictionState | None = None) -> None:
        self.config = config
        self.state = state if state is not None else EvictionState()

    def observe(self, task_id: str, rewards: Sequence[float]) -> Reason | None:
        """Record one finished training group of ``task_id``; return the reason if it retires now.

        A task already retired is left as it is: in an async trainer a second group of the task can
        still be in flight when the first retires it, and a replay group fed here by mistake must not
        un-retire it or move it from easy to hard.
        """
        if not rewards:
            raise ValueError(f"empty group for task {task_id!r}")
        if task_id in self.state.retired:
            return None
        correct = [r >= self.config.solved_reward for r in rewards]
        if self.config.retire_easy and all(correct):
            return self._retire(task_id, "easy")
        if any(correct):
            self.state.all_wrong_streak.pop(task_id, None)
            return None
        streak = self.state.all_wrong_streak.get(task_id, 0) + 1
        if self.config.hard_after is not None and streak >= self.config.hard_after:
            return self._retire(task_id, "hard")
        self.state.all_wrong_streak[task_id] = streak
        return None

    def _retire(self, task_id: str, reason: Reason) -> Reason:
        self.state.retired[task_id] = reason
        self.state.all_wrong_streak.pop(task_id, None)
        return reason

    def active(self, pool: Iterable[str]) -> list[str]:
        """The tasks of ``pool`` still trained on, in pool order."""
        return [t for t in pool if t not in self.state.retired]

    def _count(self, pool: Collection[str], reason: Reason) -> int:
        return sum(1 for t in pool if self.state.retired.get(t) == reason)

    def retired_fraction(self, pool: Collection[str]) -> float:
        """Retired tasks of ``pool`` (either reason) over its size; 0 for an empty pool."""
        return sum(1 for t in pool if t in self.state.retired) / max(len(pool), 1)

    def adjusted_reward(self, reward: float, pool: Collection[str]) -> float:
        """Estimated mean reward over the whole ``pool`` given the batch ``reward`` on active tasks.

        Easy-retired tasks count as solved (reward 1). Hard-retired tasks count as unsolved (0), not as
        solved: they left the pool because the policy never solved them, and crediting them would make
        the curve rise whenever hopeless tasks are dropped.
        """
        easy, hard = self._count(pool, "easy"), self._count(pool, "hard")
        n_active = len(pool) - easy - hard
        return (n_active * reward + easy) / max(len(pool), 1)

    def replay_due(self, update: int) -> bool:
        """Whether the probe runs at ``update``: every ``replay_every`` updates, never at update 0."""
        every = self.config.replay_every
        return every is not None and update > 0 and update % every == 0

    def replay_sample(self, update: int, seed: int, k: int | None = None) -> list[str]:
        """The easy-retired tasks to replay at ``update`` (``k`` defaults to ``replay_k``); [] unless due.

        The same (seed, update, retired set) always gives the same sample, so a resumed run replays what
        the lost one would have. Hard-retired tasks are left out: they were never solved, so there is
        nothing to forget.
        """
        if not self.replay_due(update):
            return []
        easy = sorted(t for t, reason in self.state.retired.items() if reason == "easy")
        n = min(self.config.replay_k if k is None else k, len(easy))
        return sorted(random.Random(f"{seed}:{update}").sample(easy, n))

    def replay_accuracy(self, groups: Mapping[str, Sequence[float]]) -> float | None:
        """Share of correct rollouts over the replayed groups (task id -> rewards); None if none ran."""
        rewards = [r for group in groups.values() for r in group]
        if not rewards:
            return None
        return sum(r >= self.config.solved_reward for r in rewards) / len(rewards)
