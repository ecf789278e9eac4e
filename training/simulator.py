"""A discrete-event simulator of the async rollout fleet, to compare placement policies without GPUs.

Model (all times in simulated seconds; nothing sleeps, the clock jumps from event to event):

Engines   continuous batching: one decode step emits a token for every running sequence and takes
          ``step_base_s + step_per_seq_s * running``, so each sequence slows as its engine fills. At
          most ``max_running`` sequences decode at once (vLLM ``max_num_seqs``, in practice the KV
          memory for long agent contexts); further turns wait in the engine's FIFO queue. Between
          events the running set is fixed, so all running sequences advance at one token rate: an
          engine keeps a single counter of tokens served per running sequence and a heap of the counter
          values at which each running turn ends, instead of an event per token.
Rollouts  ``group_size`` per group, all on the engine the placement chose. Turn counts are lognormal
          with a per-task factor the group shares (a hard task is long for every attempt), capped at
          ``max_turns``. A turn generates lognormal tokens on the engine, then runs a lognormal
          environment step (tool call, tests) in the rollout's sandbox, off the engine; sandboxes never
          run out. The last turn's environment step is the grading.
Versions  a rollout's version is the engine's weight version when its first token is sampled; later
          turns continue under newer weights, so that oldest token is what bounds how off-policy the
          rollout is. A group's version is its oldest rollout's, and its lag is the trainer's version
          when the group reaches the trainer minus that.
Trainer   a group enters the buffer when all its rollouts are done. Whenever the trainer is free it
          drops the buffered groups whose lag exceeds ``staleness_cap`` (counted against the coming
          update), then trains on the ``batch_groups`` oldest if that many are left. An update is
          ``train_s`` of training, then ``sync_s`` of weight refresh while every engine pauses; at its
          end the trainer and all engines hold the new version.
Admission ``groups_in_flight`` groups are admitted at all times: a finished group is replaced at once.
          The placement may hold a new group back (``None``); it is retried whenever a rollout
          finishes. A held-back group has sampled nothing, so it does not age.

Each group's workload is drawn from its own ``Random(f"{seed}/{index}")``, so two policies run with
the same config face the same tasks, turns and tool times: their differences come from placement.
"""

from __future__ import annotations

import heapq
import math
import random
import statistics
from collections import deque
from dataclasses import dataclass, field
from itertools import count

from pydantic import BaseModel, ConfigDict, Field, model_validator

from training.placement import Placement

# a turn ends when the engine's served-token counter reaches its threshold; float sums drift by far
# less than this over a run, and a thousandth of a token is far below any time that matters
TOKEN_EPS = 1e-3


class FleetConfig(BaseModel):
    """One fleet and trainer. The defaults model one node of the paper's setting: 6 engines serving
    multi-turn SWE agents whose turn counts are long-tailed, a trainer updating on 20 groups of 8."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    engines: int = Field(6, ge=1)
    group_size: int = Field(8, ge=1, description="rollouts per group (G)")
    # B x staleness_cap: a group admitted behind K others is trained about K/B updates later, so this
    # is the most concurrency the staleness budget can absorb
    groups_in_flight: int = Field(80, ge=1, description="rollout concurrency, in groups (K)")
    batch_groups: int = Field(20, ge=1, description="groups per update (B)")
    staleness_cap: int = Field(4, ge=0, description="most updates a trained group may lag")
    max_running: int = Field(32, ge=1, description="sequences one engine decodes at once")
    step_base_s: float = Field(0.005, gt=0, description="decode step time with an empty batch")
    step_per_seq_s: float = Field(0.001, ge=0, description="added step time per running sequence")
    turns_median: float = Field(12.0, gt=0)
    turns_sigma: float = Field(0.5, ge=0, description="lognormal sigma of turns within a task")
    task_sigma: float = Field(0.3, ge=0, description="lognormal sigma of a task's length factor")
    max_turns: int = Field(100, ge=1)
    tokens_median: float = Field(400.0, gt=0, description="tokens generated per turn")
    tokens_sigma: float = Field(0.5, ge=0)
    env_median_s: float = Field(3.0, ge=0, description="environment step per turn, in the sandbox")
    env_sigma: float = Field(1.0, ge=0)
    train_s: float = Field(60.0, gt=0, description="one optimiser step on a batch")
    sync_s: float = Field(10.0, ge=0, description="weight refresh; engines pause meanwhile")
    n_updates: int = Field(30, ge=1, description="measured updates")
    warmup_updates: int = Field(5, ge=0, description="updates run first and left out of the summary")
    seed: int = 0

    @model_validator(mode="after")
    def _enough_in_flight(self) -> FleetConfig:
        if self.groups_in_flight < self.batch_groups:
            raise ValueError("groups_in_flight must be at least batch_groups, or no batch ever fills")
        return self


class UpdateStat(BaseModel):
    """One update: ``lags`` of its batch, ``stale_drops`` dropped while assembling it, ``idle_s`` the
    trainer waited for the batch, ``interval_s`` since the previous update ended (or the start)."""

    model_config = ConfigDict(extra="forbid")

    version: int
    started_at: float
    finished_at: float
    interval_s: float
    idle_s: float
    stale_drops: int
    lags: list[int]


class GroupTrace(BaseModel):
    """A group that reached the trainer while it assembled update ``update``: trained at
    ``trained_at`` or dropped as stale at ``dropped_at``."""

    model_config = ConfigDict(extra="forbid")

    index: int
    update: int
    engine: int
    version: int
    lag: int
    placed_at: float
    rollouts_done_at: list[float]
    trained_at: float | None = None
    dropped_at: float | None = None


class SimResult(BaseModel):
    """Records of every update and every group that reached the trainer; the summary fields cover the
    updates after warmup. ``mean_lag`` is over trained groups, what the optimiser sees;
    ``mean_lag_with_dropped`` adds the dropped ones, because a policy that drops its stalest groups
    looks fresher on ``mean_lag`` alone."""

    model_config = ConfigDict(extra="forbid")

    policy: str
    updates: list[UpdateStat]
    groups: list[GroupTrace]
    stale_drops_per_update: float
    mean_lag: float
    mean_lag_with_dropped: float
    mean_update_s: float
    trainer_idle_fraction: float


# ---------------------------------------------------------------------------------------- workload


def draw_turns(config: FleetConfig, index: int) -> list[list[tuple[float, float]]]:
    """Group ``index``'s rollouts, each a list of (tokens, environment seconds) per turn."""
    rng = random.Random(f"{config.seed}/{index}")
    # exp(gauss) rather than lognormvariate: same distribution, and gauss is the faster sampler
    task = rng.gauss(0.0, config.task_sigma)
    rollouts = []
    for _ in range(config.group_size):
        turns = round(config.turns_median * math.exp(task + rng.gauss(0.0, config.turns_sigma)))
        rollouts.append(
            [
                (
                    config.tokens_median * math.exp(rng.gauss(0.0, config.tokens_sigma)),
                    config.env_median_s * math.exp(rng.gauss(0.0, config.env_sigma)),
                )
                for _ in range(min(max(turns, 1), config.max_turns))
            ]
        )
    return rollouts


# ------------------------------------------------------------------------------------------- state


@dataclass(slots=True, eq=False)
class _Rollout:
    group: _Group
    turns: list[tuple[float, float]]
    turn: int = 0
    version: int | None = None
    done_at: float | None = None


@dataclass(slots=True, eq=False)
class _Group:
    index: int
    rollouts: list[_Rollout] = field(default_factory=list)
    engine: int = -1
    placed_at: float = 0.0
    done: int = 0

    @property
    def version(self) -> int:
        return min(r.version for r in self.rollouts if r.version is not None)


@dataclass(slots=True, eq=False)
class _Engine:
    version: int = 0
    served: float = 0.0  # tokens emitted per running sequence since the start
    since: float = 0.0  # when ``served`` was last brought up to date
    running: list[tuple[float, int, _Rollout]] = field(default_factory=list)  # heap by turn-end threshold
    waiting: deque[_Rollout] = field(default_factory=deque)
    in_flight: int = 0  # rollouts placed here and not finished, generating or in their sandbox
    paused: bool = False
    epoch: int = 0  # bumped on every reschedule: a decode event of an older epoch is obsolete


_DECODE, _ENV, _TRAINED, _SYNCED = range(4)


class _Fleet:
    def __init__(self, config: FleetConfig, policy: Placement) -> None:
        self.config = config
        self.policy = policy
        # hot-loop settings as plain attributes
        self.step_base, self.step_per_seq = config.step_base_s, config.step_per_seq_s
        self.max_running = config.max_running
        self.now = 0.0
        self.events: list[tuple[float, int, int, object]] = []
        self.tick = count()
        self.engines = [_Engine() for _ in range(config.engines)]
        self.pending: deque[_Group] = deque()  # admitted, not yet placed: no token sampled, so not ageing
        self.buffer: deque[_Group] = deque()  # complete, waiting for the trainer
        self.next_group = 0
        self.version = 0
        self.busy = False
        self.free_since = 0.0  # when the trainer last became free
        self.batch: list[_Group] = []
        self.batch_started = 0.0
        self.drops = 0  # stale groups dropped before the coming update
        self.updates: list[UpdateStat] = []
        self.traces: list[GroupTrace] = []

    # ---- event queue

    def push(self, at: float, kind: int, payload: object) -> None:
        heapq.heappush(self.events, (at, next(self.tick), kind, payload))

    def run(self) -> None:
        self.pending.extend(self.new_group() for _ in range(self.config.groups_in_flight))
        self.place_pending()
        target = self.config.warmup_updates + self.config.n_updates
        handlers = (self.on_decode, self.on_env, self.on_trained, self.on_synced)
        while len(self.updates) < target:
            self.now, _, kind, payload = heapq.heappop(self.events)
            handlers[kind](payload)

    # ---- groups and placement

    def new_group(self) -> _Group:
        group = _Group(self.next_group)
        group.rollouts = [_Rollout(group, turns) for turns in draw_turns(self.config, self.next_group)]
        self.next_group += 1
        return group

    def place_pending(self) -> None:
        while self.pending:
            group = self.pending[0]
            loads = [e.in_flight for e in self.engines]
            chosen = self.policy.choose(f"{self.config.seed}/{group.index}", loads, len(group.rollouts))
            if chosen is None:
                return  # every group has the same size: if the head does not fit, none does
            self.pending.popleft()
            group.engine, group.placed_at = chosen, self.now
            engine = self.engines[chosen]
            engine.in_flight += len(group.rollouts)
            engine.waiting.extend(group.rollouts)
            self.refill(chosen)

    # ---- engines

    def catch_up(self, engine: _Engine) -> None:
        if engine.running and not engine.paused:
            step = self.step_base + self.step_per_seq * len(engine.running)
            engine.served += (self.now - engine.since) / step
        engine.since = self.now

    def refill(self, index: int) -> None:
        """Bring engine ``index`` up to date, start waiting turns while the batch has room, and schedule
        its next turn end (the batch just changed, so every running sequence's rate did too)."""
        engine = self.engines[index]
        self.catch_up(engine)
        engine.epoch += 1
        if engine.paused:
            return
        running = engine.running
        while engine.waiting and len(running) < self.max_running:
            rollout = engine.waiting.popleft()
            if rollout.version is None:
                rollout.version = engine.version
            heapq.heappush(running, (engine.served + rollout.turns[rollout.turn][0], next(self.tick), rollout))
        if running:
            step = self.step_base + self.step_per_seq * len(running)
            left = max(0.0, running[0][0] - engine.served)
            self.push(self.now + left * step, _DECODE, (index, engine.epoch))

    def on_decode(self, payload: object) -> None:
        index, epoch = payload  # type: ignore[misc]
        engine = self.engines[index]
        if epoch != engine.epoch:
            return
        self.catch_up(engine)
        while engine.running and engine.running[0][0] <= engine.served + TOKEN_EPS:
            rollout = heapq.heappop(engine.running)[2]
            self.push(self.now + rollout.turns[rollout.turn][1], _ENV, rollout)
        self.refill(index)

    def on_env(self, payload: object) -> None:
        rollout: _Rollout = payload  # type: ignore[assignment]
        rollout.turn += 1
        group = rollout.group
        if rollout.turn < len(rollout.turns):
            self.engines[group.engine].waiting.append(rollout)
            self.refill(group.engine)
            return
        rollout.done_at = self.now
        self.engines[group.engine].in_flight -= 1
        group.done += 1
        if group.done == len(group.rollouts):
            self.buffer.append(group)
            self.pending.append(self.new_group())
            self.place_pending()
            self.try_train()
        else:
            self.place_pending()

    # ---- trainer

    def try_train(self) -> None:
        if self.busy:
            return
        fresh: deque[_Group] = deque()
        for group in self.buffer:
            lag = self.version - group.version
            if lag > self.config.staleness_cap:
                self.drops += 1
                self.traces.append(self.trace(group, lag, dropped_at=self.now))
            else:
                fresh.append(group)
        self.buffer = fresh
        if len(fresh) < self.config.batch_groups:
            return
        self.batch = [fresh.popleft() for _ in range(self.config.batch_groups)]
        for group in self.batch:
            self.traces.append(self.trace(group, self.version - group.version, trained_at=self.now))
        self.busy, self.batch_started = True, self.now
        self.push(self.now + self.config.train_s, _TRAINED, None)

    def on_trained(self, payload: object) -> None:
        for engine in self.engines:
            self.catch_up(engine)
            engine.paused = True
            engine.epoch += 1  # its scheduled turn end no longer holds
        self.push(self.now + self.config.sync_s, _SYNCED, None)

    def on_synced(self, payload: object) -> None:
        previous = self.updates[-1].finished_at if self.updates else 0.0
        self.version += 1
        self.updates.append(
            UpdateStat(
                version=self.version,
                started_at=self.batch_started,
                finished_at=self.now,
                interval_s=self.now - previous,
                idle_s=self.batch_started - self.free_since,
                stale_drops=self.drops,
                lags=[self.version - 1 - g.version for g in self.batch],
            )
        )
        self.drops, self.busy, self.free_since = 0, False, self.now
        for index, engine in enumerate(self.engines):
            engine.version, engine.paused, engine.since = self.version, False, self.now
            self.refill(index)
        self.try_train()

    def trace(self, group: _Group, lag: int, **when: float) -> GroupTrace:
        return GroupTrace(
            index=group.index,
            update=self.version + 1,
            engine=group.engine,
            version=group.version,
            lag=lag,
            placed_at=group.placed_at,
            rollouts_done_at=[r.done_at for r in group.rollouts if r.done_at is not None],
            **when,
        )


# ---------------------------------------------------------------------------------------- entry


def simulate(config: FleetConfig, policy: Placement) -> SimResult:
    """Run the fleet under ``policy`` until ``warmup_updates + n_updates`` updates are done."""
    fleet = _Fleet(config, policy)
    fleet.run()
    # the last update's end may already have taken the next batch: keep only finished updates' groups
    groups = [g for g in fleet.traces if g.update <= len(fleet.updates)]
    measured = fleet.updates[config.warmup_updates :]
    return SimResult(
        policy=policy.name,
        updates=fleet.updates,
        groups=groups,
        stale_drops_per_update=statistics.fmean(u.stale_drops for u in measured),
        mean_lag=statistics.fmean(lag for u in measured for lag in u.lags),
        mean_lag_with_dropped=statistics.fmean(g.lag for g in groups if g.update > config.warmup_updates),
        mean_update_s=statistics.fmean(u.interval_s for u in measured),
        trainer_idle_fraction=sum(u.idle_s for u in measured) / sum(u.interval_s for u in measured),
    )
