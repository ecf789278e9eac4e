import pytest

from jsonptr import InvalidPointerError, JsonPointer, escape, unescape


def test_parse_and_format_round_trip():
    for text in ["", "/", "/a", "/a/b/0", "/a~1b", "/m~0n", "/ ", "/c%d"]:
        assert str(JsonPointer.parse(text)) == text


def test_parts():
    assert JsonPointer.parse("/foo/0/a~1b").parts == ["foo", "0", "a/b"]
    assert JsonPointer.parse("/m~0n").parts == ["m~n"]
    assert JsonPointer.parse("").parts == []
    assert JsonPointer.parse("/").parts == [""]


def test_escape_and_unescape():
    assert escape("a/b") == "a~1b"
    assert escape("m~n") == "m~0n"
    assert unescape("a~1b") == "a/b"
    assert unescape("m~0n") == "m~n"


@pytest.mark.parametrize("bad", ["a", "#/a", "/a~2", "/a~"])
def test_invalid_pointers(bad):
    with pytest.raises(InvalidPointerError):
        JsonPointer.parse(bad)


def test_from_parts_and_join():
    ptr = JsonPointer.from_parts(["a/b", 0])
    assert str(ptr) == "/a~1b/0"
    assert ptr.join("c") == JsonPointer.parse("/a~1b/0/c")
    assert ptr.parent == JsonPointer.parse("/a~1b")
    assert ptr.last == "0"


def test_fragment():
    ptr = JsonPointer.from_fragment("#/c%25d/e%5Ef")
    assert ptr.parts == ["c%d", "e^f"]
    assert JsonPointer.parse("/c%d").as_fragment() == "#/c%25d"


def test_root_has_no_parent():
    with pytest.raises(InvalidPointerError):
        JsonPointer.parse("").parent
