"""The :class:`TokenBucket` algorithm.

A bucket holds at most ``capacity`` tokens and gains ``rate`` tokens per
second.  Each request takes one token (or ``n``); when the bucket is empty the
request is refused or has to wait.  This allows bursts of up to ``capacity``
requests while keeping the long-run average at ``rate`` per second.
"""

from __future__ import annotations

import threading
import time
from typing import Callable, Optional

from ratelimit.clock import monotonic
from ratelimit.errors import RateLimitExceeded


class TokenBucket:
    """A thread-safe token bucket.

    :param capacity: maximum number of tokens (the burst size), at least 1.
    :param rate: tokens added per second, greater than 0.
    :param clock: callable returning the current time in seconds.
    :param sleep: callable used by :meth:`acquire` to wait.
    :param initial: tokens at creation; defaults to a full bucket.
    """

    def __init__(
        self,
        capacity: int,
        rate: float,
        clock: Callable[[], float] = monotonic,
        sleep: Optional[Callable[[float], None]] = None,
        initial: Optional[int] = None,
    ) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        if rate <= 0:
            raise ValueError("rate must be positive")
        self.capacity = int(capacity)
        self.rate = float(rate)
        self._clock = clock
        self._sleep = sleep if sleep is not None else getattr(clock, "sleep", time.sleep)
        self._tokens = self.capacity if initial is None else max(0, min(int(initial), self.capacity))
        self._last = clock()
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ internals

    def _refill(self) -> None:
        """Add the tokens earned since the last refill."""
        now = self._clock()
        elapsed = now - self._last
        if elapsed <= 0:
            return
        earned = int(elapsed * self.rate)
        self._tokens = min(self.capacity, self._tokens + earned)
        self._last = now

    def _check(self, n: int) -> None:
        if n < 1:
            raise ValueError("must request at least one token")
        if n > self.capacity:
            raise ValueError(f"cannot request {n} tokens from a bucket of capacity {self.capacity}")

    # ------------------------------------------------------------------ public API

    @property
    def available(self) -> int:
        """Whole tokens that could be taken right now."""
        with self._lock:
            self._refill()
            return int(self._tokens)

    def time_until(self, n: int = 1) -> float:
        """Seconds until ``n`` tokens will be available (0.0 if they already are)."""
        self._check(n)
        with self._lock:
            self._refill()
            deficit = n - self._tokens
        return max(0.0, deficit / self.rate)

    def try_acquire(self, n: int = 1) -> bool:
        """Take ``n`` tokens if available; never blocks."""
        self._check(n)
        with self._lock:
            self._refill()
            if self._tokens >= n:
                self._tokens -= n
                return True
            return False

    def acquire(self, n: int = 1, timeout: Optional[float] = None) -> None:
        """Take ``n`` tokens, waiting for them if necessary.

        Raises :class:`RateLimitExceeded` (without waiting) if the tokens
        cannot be available within ``timeout`` seconds.
        """
        self._check(n)
        waited = 0.0
        while True:
            if self.try_acquire(n):
                return
            wait = self.time_until(n)
            if timeout is not None and waited + wait > timeout:
                raise RateLimitExceeded(wait)
            self._sleep(wait)
            waited += wait

    def __repr__(self) -> str:
        return f"<TokenBucket capacity={self.capacity} rate={self.rate}/s>"
