import pytest

from ratelimit import KeyedLimiter, ManualClock, RateLimitExceeded, TokenBucket, rate_limited


def test_keys_are_independent():
    clock = ManualClock()
    limiter = KeyedLimiter(capacity=1, rate=1, clock=clock)
    assert limiter.allow("alice")
    assert not limiter.allow("alice")
    assert limiter.allow("bob")
    clock.advance(1)
    assert limiter.allow("alice")


def test_lru_eviction():
    limiter = KeyedLimiter(capacity=1, rate=1, clock=ManualClock(), max_keys=2)
    limiter.allow("a")
    limiter.allow("b")
    limiter.allow("a")
    limiter.allow("c")
    assert "b" not in limiter
    assert "a" in limiter and "c" in limiter
    assert len(limiter) == 2


def test_check_raises_with_retry_after():
    clock = ManualClock()
    limiter = KeyedLimiter(capacity=2, rate=0.5, clock=clock)
    limiter.check("k", 2)
    with pytest.raises(RateLimitExceeded) as info:
        limiter.check("k")
    assert info.value.key == "k"
    assert info.value.retry_after == pytest.approx(2.0)


def test_decorator():
    clock = ManualClock()
    calls = []

    @rate_limited(TokenBucket(capacity=1, rate=1, clock=clock))
    def ping():
        calls.append(clock())
        return "pong"

    assert ping() == "pong"
    with pytest.raises(RateLimitExceeded):
        ping()
    clock.advance(1)
    assert ping() == "pong"
    assert calls == [0.0, 1.0]
