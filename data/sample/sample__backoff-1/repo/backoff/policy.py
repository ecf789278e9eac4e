"""Backoff policies: how long to wait before retry number ``attempt``.

Attempts are numbered from 0: ``delay(0)`` is the wait after the first failed
call.  Jitter spreads the waits of many clients that failed at the same moment
so that they do not all retry in lockstep (see the AWS architecture blog post
"Exponential Backoff And Jitter"):

* ``none``  - exactly the nominal delay;
* ``full``  - uniformly random between 0 and the nominal delay;
* ``equal`` - half the nominal delay plus a random amount up to the other half.
"""

from __future__ import annotations

import random
from enum import Enum
from typing import Iterator, Optional, Union


class Jitter(Enum):
    NONE = "none"
    FULL = "full"
    EQUAL = "equal"


class ExponentialBackoff:
    """``base * factor ** attempt`` seconds, capped at ``max_delay``, with optional jitter.

    :param jitter: a :class:`Jitter` member or its name (``"none"``, ``"full"``,
        ``"equal"``).
    :param rng: a :class:`random.Random` to draw jitter from (for reproducible
        tests); a fresh unseeded one by default.
    """

    def __init__(
        self,
        base: float = 0.1,
        factor: float = 2.0,
        max_delay: float = 30.0,
        jitter: Union[Jitter, str] = Jitter.NONE,
        rng: Optional[random.Random] = None,
    ) -> None:
        if base <= 0:
            raise ValueError("base must be positive")
        if factor < 1:
            raise ValueError("factor must be at least 1")
        if max_delay < base:
            raise ValueError("max_delay must be at least base")
        self.base = float(base)
        self.factor = float(factor)
        self.max_delay = float(max_delay)
        self.jitter = Jitter(jitter)
        self._rng = rng if rng is not None else random.Random()

    def nominal_delay(self, attempt: int) -> float:
        """The delay before jitter is applied."""
        if attempt < 0:
            raise ValueError("attempt must not be negative")
        try:
            raw = self.base * self.factor ** attempt
        except OverflowError:
            return self.max_delay
        return min(self.max_delay, raw)

    def delay(self, attempt: int) -> float:
        """The (possibly jittered) delay before retry number ``attempt``."""
        nominal = self.nominal_delay(attempt)
        if self.jitter is Jitter.EQUAL:
            half = nominal / 2
            return half + self._rng.uniform(0, half)
        if self.jitter == "full":
            return self._rng.uniform(0, nominal)
        return nominal

    def delays(self, attempts: int) -> Iterator[float]:
        """The delays for attempts ``0 .. attempts - 1``."""
        for attempt in range(attempts):
            yield self.delay(attempt)

    def __repr__(self) -> str:
        return (
            f"ExponentialBackoff(base={self.base}, factor={self.factor}, "
            f"max_delay={self.max_delay}, jitter={self.jitter.value!r})"
        )


class ConstantBackoff:
    """Always wait ``interval`` seconds."""

    def __init__(self, interval: float) -> None:
        if interval < 0:
            raise ValueError("interval must not be negative")
        self.interval = float(interval)

    def nominal_delay(self, attempt: int) -> float:
        return self.interval

    def delay(self, attempt: int) -> float:
        return self.interval

    def delays(self, attempts: int) -> Iterator[float]:
        for _ in range(attempts):
            yield self.interval
