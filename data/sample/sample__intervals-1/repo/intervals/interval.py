"""The :class:`Interval` type: a half-open span of time ``[start, end)``."""

from __future__ import annotations

from datetime import datetime, timedelta

__all__ = ["Interval"]


def _check_same_kind(a: datetime, b: datetime) -> None:
    if (a.tzinfo is None) != (b.tzinfo is None):
        raise TypeError("cannot mix naive and timezone-aware datetimes")


class Interval:
    """A half-open time interval ``[start, end)``.

    ``start`` must not be after ``end``; an interval with ``start == end`` is empty. Two intervals
    that merely touch (``a.end == b.start``) do not overlap but are *adjacent*.
    """

    __slots__ = ("start", "end")

    def __init__(self, start: datetime, end: datetime):
        if not isinstance(start, datetime) or not isinstance(end, datetime):
            raise TypeError("start and end must be datetime objects")
        _check_same_kind(start, end)
        if end < start:
            raise ValueError(f"interval ends before it starts: {start.isoformat()} > {end.isoformat()}")
        self.start = start
        self.end = end

    @classmethod
    def from_duration(cls, start: datetime, duration: timedelta) -> "Interval":
        return cls(start, start + duration)

    # -- properties ----------------------------------------------------------------------------

    @property
    def duration(self) -> timedelta:
        return self.end - self.start

    @property
    def is_empty(self) -> bool:
        return self.start == self.end

    # -- relations -----------------------------------------------------------------------------

    def overlaps(self, other: "Interval") -> bool:
        """True when the two intervals share at least one instant."""
        return self.start < other.end and other.start < self.end

    def is_adjacent(self, other: "Interval") -> bool:
        """True when one interval ends exactly where the other starts."""
        return self.end == other.start or other.end == self.start

    def contains(self, item) -> bool:
        """True for a datetime inside ``[start, end)`` or an interval entirely inside this one."""
        if isinstance(item, Interval):
            return self.start <= item.start and item.end <= self.end
        return self.start <= item < self.end

    __contains__ = contains

    # -- combination ---------------------------------------------------------------------------

    def intersection(self, other: "Interval") -> "Interval | None":
        """The overlapping part of both intervals, or None when they do not overlap."""
        if not self.overlaps(other):
            return None
        return Interval(max(self.start, other.start), min(self.end, other.end))

    def union(self, other: "Interval") -> "Interval":
        """The smallest interval covering both; they must overlap or be adjacent."""
        if not (self.overlaps(other) or self.is_adjacent(other)):
            raise ValueError(f"{self!r} and {other!r} are disjoint")
        return Interval(min(self.start, other.start), max(self.end, other.end))

    def shift(self, delta: timedelta) -> "Interval":
        return Interval(self.start + delta, self.end + delta)

    def split(self, at: datetime) -> tuple["Interval", "Interval"]:
        """Split into ``[start, at)`` and ``[at, end)``."""
        if not self.start <= at <= self.end:
            raise ValueError("split point outside the interval")
        return Interval(self.start, at), Interval(at, self.end)

    # -- dunder --------------------------------------------------------------------------------

    def _key(self):
        return (self.start, self.end)

    def __eq__(self, other):
        if not isinstance(other, Interval):
            return NotImplemented
        return self._key() == other._key()

    def __lt__(self, other):
        if not isinstance(other, Interval):
            return NotImplemented
        return self._key() < other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return f"Interval({self.start.isoformat()}, {self.end.isoformat()})"
