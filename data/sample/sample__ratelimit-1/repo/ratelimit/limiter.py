"""Per-key limiting (one bucket per user, IP, API key...) and a decorator."""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from typing import Callable, Hashable, TypeVar

from ratelimit.bucket import TokenBucket
from ratelimit.clock import monotonic
from ratelimit.errors import RateLimitExceeded

F = TypeVar("F", bound=Callable)


class KeyedLimiter:
    """Independent token buckets per key, created on first use.

    At most ``max_keys`` buckets are kept; the least recently used one is
    dropped when a new key arrives (it starts full again if it comes back).
    """

    def __init__(
        self,
        capacity: int,
        rate: float,
        clock: Callable[[], float] = monotonic,
        max_keys: int = 10_000,
    ) -> None:
        if max_keys < 1:
            raise ValueError("max_keys must be at least 1")
        self.capacity = capacity
        self.rate = rate
        self.max_keys = max_keys
        self._clock = clock
        self._buckets: "OrderedDict[Hashable, TokenBucket]" = OrderedDict()
        self._lock = threading.Lock()

    def bucket(self, key: Hashable) -> TokenBucket:
        """The bucket of ``key`` (created if needed, marked as recently used)."""
        with self._lock:
            bucket = self._buckets.get(key)
            if bucket is None:
                bucket = TokenBucket(self.capacity, self.rate, clock=self._clock)
                self._buckets[key] = bucket
                while len(self._buckets) > self.max_keys:
                    self._buckets.popitem(last=False)
            else:
                self._buckets.move_to_end(key)
            return bucket

    def allow(self, key: Hashable, n: int = 1) -> bool:
        """Take ``n`` tokens from ``key``'s bucket if possible."""
        return self.bucket(key).try_acquire(n)

    def check(self, key: Hashable, n: int = 1) -> None:
        """Like :meth:`allow` but raise :class:`RateLimitExceeded` when refused."""
        bucket = self.bucket(key)
        if not bucket.try_acquire(n):
            raise RateLimitExceeded(bucket.time_until(n), key)

    def __len__(self) -> int:
        return len(self._buckets)

    def __contains__(self, key: object) -> bool:
        return key in self._buckets


def rate_limited(bucket: TokenBucket) -> Callable[[F], F]:
    """Decorator: refuse calls with :class:`RateLimitExceeded` when ``bucket`` is empty."""

    def decorate(func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            if not bucket.try_acquire():
                raise RateLimitExceeded(bucket.time_until())
            return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate
