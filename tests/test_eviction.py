"""Easy/hard eviction, the eviction-adjusted reward and the replay probe, on hand-made groups."""

from __future__ import annotations

import pytest

from training.eviction import EvictionConfig, EvictionState, Evictor

RIGHT, WRONG, MIXED = [1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]
POOL = [f"t{i}" for i in range(10)]


def test_easy_task_retires_on_its_first_all_correct_group() -> None:
    evictor = Evictor(EvictionConfig())
    assert evictor.observe("a", MIXED) is None
    assert evictor.observe("a", RIGHT) == "easy"
    assert evictor.active(["a", "b"]) == ["b"]


def test_easy_rule_can_be_switched_off() -> None:
    evictor = Evictor(EvictionConfig(retire_easy=False))
    assert evictor.observe("a", RIGHT) is None
    assert evictor.active(["a"]) == ["a"]


def test_hard_task_retires_after_exactly_three_consecutive_all_wrong_groups() -> None:
    evictor = Evictor(EvictionConfig())
    assert [evictor.observe("a", WRONG) for _ in range(3)] == [None, None, "hard"]
    assert evictor.state.retired == {"a": "hard"}
    assert evictor.state.all_wrong_streak == {}


def test_a_group_with_a_correct_rollout_resets_the_all_wrong_count() -> None:
    evictor = Evictor(EvictionConfig())
    for group in (WRONG, WRONG, MIXED, WRONG, WRONG):
        assert evictor.observe("a", group) is None
    assert evictor.observe("a", WRONG) == "hard"


def test_partial_rewards_below_solved_count_as_wrong() -> None:
    evictor = Evictor(EvictionConfig(hard_after=1))
    assert evictor.observe("a", [0.5, 0.9]) == "hard"


def test_streaks_are_per_task_and_hard_rule_can_be_switched_off() -> None:
    evictor = Evictor(EvictionConfig(hard_after=2))
    assert [evictor.observe(t, WRONG) for t in ("a", "b", "a")] == [None, None, "hard"]
    assert evictor.state.all_wrong_streak == {"b": 1}
    off = Evictor(EvictionConfig(hard_after=None))
    assert all(off.observe("a", WRONG) is None for _ in range(10))


def test_a_retired_task_stays_retired_whatever_later_groups_show() -> None:
    # a second group of the task may still be in flight when the first retires it
    evictor = Evictor(EvictionConfig())
    evictor.observe("a", RIGHT)
    for group in (WRONG, WRONG, WRONG, RIGHT):
        assert evictor.observe("a", group) is None
    assert evictor.state.retired == {"a": "easy"}


def test_empty_group_is_an_error() -> None:
    with pytest.raises(ValueError):
        Evictor(EvictionConfig()).observe("a", [])


def test_adjusted_reward_counts_easy_retired_as_solved_and_hard_retired_as_unsolved() -> None:
    evictor = Evictor(EvictionConfig(hard_after=1))
    assert evictor.adjusted_reward(0.3, POOL) == pytest.approx(0.3)  # nothing retired: the raw reward
    for t in ("t0", "t1", "t2", "t3"):
        evictor.observe(t, RIGHT)
    evictor.observe("t4", WRONG)
    # 5 active tasks at batch reward 0.4, 4 solved, 1 hopeless
    assert evictor.adjusted_reward(0.4, POOL) == pytest.approx((5 * 0.4 + 4 * 1 + 0) / 10)
    assert evictor.retired_fraction(POOL) == pytest.approx(0.5)
    # a task retired outside the pool does not count for it
    evictor.observe("elsewhere", RIGHT)
    assert evictor.retired_fraction(POOL) == pytest.approx(0.5)


def _retire(evictor: Evictor, easy: list[str], hard: list[str]) -> None:
    for t in easy:
        evictor.observe(t, RIGHT)
    for t in hard:
        for _ in range(3):
            evictor.observe(t, WRONG)


def test_replay_runs_only_when_due() -> None:
    evictor = Evictor(EvictionConfig(replay_every=5, replay_k=2))
    _retire(evictor, POOL[:6], [])
    assert [u for u in range(16) if evictor.replay_due(u)] == [5, 10, 15]
    assert evictor.replay_sample(4, seed=0) == []
    assert len(evictor.replay_sample(5, seed=0)) == 2
    assert not Evictor(EvictionConfig(replay_every=None)).replay_due(10)


def test_replay_sample_is_deterministic_and_draws_only_easy_retired_tasks() -> None:
    evictor = Evictor(EvictionConfig(replay_every=1, replay_k=3))
    easy, hard = POOL[:6], POOL[6:9]
    _retire(evictor, easy, hard)
    sample = evictor.replay_sample(7, seed=11)
    assert len(sample) == 3 and set(sample) <= set(easy)
    assert evictor.replay_sample(7, seed=11) == sample
    samples = {tuple(evictor.replay_sample(u, seed=11)) for u in range(1, 30)}
    assert len(samples) > 1  # a fresh sample each time it is due
    assert set(evictor.replay_sample(3, seed=0, k=100)) == set(easy)


def test_replay_never_returns_a_task_to_the_pool() -> None:
    evictor = Evictor(EvictionConfig(replay_every=1))
    _retire(evictor, ["t0", "t1"], [])
    sample = evictor.replay_sample(1, seed=0)
    assert evictor.replay_accuracy({t: WRONG for t in sample}) == 0.0  # forgotten: measured only
    assert evictor.active(POOL) == POOL[2:]
    assert evictor.replay_accuracy({"t0": MIXED, "t1": RIGHT}) == pytest.approx(5 / 8)
    assert evictor.replay_accuracy({}) is None


def test_state_round_trips_through_json_and_resumes() -> None:
    config = EvictionConfig(replay_every=2, replay_k=2)
    evictor = Evictor(config)
    _retire(evictor, ["t0", "t1", "t2"], ["t3"])
    evictor.observe("t4", WRONG)
    evictor.observe("t4", WRONG)

    resumed = Evictor(config, EvictionState.model_validate_json(evictor.state.model_dump_json()))
    assert resumed.state == evictor.state
    assert resumed.replay_sample(4, seed=3) == evictor.replay_sample(4, seed=3)
    assert resumed.observe("t4", WRONG) == "hard"  # the streak survived the restart
    with pytest.raises(ValueError):
        EvictionState.model_validate({"retired": {}, "all_wrong_streak": {}, "typo": 1})
