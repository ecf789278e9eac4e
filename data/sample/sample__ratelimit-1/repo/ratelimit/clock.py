"""Clocks.

A clock is any zero-argument callable returning seconds as a float from an
arbitrary but fixed origin.  :func:`monotonic` is the real one;
:class:`ManualClock` is for tests and simulations.
"""

from __future__ import annotations

import time

monotonic = time.monotonic


class ManualClock:
    """A clock that only moves when told to.

    >>> clock = ManualClock()
    >>> clock.advance(1.5)
    >>> clock()
    1.5
    """

    def __init__(self, start: float = 0.0) -> None:
        self._now = float(start)

    def __call__(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        """Move the clock forward by ``seconds`` (must not be negative)."""
        if seconds < 0:
            raise ValueError("a clock cannot go backwards")
        self._now += seconds

    # lets a ManualClock stand in for time.sleep
    sleep = advance

    def __repr__(self) -> str:
        return f"ManualClock({self._now!r})"
