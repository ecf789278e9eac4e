import pytest

from jsonptr import InvalidPointerError, ResolutionError, remove, resolve, set_value, walk

from tests.helpers import assert_missing, assert_resolves

# the example document of RFC 6901, section 5
RFC_DOC = {
    "foo": ["bar", "baz"],
    "": 0,
    "a/b": 1,
    "c%d": 2,
    "e^f": 3,
    "g|h": 4,
    "i\\j": 5,
    'k"l': 6,
    " ": 7,
    "m~n": 8,
}


@pytest.mark.parametrize(
    "pointer, expected",
    [
        ("", RFC_DOC),
        ("/foo", ["bar", "baz"]),
        ("/foo/0", "bar"),
        ("/", 0),
        ("/a~1b", 1),
        ("/c%d", 2),
        ("/e^f", 3),
        ("/g|h", 4),
        ("/i\\j", 5),
        ('/k"l', 6),
        ("/ ", 7),
        ("/m~0n", 8),
    ],
)
def test_rfc_examples(pointer, expected):
    assert_resolves(RFC_DOC, pointer, expected)


def test_missing_paths():
    assert_missing(RFC_DOC, "/nope")
    assert_missing(RFC_DOC, "/foo/2")
    assert_missing(RFC_DOC, "/foo/-")
    assert_missing(RFC_DOC, "/foo/01")
    assert_missing(RFC_DOC, "/a~1b/x")


def test_resolution_error_details():
    with pytest.raises(ResolutionError) as info:
        resolve({"a": {"b": 1}}, "/a/c/d")
    assert info.value.depth == 1
    assert info.value.pointer == "/a/c/d"


def test_set_value():
    doc = {"a": {"b": [1, 2]}}
    set_value(doc, "/a/b/0", 10)
    set_value(doc, "/a/b/-", 3)
    set_value(doc, "/a/c", {"d": None})
    assert doc == {"a": {"b": [10, 2, 3], "c": {"d": None}}}
    with pytest.raises(ResolutionError):
        set_value(doc, "/x/y", 1)
    with pytest.raises(InvalidPointerError):
        set_value(doc, "", 1)


def test_remove():
    doc = {"a": [1, 2, 3], "b/c": True}
    assert remove(doc, "/a/1") == 2
    assert remove(doc, "/b~1c") is True
    assert doc == {"a": [1, 3]}


def test_walk():
    doc = {"a": {"b": 1, "c": []}, "d": ["x", {"e/f": None}]}
    assert list(walk(doc)) == [
        ("/a/b", 1),
        ("/a/c", []),
        ("/d/0", "x"),
        ("/d/1/e~1f", None),
    ]


def test_walk_then_resolve():
    doc = {"a": {"b": [1, {"c": 2}]}, "x/y": "z"}
    for pointer, value in walk(doc):
        assert resolve(doc, pointer) == value
