import pytest

from cronexpr import CronSyntaxError, parse_field
from cronexpr.fields import DAY_OF_MONTH, DAY_OF_WEEK, HOUR, MINUTE, MONTH


def test_star():
    assert parse_field("*", MINUTE) == frozenset(range(60))
    assert parse_field("*", DAY_OF_MONTH) == frozenset(range(1, 32))
    assert parse_field("*", MONTH) == frozenset(range(1, 13))


def test_values_and_lists():
    assert parse_field("5", MINUTE) == {5}
    assert parse_field("1,15,30", DAY_OF_MONTH) == {1, 15, 30}


def test_ranges_and_steps():
    assert parse_field("9-17", HOUR) == frozenset(range(9, 18))
    assert parse_field("0-30/10", MINUTE) == {0, 10, 20, 30}
    assert parse_field("10/20", MINUTE) == {10, 30, 50}
    assert parse_field("*/15", MINUTE) == {0, 15, 30, 45}
    assert parse_field("*/6", HOUR) == {0, 6, 12, 18}


def test_names():
    assert parse_field("JAN,jul", MONTH) == {1, 7}
    assert parse_field("MON-FRI", DAY_OF_WEEK) == {1, 2, 3, 4, 5}


def test_sunday_as_seven():
    assert parse_field("7", DAY_OF_WEEK) == {0}
    assert parse_field("5-7", DAY_OF_WEEK) == {5, 6, 0}


@pytest.mark.parametrize(
    "text, spec",
    [("60", MINUTE), ("24", HOUR), ("0", DAY_OF_MONTH), ("13", MONTH), ("*/0", MINUTE),
     ("5-1", HOUR), ("", MINUTE), ("1,,2", MINUTE), ("FOO", MONTH), ("x/2", MINUTE)],
)
def test_invalid(text, spec):
    with pytest.raises(CronSyntaxError) as info:
        parse_field(text, spec)
    assert info.value.field == spec.name
