from decimal import Decimal

import pytest

from invoice import FixedDiscount, Invoice, LineItem, PercentDiscount


def test_single_line():
    inv = Invoice([LineItem("Widget", 3, "9.99", tax_rate=20)])
    assert inv.subtotal == Decimal("29.97")
    assert inv.tax_total == Decimal("5.99")
    assert inv.total == Decimal("35.96")


def test_tax_rounded_per_rate_not_per_line():
    inv = Invoice([LineItem("A", 1, "0.05", tax_rate=10), LineItem("B", 1, "0.05", tax_rate=10)])
    assert inv.tax_total == Decimal("0.01")


def test_several_rates():
    inv = Invoice(
        [
            LineItem("Book", 2, "12.50", tax_rate=7),
            LineItem("Pen", 10, "1.20", tax_rate=19),
            LineItem("Gift card", 1, "25.00"),
        ]
    )
    assert [(t.rate, t.base, t.tax) for t in inv.tax_lines()] == [
        (Decimal("0"), Decimal("25.00"), Decimal("0.00")),
        (Decimal("7"), Decimal("25.00"), Decimal("1.75")),
        (Decimal("19"), Decimal("12.00"), Decimal("2.28")),
    ]
    assert inv.total == Decimal("66.03")


def test_line_discount_applies_before_tax():
    inv = Invoice([LineItem("Chair", 4, "80.00", tax_rate=20, discount_percent=25)])
    assert inv.subtotal == Decimal("240.00")
    assert inv.tax_total == Decimal("48.00")
    assert inv.total == Decimal("288.00")


def test_discount_amounts():
    lines = [LineItem("Desk", 1, "200.00", tax_rate=20)]
    assert Invoice(lines, PercentDiscount("12.5")).discount_amount == Decimal("25.00")
    assert Invoice(lines, FixedDiscount("15")).discount_amount == Decimal("15.00")
    assert Invoice(lines, FixedDiscount("500")).discount_amount == Decimal("200.00")
    assert Invoice([], FixedDiscount("5")).discount_amount == Decimal("0.00")


def test_invalid_lines():
    with pytest.raises(ValueError):
        LineItem("x", 0, "1.00")
    with pytest.raises(ValueError):
        LineItem("x", 1, "-1.00")
    with pytest.raises(ValueError):
        PercentDiscount(120)


def test_breakdown_without_discount():
    inv = Invoice([LineItem("Widget", 2, "10.00", tax_rate=20)])
    assert inv.breakdown() == [
        "Subtotal: €20.00",
        "Tax 20% on €20.00: €4.00",
        "Total: €24.00",
    ]
