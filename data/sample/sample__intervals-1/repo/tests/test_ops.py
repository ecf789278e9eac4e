from datetime import datetime, timedelta

from intervals import Interval, busy_at, gaps, intersect_all, merge, subtract, total_duration


def t(h, m=0):
    return datetime(2024, 3, 4, h, m)


def test_merge_overlapping_and_unsorted():
    ivs = [Interval(t(14), t(15)), Interval(t(9), t(10)), Interval(t(9, 30), t(11))]
    assert merge(ivs) == [Interval(t(9), t(11)), Interval(t(14), t(15))]


def test_merge_adjacent():
    ivs = [Interval(t(9), t(10)), Interval(t(10), t(11))]
    assert merge(ivs) == [Interval(t(9), t(11))]
    assert merge(ivs, join_adjacent=False) == ivs


def test_merge_drops_empty():
    assert merge([Interval(t(9), t(9)), Interval(t(10), t(11))]) == [Interval(t(10), t(11))]


def test_gaps():
    ivs = [Interval(t(9), t(10)), Interval(t(12), t(13))]
    assert gaps(ivs) == [Interval(t(10), t(12))]
    assert gaps(ivs, within=Interval(t(8), t(17))) == [
        Interval(t(8), t(9)), Interval(t(10), t(12)), Interval(t(13), t(17))]
    assert gaps([], within=Interval(t(8), t(9))) == [Interval(t(8), t(9))]


def test_gaps_clipped_to_window():
    ivs = [Interval(t(7), t(9)), Interval(t(16), t(20))]
    assert gaps(ivs, within=Interval(t(8), t(17))) == [Interval(t(9), t(16))]


def test_total_duration_counts_overlap_once():
    ivs = [Interval(t(9), t(10)), Interval(t(9, 30), t(10, 30))]
    assert total_duration(ivs) == timedelta(hours=1, minutes=30)
    assert total_duration([]) == timedelta(0)


def test_subtract():
    day = Interval(t(9), t(17))
    assert subtract(day, [Interval(t(12), t(13))]) == [Interval(t(9), t(12)), Interval(t(13), t(17))]


def test_intersect_all():
    alice = [Interval(t(9), t(12)), Interval(t(14), t(16))]
    bob = [Interval(t(11), t(15))]
    assert intersect_all(alice, bob) == [Interval(t(11), t(12)), Interval(t(14), t(15))]


def test_busy_at():
    ivs = [Interval(t(9), t(10)), Interval(t(9, 30), t(11))]
    assert busy_at(ivs, t(9, 45)) == ivs
    assert busy_at(ivs, t(10, 30)) == [Interval(t(9, 30), t(11))]
