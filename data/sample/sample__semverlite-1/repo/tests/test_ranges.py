import pytest

from semverlite import InvalidRange, Range, max_satisfying, min_satisfying, satisfies


def test_exact_and_comparators():
    assert satisfies("1.2.3", "1.2.3")
    assert satisfies("1.2.3", "=1.2.3")
    assert satisfies("1.5.0", ">=1.2.3 <2.0.0")
    assert not satisfies("2.0.0", ">=1.2.3 <2.0.0")
    assert satisfies("1.2.3", "> = 1.0.0")


def test_caret_major():
    r = Range("^1.2.3")
    assert r.matches("1.2.3")
    assert r.matches("1.9.9")
    assert not r.matches("2.0.0")
    assert not r.matches("1.2.2")


def test_tilde():
    r = Range("~1.2.3")
    assert r.matches("1.2.9")
    assert not r.matches("1.3.0")
    assert Range("~0.2.3").matches("0.2.4")
    assert not Range("~0.2.3").matches("0.3.0")


def test_hyphen_range_is_inclusive():
    r = Range("1.2.3 - 1.4.0")
    assert r.matches("1.2.3")
    assert r.matches("1.4.0")
    assert not r.matches("1.4.1")


def test_or_and_star():
    r = Range("<1.0.0 || >=2.0.0")
    assert r.matches("0.9.0")
    assert not r.matches("1.5.0")
    assert r.matches("2.1.0")
    assert Range("*").matches("3.4.5")


def test_prerelease_excluded_by_default():
    assert not Range("^1.2.3").matches("1.3.0-beta.1")
    assert Range("^1.2.3", include_prerelease=True).matches("1.3.0-beta.1")
    assert Range(">=1.3.0-beta.1").matches("1.3.0-beta.2")


@pytest.mark.parametrize("spec", ["^1.2", ">=foo", "1.2.3 -", "~~1.2.3"])
def test_invalid_ranges(spec):
    with pytest.raises(InvalidRange):
        Range(spec)


def test_max_min_satisfying():
    versions = ["1.2.3", "1.3.0", "1.10.1", "2.0.0"]
    assert max_satisfying(versions, "^1.2.0") == "1.10.1"
    assert min_satisfying(versions, "^1.2.0") == "1.2.3"
    assert max_satisfying(versions, "^3.0.0") is None
