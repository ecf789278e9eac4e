import pytest

from semverlite import InvalidVersion, Version, parse


def test_parse_basic():
    v = parse("1.2.3")
    assert (v.major, v.minor, v.patch) == (1, 2, 3)
    assert v.prerelease == ()
    assert str(v) == "1.2.3"


def test_parse_prerelease_and_build():
    v = parse("v2.0.0-rc.1+build.7")
    assert v.prerelease == ("rc", "1")
    assert v.build == ("build", "7")
    assert str(v) == "2.0.0-rc.1+build.7"


@pytest.mark.parametrize("text", ["1.2", "01.2.3", "1.2.3-", "1.2.3-01", "a.b.c", ""])
def test_parse_invalid(text):
    with pytest.raises(InvalidVersion):
        parse(text)


def test_ordering_follows_spec():
    ordered = ["1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta",
               "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1", "1.1.0", "2.0.0"]
    versions = [parse(v) for v in ordered]
    assert sorted(reversed(versions)) == versions


def test_build_metadata_ignored_in_comparison():
    assert parse("1.0.0+a") == parse("1.0.0+b")
    assert parse("1.0.0") == "1.0.0"


def test_bump():
    v = parse("1.2.3")
    assert v.bump_major() == Version(2, 0, 0)
    assert v.bump_minor() == Version(1, 3, 0)
    assert v.bump_patch() == Version(1, 2, 4)
    assert parse("1.2.3-rc.1").bump_patch() == Version(1, 2, 3)


def test_immutable():
    v = parse("1.2.3")
    with pytest.raises(AttributeError):
        v.major = 5
