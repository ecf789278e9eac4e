"""A least-recently-used cache whose entries also expire after a time to live."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Any, Callable, Hashable, Iterator

from .stats import CacheStats

__all__ = ["TTLCache"]

_MISSING = object()


class _Entry:
    __slots__ = ("value", "expires_at")

    def __init__(self, value: Any, expires_at: float | None):
        self.value = value
        self.expires_at = expires_at  # None: never expires


class TTLCache:
    """An LRU cache with per-entry expiry.

    :param maxsize: maximum number of entries; when full, the least recently used entry is evicted.
    :param ttl: default time to live in seconds for new entries, ``None`` for no expiry.
    :param timer: clock returning seconds (``time.monotonic`` by default); pass a fake clock in
        tests.

    Expired entries are never returned. They are removed lazily, when they are looked up, when the
    cache needs room, or by :meth:`expire`. All methods are thread-safe.
    """

    def __init__(self, maxsize: int = 128, ttl: float | None = None,
                 timer: Callable[[], float] = time.monotonic):
        if maxsize < 1:
            raise ValueError("maxsize must be at least 1")
        if ttl is not None and ttl <= 0:
            raise ValueError("ttl must be positive (or None for no expiry)")
        self.maxsize = maxsize
        self.ttl = ttl
        self._timer = timer
        self._data: OrderedDict[Hashable, _Entry] = OrderedDict()
        self._lock = threading.RLock()
        self.stats = CacheStats()

    # -- internals -----------------------------------------------------------------------------

    def _expiry(self, now: float) -> float | None:
        return None if self.ttl is None else now + self.ttl

    @staticmethod
    def _is_expired(entry: _Entry, now: float) -> bool:
        return entry.expires_at is not None and entry.expires_at <= now

    def _live_entry(self, key: Hashable, now: float) -> _Entry | None:
        entry = self._data.get(key)
        if entry is None:
            return None
        if self._is_expired(entry, now):
            del self._data[key]
            self.stats.expirations += 1
            return None
        return entry

    def _make_room(self, now: float) -> None:
        if len(self._data) < self.maxsize:
            return
        self._expire(now)
        while len(self._data) >= self.maxsize:
            self._data.popitem(last=False)
            self.stats.evictions += 1

    def _expire(self, now: float) -> list[Hashable]:
        dead = [k for k, e in self._data.items() if self._is_expired(e, now)]
        for k in dead:
            del self._data[k]
        self.stats.expirations += len(dead)
        return dead

    # -- public API ----------------------------------------------------------------------------

    def get(self, key: Hashable, default: Any = None) -> Any:
        """Return the live value for ``key`` (marking it recently used), else ``default``."""
        with self._lock:
            entry = self._live_entry(key, self._timer())
            if entry is None:
                self.stats.misses += 1
                return default
            self._data.move_to_end(key)
            self.stats.hits += 1
            return entry.value

    def set(self, key: Hashable, value: Any, ttl: float | None = None) -> None:
        """Store ``value`` under ``key``.

        :param ttl: time to live of this entry in seconds; defaults to the cache's ``ttl``.
        """
        with self._lock:
            now = self._timer()
            if key in self._data:
                del self._data[key]
            else:
                self._make_room(now)
            self._data[key] = _Entry(value, self._expiry(now))

    def pop(self, key: Hashable, default: Any = _MISSING) -> Any:
        """Remove ``key`` and return its live value; ``KeyError`` (or ``default``) if absent."""
        with self._lock:
            entry = self._live_entry(key, self._timer())
            if entry is None:
                if default is _MISSING:
                    raise KeyError(key)
                return default
            del self._data[key]
            return entry.value

    def ttl_remaining(self, key: Hashable) -> float | None:
        """Seconds until ``key`` expires, ``None`` if it never does; ``KeyError`` if absent."""
        with self._lock:
            now = self._timer()
            entry = self._live_entry(key, now)
            if entry is None:
                raise KeyError(key)
            return None if entry.expires_at is None else entry.expires_at - now

    def expire(self) -> list[Hashable]:
        """Remove every expired entry now and return their keys."""
        with self._lock:
            return self._expire(self._timer())

    def clear(self) -> None:
        with self._lock:
            self._data.clear()

    def keys(self) -> list[Hashable]:
        """Live keys, least recently used first."""
        with self._lock:
            self._expire(self._timer())
            return list(self._data)

    def items(self) -> list[tuple[Hashable, Any]]:
        with self._lock:
            self._expire(self._timer())
            return [(k, e.value) for k, e in self._data.items()]

    # -- mapping protocol ----------------------------------------------------------------------

    def __getitem__(self, key: Hashable) -> Any:
        value = self.get(key, _MISSING)
        if value is _MISSING:
            raise KeyError(key)
        return value

    def __setitem__(self, key: Hashable, value: Any) -> None:
        self.set(key, value)

    def __delitem__(self, key: Hashable) -> None:
        self.pop(key)

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return self._live_entry(key, self._timer()) is not None

    def __len__(self) -> int:
        with self._lock:
            self._expire(self._timer())
            return len(self._data)

    def __iter__(self) -> Iterator[Hashable]:
        return iter(self.keys())

    def __repr__(self):
        return f"TTLCache(maxsize={self.maxsize}, ttl={self.ttl}, currsize={len(self._data)})"
