from decimal import Decimal

import pytest

from invoice import allocate, format_money, to_money


def test_to_money_rounds_half_up():
    assert to_money("2.675") == Decimal("2.68")
    assert to_money("2.665") == Decimal("2.67")
    assert to_money(3) == Decimal("3.00")


def test_floats_are_refused():
    with pytest.raises(TypeError):
        to_money(0.1)


def test_format_money():
    assert format_money(Decimal("1234.5")) == "€1,234.50"
    assert format_money("-3", "USD") == "-$3.00"
    assert format_money("7", "CHF") == "CHF 7.00"


def test_allocate_adds_up():
    parts = allocate("0.10", [1, 1, 1])
    assert parts == [Decimal("0.04"), Decimal("0.03"), Decimal("0.03")]
    assert sum(parts) == Decimal("0.10")


def test_allocate_proportional():
    assert allocate("30.00", ["100.00", "50.00"]) == [Decimal("20.00"), Decimal("10.00")]
    assert allocate("10.00", [0, 0]) == [Decimal("5.00"), Decimal("5.00")]
    assert allocate("1.00", []) == []
