import pytest

from slugkit import UniqueSlugger


def test_numbering():
    s = UniqueSlugger()
    assert [s("My Post"), s("my post!"), s("MY POST")] == ["my-post", "my-post-2", "my-post-3"]


def test_existing_and_callback():
    db = {"news", "news-2"}
    s = UniqueSlugger(existing={"about"}, is_taken=db.__contains__)
    assert s("About") == "about-2"
    assert s("News") == "news-3"


def test_suffix_counts_towards_max_length():
    s = UniqueSlugger(max_length=8)
    assert s("abcdefghijk") == "abcdefgh"
    assert s("abcdefghijk") == "abcdef-2"


def test_no_room_for_suffix():
    s = UniqueSlugger(max_length=2)
    assert s("abc") == "ab"
    with pytest.raises(ValueError):
        s("abc")


def test_reset():
    s = UniqueSlugger()
    s("x")
    s.reset()
    assert s("x") == "x"
