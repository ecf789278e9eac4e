import random

import pytest

from backoff import ConstantBackoff, ExponentialBackoff, Jitter


def test_nominal_delays_grow_and_cap():
    policy = ExponentialBackoff(base=0.5, factor=2, max_delay=5)
    assert list(policy.delays(6)) == [0.5, 1.0, 2.0, 4.0, 5.0, 5.0]


def test_huge_attempt_does_not_overflow():
    policy = ExponentialBackoff(base=1, factor=10, max_delay=60)
    assert policy.nominal_delay(10_000) == 60.0


def test_jitter_names():
    assert ExponentialBackoff(jitter="equal").jitter is Jitter.EQUAL
    assert ExponentialBackoff(jitter=Jitter.FULL).jitter is Jitter.FULL
    with pytest.raises(ValueError):
        ExponentialBackoff(jitter="sometimes")


def test_equal_jitter_is_reproducible_with_seeded_rng():
    a = ExponentialBackoff(base=1, factor=2, max_delay=8, jitter="equal", rng=random.Random(7))
    b = ExponentialBackoff(base=1, factor=2, max_delay=8, jitter="equal", rng=random.Random(7))
    assert list(a.delays(5)) == list(b.delays(5))


def test_equal_jitter_bounds():
    policy = ExponentialBackoff(base=1, factor=2, max_delay=8, jitter="equal", rng=random.Random(1))
    for attempt in range(6):
        nominal = policy.nominal_delay(attempt)
        d = policy.delay(attempt)
        assert nominal / 2 <= d <= nominal


@pytest.mark.parametrize("kwargs", [{"base": 0}, {"factor": 0.5}, {"base": 2, "max_delay": 1}])
def test_invalid_arguments(kwargs):
    with pytest.raises(ValueError):
        ExponentialBackoff(**kwargs)


def test_constant():
    assert list(ConstantBackoff(0.25).delays(3)) == [0.25, 0.25, 0.25]
