import pytest

from mdtable import render_records, render_table


def test_basic_table():
    out = render_table([["apple", 3], ["kiwi", 12]], ["fruit", "qty"])
    assert out.splitlines() == [
        "| fruit | qty |",
        "|-------|-----|",
        "| apple | 3   |",
        "| kiwi  | 12  |",
    ]


def test_alignment():
    out = render_table([["apple", 3]], ["fruit", "qty"], align="lr")
    assert out.splitlines()[1] == "|:------|----:|"
    assert out.splitlines()[2] == "| apple |   3 |"
    out = render_table([["a", "b"]], ["x", "y"], align=["center"])
    assert out.splitlines()[1] == "|:---:|-----|"


def test_short_rows_and_none():
    out = render_table([["a"], ["b", None]], ["x", "y"], none="-")
    assert out.splitlines()[2:] == ["| a   | -   |", "| b   | -   |"]


def test_too_many_cells():
    with pytest.raises(ValueError):
        render_table([["a", "b", "c"]], ["x", "y"])


def test_newlines_become_br():
    out = render_table([["line1\nline2"]], ["text"])
    assert out.splitlines()[2] == "| line1<br>line2 |"


def test_wide_characters_line_up():
    out = render_table([["東京"], ["ab"]], ["city"])
    assert out.splitlines()[2:] == ["| 東京 |", "| ab   |"]


def test_compact():
    out = render_table([["apple", 3]], ["fruit", "qty"], compact=True, align="r")
    assert out.splitlines() == ["| fruit | qty |", "|--:|---|", "| apple | 3 |"]


def test_values():
    out = render_table([[1.0, True, 2.5]], ["a", "b", "c"], compact=True)
    assert out.splitlines()[2] == "| 1 | true | 2.5 |"


def test_render_records():
    out = render_records([{"name": "Ada", "lang": "en"}, {"name": "Bo", "city": "Oslo"}])
    assert out.splitlines()[0] == "| name | lang | city |"
    assert out.splitlines()[3] == "| Bo   |      | Oslo |"
    out = render_records([{"a": 1, "b": 2}], columns=["b"])
    assert out.splitlines() == ["| b   |", "|-----|", "| 2   |"]
