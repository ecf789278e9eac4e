from datetime import datetime, timedelta, timezone

import pytest

from cronexpr import CronExpression, CronSyntaxError


def test_wrong_field_count():
    with pytest.raises(CronSyntaxError):
        CronExpression("* * * *")


def test_macros():
    assert CronExpression("@daily").hours == {0}
    assert CronExpression("@hourly").minutes == {0}
    assert CronExpression("@weekly").days_of_week == {0}


def test_matches():
    expr = CronExpression("*/15 9-17 * * MON-FRI")
    assert expr.matches(datetime(2024, 5, 6, 9, 45))
    assert not expr.matches(datetime(2024, 5, 6, 9, 46))
    assert not expr.matches(datetime(2024, 5, 5, 9, 45))  # Sunday


def test_next_fire_same_day():
    expr = CronExpression("30 9 * * *")
    assert expr.next_fire(datetime(2024, 5, 3, 8, 0)) == datetime(2024, 5, 3, 9, 30)


def test_next_fire_is_strictly_after():
    expr = CronExpression("30 9 * * *")
    assert expr.next_fire(datetime(2024, 5, 3, 9, 30)) == datetime(2024, 5, 4, 9, 30)
    assert expr.next_fire(datetime(2024, 5, 3, 9, 29, 59)) == datetime(2024, 5, 3, 9, 30)


def test_next_fire_skips_weekend():
    expr = CronExpression("30 9 * * MON-FRI")
    assert expr.next_fire(datetime(2024, 5, 3, 10, 0)) == datetime(2024, 5, 6, 9, 30)


def test_next_fire_across_year_end():
    expr = CronExpression("0 0 1 JAN *")
    assert expr.next_fire(datetime(2024, 6, 15)) == datetime(2025, 1, 1)


def test_leap_day():
    expr = CronExpression("0 12 29 2 *")
    assert expr.next_fire(datetime(2025, 1, 1)) == datetime(2028, 2, 29, 12, 0)


def test_impossible_date_gives_none():
    assert CronExpression("0 0 31 2 *").next_fire(datetime(2024, 1, 1)) is None


def test_dom_or_dow_when_both_restricted():
    expr = CronExpression("0 0 13 * FRI")
    fires = list(expr.iter_fires(datetime(2024, 9, 1), 4))
    assert fires == [datetime(2024, 9, 6), datetime(2024, 9, 13), datetime(2024, 9, 20), datetime(2024, 9, 27)]


def test_iter_fires():
    expr = CronExpression("*/20 * * * *")
    fires = list(expr.iter_fires(datetime(2024, 1, 1, 23, 30), 3))
    assert fires == [datetime(2024, 1, 1, 23, 40), datetime(2024, 1, 2, 0, 0), datetime(2024, 1, 2, 0, 20)]


def test_aware_datetimes_keep_tzinfo():
    tz = timezone(timedelta(hours=2))
    nxt = CronExpression("0 * * * *").next_fire(datetime(2024, 1, 1, 10, 5, tzinfo=tz))
    assert nxt == datetime(2024, 1, 1, 11, 0, tzinfo=tz)
    assert nxt.tzinfo is tz
