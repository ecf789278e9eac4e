"""The canary trial: one gold run per task and backend that tells which tests' twins fail as they must."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from harness.config import Settings
from harness.names import write_whole
from harness.grading.canaries.checking import Observed, input_values, validate
from harness.grading.canaries.planting import Planting, runs, trial
from harness.grading.tree import TaskFacts
from harness.records import Task, TestRun
from harness.sandboxes.sandbox import Backend


@dataclass(frozen=True)
class Pool:
    """What the canary trial found on gold: the tests whose twins fail as they must (a grade twins
    only these), and every test that passed (a grade's bound counts the untwinned ones); of the
    tests twinned at an input, the values that fail (``checking.input_values``)."""

    twinned: list[str]
    passing: list[str]
    inputs: dict[str, list[str]] = field(default_factory=dict)


_POOLS: dict[str, Pool] = {}


def canary_pool(task: Task, facts: TaskFacts, backend: Backend, key: str, run_in: Callable[..., TestRun]) -> Pool:
    """One gold run (``run_in``: the grader's) with two twins of every twinnable test the command
    runs, once per task and backend (memory, then disk, keyed like the facts); where tests are
    twinned at an input, a run of the unfixed tree with the same planting too (a twin at an input
    must fail on both). A trial that did not run clean validates nothing and is not kept, so the
    next grade tries again."""
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

    def observed(patch: str) -> TestRun:
        sandbox = backend.open(task)
        try:
            log_dir = Settings.from_env().cache_dir / "logs"
            return run_in(sandbox, task, facts, patch, {}, log_dir, False, None, key=key, draw=draw, raw=True)
        finally:
            sandbox.close()

    run = observed(task.answer.gold_patch)
    if run.outcome != "ok" or not planted:
        return Pool([], [])
    twinned, passing = validate(planted[0], run.statuses)
    inputs: dict[str, list[str]] = {}
    if any(c.value for c in planted[0].canaries):
        unfixed = observed("")
        seen: Observed | None = (unfixed.statuses, unfixed.raised) if unfixed.outcome == "ok" else None
        inputs = input_values(planted[0], (run.statuses, run.raised), seen)
    pool = Pool(sorted({*twinned, *inputs}), passing, inputs)
    write_whole(cache, json.dumps({"twinned": pool.twinned, "passing": pool.passing, "inputs": pool.inputs}))  # two workers may trial one task
    _POOLS[key] = pool
    return pool
