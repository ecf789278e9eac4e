import pytest

from ratelimit import ManualClock, RateLimitExceeded, TokenBucket


def test_starts_full_and_drains():
    clock = ManualClock()
    bucket = TokenBucket(capacity=3, rate=1, clock=clock)
    assert bucket.available == 3
    assert [bucket.try_acquire() for _ in range(4)] == [True, True, True, False]


def test_refills_over_time_up_to_capacity():
    clock = ManualClock()
    bucket = TokenBucket(capacity=3, rate=2, clock=clock, initial=0)
    clock.advance(1)
    assert bucket.available == 2
    clock.advance(60)
    assert bucket.available == 3


def test_take_several_tokens():
    clock = ManualClock()
    bucket = TokenBucket(capacity=5, rate=1, clock=clock)
    assert bucket.try_acquire(4)
    assert not bucket.try_acquire(2)
    assert bucket.try_acquire(1)


def test_invalid_requests():
    bucket = TokenBucket(capacity=2, rate=1, clock=ManualClock())
    with pytest.raises(ValueError):
        bucket.try_acquire(3)
    with pytest.raises(ValueError):
        bucket.try_acquire(0)
    with pytest.raises(ValueError):
        TokenBucket(capacity=0, rate=1)
    with pytest.raises(ValueError):
        TokenBucket(capacity=1, rate=0)


def test_time_until():
    clock = ManualClock()
    bucket = TokenBucket(capacity=4, rate=2, clock=clock, initial=1)
    assert bucket.time_until(1) == 0.0
    assert bucket.time_until(3) == pytest.approx(1.0)


def test_acquire_waits_with_injected_sleep():
    clock = ManualClock()
    bucket = TokenBucket(capacity=2, rate=4, clock=clock, initial=0)
    bucket.acquire(2)
    assert clock() == pytest.approx(0.5)
    assert bucket.available == 0


def test_acquire_timeout():
    clock = ManualClock()
    bucket = TokenBucket(capacity=10, rate=1, clock=clock, initial=0)
    with pytest.raises(RateLimitExceeded) as info:
        bucket.acquire(5, timeout=2)
    assert info.value.retry_after == pytest.approx(5.0)
    assert clock() == 0.0


def test_real_clock_default():
    bucket = TokenBucket(capacity=1, rate=1000)
    assert bucket.try_acquire()
