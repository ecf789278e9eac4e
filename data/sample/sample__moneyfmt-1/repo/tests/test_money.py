from decimal import Decimal

import pytest

from moneyfmt import Currency, CurrencyMismatch, Money, UnknownCurrency, get_currency, round_amount


def test_amount_is_rounded_to_minor_unit():
    assert Money("10.005", "USD").amount == Decimal("10.00")
    assert Money("10.015", "USD").amount == Decimal("10.02")
    assert Money("10.005", "USD", rounding="half_up").amount == Decimal("10.01")
    assert Money("1234.5", "JPY").amount == Decimal("1234")
    assert Money("1.2345", "KWD").amount == Decimal("1.234")


@pytest.mark.parametrize("mode,expected", [
    ("half_even", "2.12"), ("bankers", "2.12"), ("half_up", "2.13"), ("half_down", "2.12"),
    ("up", "2.13"), ("down", "2.12"), ("ceiling", "2.13"), ("floor", "2.12"),
])
def test_rounding_modes(mode, expected):
    assert round_amount(Decimal("2.125"), get_currency("USD"), mode) == Decimal(expected)


def test_unknown_rounding_mode():
    with pytest.raises(ValueError):
        Money("1", "USD", rounding="nearest")


def test_float_input_uses_repr():
    assert Money(0.1, "USD").amount == Decimal("0.10")
    assert Money(2.675, "USD", rounding="half_up").amount == Decimal("2.68")


def test_arithmetic_and_currency_mismatch():
    a, b = Money("10.50", "EUR"), Money("0.75", "EUR")
    assert a + b == Money("11.25", "EUR")
    assert a - b == Money("9.75", "EUR")
    assert a * 3 == Money("31.50", "EUR")
    assert -a == Money("-10.50", "EUR")
    with pytest.raises(CurrencyMismatch):
        a + Money("1", "USD")


def test_minor_units_roundtrip():
    assert Money("12.34", "USD").to_minor() == 1234
    assert Money.from_minor(1234, "KWD") == Money("1.234", "KWD")
    assert Money.from_minor(500, "JPY") == Money("500", "JPY")


def test_allocate_keeps_every_minor_unit():
    parts = Money("100", "USD").split(3)
    assert [p.amount for p in parts] == [Decimal("33.34"), Decimal("33.33"), Decimal("33.33")]
    parts = Money("10", "JPY").allocate([1, 2])
    assert [p.amount for p in parts] == [Decimal("4"), Decimal("6")]
    assert sum((p for p in Money("0.05", "USD").split(3)), Money("0", "USD")) == Money("0.05", "USD")


def test_currency_registry():
    assert get_currency("jpy").minor_units == 0
    with pytest.raises(UnknownCurrency):
        get_currency("XYZ")
    with pytest.raises(ValueError):
        Currency("usd", 2, "$")
