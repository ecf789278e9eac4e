from datetime import datetime, timedelta, timezone

import pytest

from intervals import Interval


def t(h, m=0):
    return datetime(2024, 3, 4, h, m)


def test_basic_properties():
    iv = Interval(t(9), t(10, 30))
    assert iv.duration == timedelta(hours=1, minutes=30)
    assert not iv.is_empty
    assert Interval(t(9), t(9)).is_empty


def test_rejects_reversed_and_mixed():
    with pytest.raises(ValueError):
        Interval(t(10), t(9))
    with pytest.raises(TypeError):
        Interval(t(9), datetime(2024, 3, 4, 10, tzinfo=timezone.utc))


def test_overlap_is_half_open():
    a = Interval(t(9), t(10))
    assert not a.overlaps(Interval(t(10), t(11)))
    assert a.is_adjacent(Interval(t(10), t(11)))
    assert a.overlaps(Interval(t(9, 59), t(11)))


def test_contains():
    a = Interval(t(9), t(10))
    assert t(9) in a
    assert t(10) not in a
    assert a.contains(Interval(t(9, 15), t(9, 45)))


def test_intersection_and_union():
    a, b = Interval(t(9), t(11)), Interval(t(10), t(12))
    assert a.intersection(b) == Interval(t(10), t(11))
    assert a.union(b) == Interval(t(9), t(12))
    assert a.intersection(Interval(t(11), t(12))) is None
    with pytest.raises(ValueError):
        a.union(Interval(t(13), t(14)))


def test_shift_and_split():
    a = Interval(t(9), t(11))
    assert a.shift(timedelta(hours=1)) == Interval(t(10), t(12))
    assert a.split(t(10)) == (Interval(t(9), t(10)), Interval(t(10), t(11)))
