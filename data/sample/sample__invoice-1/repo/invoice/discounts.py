"""Invoice-level discounts."""

from __future__ import annotations

from decimal import Decimal

from invoice.money import Amount, to_money


class Discount:
    """Base class: ``amount_for(subtotal)`` returns the discount in money."""

    def amount_for(self, subtotal: Decimal) -> Decimal:  # pragma: no cover - abstract
        raise NotImplementedError


class PercentDiscount(Discount):
    """``percent`` % off the subtotal (0-100)."""

    def __init__(self, percent: Amount) -> None:
        self.percent = Decimal(percent)
        if not 0 <= self.percent <= 100:
            raise ValueError("percent must be between 0 and 100")

    def amount_for(self, subtotal: Decimal) -> Decimal:
        return to_money(subtotal * self.percent / 100)

    def __repr__(self) -> str:
        return f"PercentDiscount({self.percent})"


class FixedDiscount(Discount):
    """A fixed amount off, never more than the subtotal."""

    def __init__(self, amount: Amount) -> None:
        self.amount = to_money(amount)
        if self.amount < 0:
            raise ValueError("discount must not be negative")

    def amount_for(self, subtotal: Decimal) -> Decimal:
        return min(self.amount, subtotal)

    def __repr__(self) -> str:
        return f"FixedDiscount({self.amount})"
