"""Operations on collections of intervals: merging, gaps, totals and subtraction."""

from __future__ import annotations

from datetime import timedelta
from typing import Iterable

from .interval import Interval

__all__ = ["merge", "gaps", "total_duration", "subtract", "intersect_all", "busy_at"]


def merge(intervals: Iterable[Interval], *, join_adjacent: bool = True) -> list[Interval]:
    """Merge overlapping intervals into a sorted list of disjoint intervals.

    With ``join_adjacent`` (the default) intervals that touch, like 9:00-10:00 and 10:00-11:00,
    are joined too. Empty intervals are dropped.
    """
    ordered = sorted(iv for iv in intervals if not iv.is_empty)
    merged: list[Interval] = []
    for iv in ordered:
        if merged:
            last = merged[-1]
            if iv.start < last.end or (join_adjacent and iv.start == last.end):
                merged[-1] = Interval(last.start, iv.end)
                continue
        merged.append(iv)
    return merged


def gaps(intervals: Iterable[Interval], within: Interval | None = None) -> list[Interval]:
    """The free time between the given (possibly overlapping, unsorted) intervals.

    Without ``within`` only the gaps between the first start and the last end are returned; with
    it, the free time before the first and after the last interval inside ``within`` is included
    and everything is clipped to ``within``.
    """
    ordered = sorted(iv for iv in intervals if not iv.is_empty)
    if within is not None:
        ordered = [iv.intersection(within) for iv in ordered if iv.overlaps(within)]
        if not ordered:
            return [] if within.is_empty else [within]
        cursor = within.start
    elif not ordered:
        return []
    else:
        cursor = ordered[0].start

    free: list[Interval] = []
    for iv in ordered:
        if iv.start > cursor:
            free.append(Interval(cursor, iv.start))
        cursor = iv.end
    if within is not None and cursor < within.end:
        free.append(Interval(cursor, within.end))
    return free


def total_duration(intervals: Iterable[Interval]) -> timedelta:
    """Total time covered by the intervals, counting overlapping time once."""
    return sum((iv.duration for iv in merge(intervals)), timedelta(0))


def subtract(interval: Interval, busy: Iterable[Interval]) -> list[Interval]:
    """The parts of ``interval`` not covered by any interval in ``busy``."""
    return gaps(busy, within=interval)


def intersect_all(a: Iterable[Interval], b: Iterable[Interval]) -> list[Interval]:
    """Time covered by both collections (e.g. when two people are both available)."""
    left, right = merge(a), merge(b)
    out: list[Interval] = []
    i = j = 0
    while i < len(left) and j < len(right):
        common = left[i].intersection(right[j])
        if common is not None:
            out.append(common)
        if left[i].end <= right[j].end:
            i += 1
        else:
            j += 1
    return out


def busy_at(intervals: Iterable[Interval], moment) -> list[Interval]:
    """The intervals that contain ``moment``, in start order."""
    return sorted(iv for iv in intervals if moment in iv)
