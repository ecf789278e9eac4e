import pytest

from mdtable import escape_cell, parse_align, parse_table, split_row, unescape_cell


def test_escape_roundtrip():
    for text in ["a|b", "x\ny", "plain", "a\\|b"]:
        assert unescape_cell(escape_cell(text)) == text.strip()


def test_split_row_honours_escapes():
    assert split_row("| a \\| b | c |") == [" a \\| b ", " c "]
    assert split_row("a|b") == ["a", "b"]


def test_parse_table():
    text = "| h1 | h2 |\n|:---|---:|\n| a  | 1  |\n| b  | 2  |\n"
    assert parse_table(text) == (["h1", "h2"], [["a", "1"], ["b", "2"]])


def test_parse_errors():
    with pytest.raises(ValueError):
        parse_table("| h1 |")
    with pytest.raises(ValueError):
        parse_table("| h1 | h2 |\n| -- | -- |")
    with pytest.raises(ValueError):
        parse_table("| h1 | h2 |\n|---|---|\n| only one |")


def test_parse_align():
    assert parse_align("lrc", 4) == ["left", "right", "center", None]
    assert parse_align(None, 2) == [None, None]
    with pytest.raises(ValueError):
        parse_align("lx", 2)
    with pytest.raises(ValueError):
        parse_align("lll", 2)
