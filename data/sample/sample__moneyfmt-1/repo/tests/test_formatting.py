import pytest

from moneyfmt import Money, format_money, parse_money


def test_format_usd():
    assert format_money(Money("1234.5", "USD")) == "$1,234.50"
    assert format_money(Money("0.05", "USD")) == "$0.05"
    assert format_money(Money("-1234567.891", "USD")) == "-$1,234,567.89"


@pytest.mark.parametrize("style,expected", [
    ("en", "€1,234,567.50"),
    ("de", "€1.234.567,50"),
    ("fr", "€1\u202f234\u202f567,50"),
    ("ch", "€1'234'567.50"),
    ("plain", "€1234567.50"),
])
def test_format_styles(style, expected):
    assert format_money(Money("1234567.5", "EUR"), style=style) == expected


def test_symbol_after_amount_and_code():
    assert format_money(Money("99.9", "SEK")) == "99.90 kr"
    assert format_money(Money("99.9", "SEK"), symbol=False) == "99.90 SEK"


def test_str_uses_format():
    assert str(Money("5", "GBP")) == "£5.00"


def test_parse_roundtrip():
    assert parse_money("$1,234.50", "USD") == Money("1234.50", "USD")
    assert parse_money("-€1.234,50", "EUR", style="de") == Money("-1234.50", "EUR")
    assert parse_money("1,000 SEK", "SEK") == Money("1000", "SEK")
    with pytest.raises(ValueError):
        parse_money("free", "USD")
