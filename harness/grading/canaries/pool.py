"""The canary trial: one gold run per task and backend that tells which tests' twins fail as they must."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass

from harness.config import Settings
from harness.grading.canaries.checking import validate
from harness.grading.canaries.planting import Planting, runs, trial
from harness.grading.tree import TaskFacts
from harness.records import Task, TestRun
from harness.sandboxes.sandbox import Backend


@dataclass(frozen=True)
class Pool:
    """What the canary trial found on gold: the tests whose twins fail as they must (a grade twins
    only these), and every test that passed (a grade's bound counts the untwinned ones)."""

    twinned: list[str]
    passing: list[str]


_POOLS: dict[str, Pool] = {}


def canary_pool(task: Task, facts: TaskFacts, backend: Backend, key: str, run_in: Callable[..., TestRun]) -> Pool:
    """One gold run (``run_in``: the grader's) with two twins of every twinnable test the command
    runs, once per task and backend (memory, then disk, keyed like the facts). A trial that did not
    run clean validates nothing and is not kept, so the next grade tries again."""
    if key in _POOLS:
        return _POOLS[key]
    cache = Settings.from_env().cache_dir / "canaries" / f"twins-{key}.json"
    if cache.exists():
        _POOLS[key] = Pool(**json.loads(cache.read_text()))
        return _POOLS[key]
    planted: list[Planting] = []

    def draw(texts: dict[str, bytes], rng: random.Random) -> Planting:
        planted.append(trial(texts, random.Random(key), runs(task.test_cmd)))
        return planted[-1]

    sandbox = backend.open(task)
    try:
        log_dir = Settings.from_env().cache_dir / "logs"
        run = run_in(sandbox, task, facts, task.answer.gold_patch, {}, log_dir, False, None, key=key, draw=draw, raw=True)
    finally:
        sandbox.close()
    if run.outcome != "ok" or not planted:
        return Pool([], [])
    pool = Pool(*validate(planted[0], run.statuses))
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps({"twinned": pool.twinned, "passing": pool.passing}))
    _POOLS[key] = pool
    return pool
