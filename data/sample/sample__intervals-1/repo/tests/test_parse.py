from datetime import datetime, timedelta

import pytest

from intervals import Interval, format_duration, format_interval, parse_duration, parse_interval


@pytest.mark.parametrize("text,expected", [
    ("PT1H30M", timedelta(hours=1, minutes=30)),
    ("P2DT12H", timedelta(days=2, hours=12)),
    ("P1W", timedelta(weeks=1)),
    ("PT0.5S", timedelta(seconds=0.5)),
])
def test_parse_duration(text, expected):
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["P", "PT", "1H", "P1Y", "P1DT"])
def test_parse_duration_invalid(text):
    with pytest.raises(ValueError):
        parse_duration(text)


def test_format_duration_roundtrip():
    for d in [timedelta(0), timedelta(minutes=90), timedelta(days=1, seconds=5)]:
        assert parse_duration(format_duration(d)) == d


def test_parse_interval_forms():
    start, end = datetime(2024, 3, 4, 9), datetime(2024, 3, 4, 10, 30)
    expected = Interval(start, end)
    assert parse_interval("2024-03-04T09:00/2024-03-04T10:30") == expected
    assert parse_interval("2024-03-04T09:00/PT1H30M") == expected
    assert parse_interval("PT1H30M/2024-03-04T10:30") == expected
    assert format_interval(expected) == "2024-03-04T09:00:00/2024-03-04T10:30:00"
