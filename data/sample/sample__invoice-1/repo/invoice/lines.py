"""Invoice lines."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from invoice.money import Amount, to_money


@dataclass(frozen=True)
class LineItem:
    """``quantity`` x ``unit_price`` (net of tax) taxed at ``tax_rate`` percent.

    ``discount_percent`` is a per-line discount applied before tax.
    """

    description: str
    quantity: Amount
    unit_price: Amount
    tax_rate: Amount = 0
    discount_percent: Amount = 0

    def __post_init__(self) -> None:
        if Decimal(self.quantity) <= 0:
            raise ValueError(f"quantity must be positive: {self.description!r}")
        if Decimal(self.unit_price) < 0:
            raise ValueError(f"unit price must not be negative: {self.description!r}")
        if not 0 <= Decimal(self.discount_percent) <= 100:
            raise ValueError(f"line discount must be between 0 and 100: {self.description!r}")

    @property
    def gross_amount(self) -> Decimal:
        """Quantity times unit price, before the line discount."""
        return to_money(Decimal(self.quantity) * Decimal(self.unit_price))

    @property
    def line_discount(self) -> Decimal:
        return to_money(self.gross_amount * Decimal(self.discount_percent) / 100)

    @property
    def net(self) -> Decimal:
        """The line amount after its own discount, before tax."""
        return self.gross_amount - self.line_discount

    @property
    def rate(self) -> Decimal:
        return Decimal(self.tax_rate)
