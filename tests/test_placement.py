"""Rollout placement policies and the fleet simulator that compares them (no torch, a few seconds)."""

from __future__ import annotations

import statistics
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from pydantic import ValidationError

from training.placement import (
    LoadAware,
    Placement,
    PlacementConfig,
    SessionHash,
    placement_policy,
)
from training.simulator import FleetConfig, GroupTrace, SimResult, draw_turns, simulate

ROOT = Path(__file__).resolve().parents[1]
# a fleet small enough to run in milliseconds, busy enough that groups overlap weight updates
SMALL = FleetConfig(
    engines=3, group_size=4, groups_in_flight=8, batch_groups=4, max_running=8, turns_median=4,
    tokens_median=100, env_median_s=1.0, train_s=10.0, sync_s=2.0, n_updates=12, warmup_updates=2,
)  # fmt: skip


# ------------------------------------------------------------------------------------------ policies


def test_load_aware_picks_the_engine_with_fewest_in_flight() -> None:
    assert LoadAware(cap=64).choose("g", [5, 2, 7], 4) == 1


def test_load_aware_breaks_ties_by_lowest_index() -> None:
    assert LoadAware(cap=64).choose("g", [3, 1, 1, 1], 4) == 1


def test_load_aware_respects_the_cap() -> None:
    policy = LoadAware(cap=8)
    assert policy.choose("g", [4, 5], 4) == 0  # 4 + 4 fills engine 0 exactly: allowed
    assert policy.choose("g", [5, 6], 4) is None  # fits nowhere: the caller queues the group
    assert policy.choose("g", [], 4) is None


def test_load_aware_rejects_groups_that_never_fit() -> None:
    with pytest.raises(ValueError, match="cannot fit"):
        LoadAware(cap=4).choose("g", [0, 0], 8)
    with pytest.raises(ValueError, match="at least 1"):
        LoadAware(cap=0)


def test_session_hash_is_sticky_and_ignores_load() -> None:
    policy = SessionHash()
    engine = policy.choose("session-42", [0] * 6, 8)
    assert all(policy.choose("session-42", loads, 8) == engine for loads in ([100] * 6, [0, 9, 99, 3, 1, 7]))


def test_session_hash_is_stable_across_processes() -> None:
    # Python salts str hashes per process; a restarted trainer must route a session to the same engine
    keys = [f"s{i}" for i in range(20)]
    code = "from training.placement import SessionHash; p = SessionHash(); "
    code += f"print([p.choose(k, [0] * 6, 8) for k in {keys!r}])"
    there = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert there.stdout.strip() == str([SessionHash().choose(k, [0] * 6, 8) for k in keys])


def test_session_hash_spreads_keys_over_the_fleet() -> None:
    counts = Counter(SessionHash().choose(f"g{i}", [0] * 6, 8) for i in range(600))
    assert sorted(counts) == list(range(6))
    assert all(60 <= n <= 140 for n in counts.values())


def test_policies_are_selectable_by_name() -> None:
    assert placement_policy("load_aware", cap=16) == LoadAware(16)
    assert isinstance(placement_policy("session_hash"), SessionHash)
    with pytest.raises(ValueError, match="unknown placement policy"):
        placement_policy("round_robin")
    assert PlacementConfig().policy == "load_aware"
    with pytest.raises(ValidationError):
        PlacementConfig(policy="load_aware", sticky=True)


# ------------------------------------------------------------------------------------------ simulator


def trained(result: SimResult) -> list[GroupTrace]:
    return [g for g in result.groups if g.trained_at is not None]


def dropped(result: SimResult) -> list[GroupTrace]:
    return [g for g in result.groups if g.dropped_at is not None]


@pytest.mark.parametrize("policy", [SessionHash(), LoadAware(cap=8)], ids=lambda p: p.name)
def test_a_group_is_trained_only_once_all_its_rollouts_are_done(policy: Placement) -> None:
    result = simulate(SMALL, policy)
    assert len(trained(result)) == SMALL.batch_groups * len(result.updates)
    for group in trained(result):
        assert len(group.rollouts_done_at) == SMALL.group_size
        assert max(group.rollouts_done_at) <= group.trained_at
        assert group.placed_at <= min(group.rollouts_done_at)


@pytest.mark.parametrize("cap", [0, 1])
def test_stale_groups_are_dropped_and_counted_never_trained(cap: int) -> None:
    config = SMALL.model_copy(update={"staleness_cap": cap, "groups_in_flight": 16})
    result = simulate(config, SessionHash())
    assert dropped(result), "this fleet must produce stale groups for the test to mean anything"
    assert all(g.lag <= cap for g in trained(result))
    assert all(g.lag > cap for g in dropped(result))
    assert sum(u.stale_drops for u in result.updates) == len(dropped(result))
    for group in trained(result) + dropped(result):
        assert group.lag == group.update - 1 - group.version  # trainer version at train time - oldest token's
    for update in result.updates:
        assert len(update.lags) == config.batch_groups and max(update.lags) <= cap


def most_in_flight(result: SimResult) -> int:
    """The most rollouts in flight on one engine at any placement, from the traces (groups still in
    flight at the end are missing, so this can only undercount)."""
    def at(group: GroupTrace) -> int:
        peers = [t for t in result.groups if t.engine == group.engine and t.placed_at <= group.placed_at]
        return sum(group.placed_at < done for t in peers for done in t.rollouts_done_at)

    return max(at(g) for g in result.groups)


def test_load_aware_keeps_every_engine_under_its_cap_in_the_fleet() -> None:
    config = SMALL.model_copy(update={"groups_in_flight": 16})
    assert most_in_flight(simulate(config, LoadAware(cap=8))) <= 8
    assert most_in_flight(simulate(config, SessionHash())) > 8  # the same fleet without the cap overflows


def test_rollouts_keep_their_oldest_version_across_weight_updates() -> None:
    # long rollouts on a fast trainer: most groups see an update while generating, and must still count
    # from the version of their first token
    config = SMALL.model_copy(update={"turns_median": 12.0, "train_s": 1.0, "sync_s": 0.5, "staleness_cap": 1000})
    result = simulate(config, LoadAware(cap=8))
    assert statistics.fmean(g.lag for g in trained(result)) >= 1


def test_no_drops_when_the_staleness_cap_is_huge() -> None:
    config = SMALL.model_copy(update={"staleness_cap": 10_000, "groups_in_flight": 16})
    for policy in (SessionHash(), LoadAware(cap=8)):
        result = simulate(config, policy)
        assert not dropped(result) and result.stale_drops_per_update == 0


def test_simulation_is_deterministic_for_a_seed() -> None:
    first = simulate(SMALL, SessionHash())
    assert simulate(SMALL, SessionHash()) == first
    assert simulate(SMALL.model_copy(update={"seed": 1}), SessionHash()) != first


def test_both_policies_face_the_same_workload() -> None:
    assert draw_turns(SMALL, 7) == draw_turns(SMALL, 7)
    assert draw_turns(SMALL, 7) != draw_turns(SMALL, 8)
    turns = [len(r) for i in range(200) for r in draw_turns(SMALL, i)]
    assert min(turns) >= 1 and max(turns) <= SMALL.max_turns and max(turns) > 3 * statistics.median(turns)


def test_summary_fields_are_consistent() -> None:
    result = simulate(SMALL, LoadAware(cap=8))
    assert len(result.updates) == SMALL.warmup_updates + SMALL.n_updates
    assert 0.0 <= result.trainer_idle_fraction <= 1.0
    assert result.mean_update_s >= SMALL.train_s + SMALL.sync_s
    assert result.mean_lag <= result.mean_lag_with_dropped


def test_fleet_config_rejects_unknown_fields_and_starved_batches() -> None:
    with pytest.raises(ValidationError):
        FleetConfig(engine_count=6)
    with pytest.raises(ValidationError, match="batch_groups"):
        FleetConfig(groups_in_flight=4, batch_groups=8)


def test_load_aware_drops_far_fewer_stale_groups_on_the_default_fleet() -> None:
    # the benchmark's comparison, shortened: same seeds, same workload, only the placement differs
    drops: dict[str, list[float]] = {"session_hash": [], "load_aware": []}
    for seed in range(3):
        config = FleetConfig(seed=seed, n_updates=10)
        for policy in (SessionHash(), LoadAware(cap=config.max_running)):
            drops[policy.name].append(simulate(config, policy).stale_drops_per_update)
    hash_drops, aware_drops = statistics.fmean(drops["session_hash"]), statistics.fmean(drops["load_aware"])
    assert hash_drops >= 1.0
    assert aware_drops < 0.5 * hash_drops, drops
