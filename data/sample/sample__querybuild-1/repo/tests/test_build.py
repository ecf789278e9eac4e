import datetime as dt
import enum

import pytest

from querybuild import build_query, encode_component, to_text


class Color(enum.Enum):
    RED = "red"


def test_scalars():
    assert build_query({"a": 1, "b": "x", "c": True, "d": False}) == "a=1&b=x&c=true&d=false"
    assert build_query({"n": 2.0, "f": 2.5}) == "n=2&f=2.5"
    assert build_query({"color": Color.RED}) == "color=red"


def test_dates():
    assert to_text(dt.date(2024, 3, 4)) == "2024-03-04"
    assert build_query({"since": dt.datetime(2024, 3, 4, 9, 30)}) == "since=2024-03-04T09%3A30%3A00"
    assert build_query({"since": dt.datetime(2024, 3, 4, 9, 30)}, safe=":") == "since=2024-03-04T09:30:00"


def test_lists_repeat_keys():
    assert build_query({"tag": ["a", "b"], "id": (1, 2)}) == "tag=a&tag=b&id=1&id=2"
    assert build_query({"s": {"y", "x"}}) == "s=x&s=y"


def test_pairs_keep_order_and_repeats():
    assert build_query([("b", 1), ("a", 2), ("b", 3)]) == "b=1&a=2&b=3"
    assert build_query([("b", 1), ("a", 2), ("b", 3)], sort=True) == "a=2&b=1&b=3"


def test_none_values():
    assert build_query({"a": None, "b": 1}) == "b=1"
    assert build_query({"a": None, "b": 1}, skip_none=False) == "a=&b=1"
    assert build_query({"t": ["x", None]}) == "t=x"


def test_encoding():
    assert build_query({"q": "a b&c=d/é"}) == "q=a%20b%26c%3Dd%2F%C3%A9"
    assert build_query({"q": "a b"}, space_as_plus=True) == "q=a+b"
    assert encode_component("~-._") == "~-._"
    assert build_query({"key with space": 1}) == "key%20with%20space=1"


def test_rejects_unsupported_values():
    with pytest.raises(TypeError):
        build_query({"a": object()})
    with pytest.raises(TypeError):
        build_query({1: "a"})
