import pytest

from ttlcache import TTLCache, cached, make_key


def test_make_key():
    assert make_key(1, 2) == make_key(1, 2)
    assert make_key(1, b=2, a=1) == make_key(1, a=1, b=2)
    assert make_key(1, 2) != make_key(1, b=2)


def test_cached_calls_once():
    calls = []

    @cached(maxsize=10)
    def square(x):
        calls.append(x)
        return x * x

    assert square(3) == 9
    assert square(3) == 9
    assert calls == [3]
    square.cache_clear()
    square(3)
    assert calls == [3, 3]


def test_cached_with_shared_cache_and_expiry():
    now = [0.0]
    store = TTLCache(maxsize=10, ttl=5, timer=lambda: now[0])
    calls = []

    @cached(store)
    def load(key):
        calls.append(key)
        return key.upper()

    load("a")
    now[0] = 4
    load("a")
    now[0] = 5
    load("a")
    assert calls == ["a", "a"]
    assert load.cache is store


def test_exceptions_not_cached():
    attempts = []

    @cached()
    def flaky():
        attempts.append(1)
        if len(attempts) == 1:
            raise RuntimeError("first call fails")
        return "ok"

    with pytest.raises(RuntimeError):
        flaky()
    assert flaky() == "ok"
