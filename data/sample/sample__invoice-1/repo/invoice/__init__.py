"""invoice: exact invoice and order totals with taxes and discounts.

All amounts are :class:`decimal.Decimal` rounded to cents (half up).

>>> from invoice import Invoice, LineItem
>>> inv = Invoice([LineItem("Widget", 3, "9.99", tax_rate=20)])
>>> inv.total
Decimal('35.96')
"""

from invoice.discounts import Discount, FixedDiscount, PercentDiscount
from invoice.lines import LineItem
from invoice.money import allocate, format_money, to_money
from invoice.totals import Invoice, TaxLine

__all__ = [
    "Discount",
    "FixedDiscount",
    "Invoice",
    "LineItem",
    "PercentDiscount",
    "TaxLine",
    "allocate",
    "format_money",
    "to_money",
]

__version__ = "3.2.0"
