import pytest

from ttlcache import TTLCache


class FakeClock:
    def __init__(self, now=1000.0):
        self.now = now

    def __call__(self):
        return self.now

    def advance(self, seconds):
        self.now += seconds


@pytest.fixture
def clock():
    return FakeClock()


def test_get_set_and_mapping_protocol(clock):
    cache = TTLCache(maxsize=3, timer=clock)
    cache["a"] = 1
    cache.set("b", 2)
    assert cache["a"] == 1
    assert cache.get("b") == 2
    assert cache.get("zzz", "default") == "default"
    assert "a" in cache and "zzz" not in cache
    del cache["a"]
    assert "a" not in cache
    with pytest.raises(KeyError):
        cache["a"]


def test_lru_eviction(clock):
    cache = TTLCache(maxsize=2, timer=clock)
    cache["a"] = 1
    cache["b"] = 2
    cache.get("a")          # "b" is now least recently used
    cache["c"] = 3
    assert cache.keys() == ["a", "c"]
    assert cache.stats.evictions == 1


def test_entries_expire(clock):
    cache = TTLCache(maxsize=10, ttl=60, timer=clock)
    cache["a"] = 1
    clock.advance(59)
    assert cache["a"] == 1
    clock.advance(1)
    assert "a" not in cache
    assert cache.get("a") is None
    assert cache.stats.expirations == 1


def test_expired_entries_make_room_before_eviction(clock):
    cache = TTLCache(maxsize=2, ttl=10, timer=clock)
    cache["old"] = 1
    clock.advance(5)
    cache["new"] = 2
    clock.advance(6)        # "old" expired, "new" still alive
    cache["newer"] = 3
    assert sorted(cache.keys()) == ["new", "newer"]
    assert cache.stats.evictions == 0


def test_ttl_remaining(clock):
    cache = TTLCache(maxsize=10, ttl=60, timer=clock)
    cache["a"] = 1
    clock.advance(15)
    assert cache.ttl_remaining("a") == pytest.approx(45)
    with pytest.raises(KeyError):
        cache.ttl_remaining("missing")


def test_no_ttl_means_no_expiry(clock):
    cache = TTLCache(maxsize=10, timer=clock)
    cache["a"] = 1
    clock.advance(10 ** 9)
    assert cache["a"] == 1
    assert cache.ttl_remaining("a") is None


def test_expire_len_and_pop(clock):
    cache = TTLCache(maxsize=10, ttl=10, timer=clock)
    cache["a"] = 1
    clock.advance(5)
    cache["b"] = 2
    clock.advance(6)
    assert len(cache) == 1
    cache["c"] = 3
    clock.advance(5)
    assert cache.expire() == ["b"]
    assert cache.pop("c") == 3
    assert cache.pop("c", None) is None


@pytest.mark.parametrize("kwargs", [{"maxsize": 0}, {"ttl": 0}, {"ttl": -5}])
def test_invalid_arguments(kwargs):
    with pytest.raises(ValueError):
        TTLCache(**kwargs)


def test_stats(clock):
    cache = TTLCache(maxsize=10, timer=clock)
    cache["a"] = 1
    cache.get("a")
    cache.get("b")
    assert cache.stats.as_dict() == {"hits": 1, "misses": 1, "evictions": 0, "expirations": 0}
    assert cache.stats.hit_ratio == 0.5
