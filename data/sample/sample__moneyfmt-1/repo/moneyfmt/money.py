"""The :class:`Money` value type."""

from __future__ import annotations

import functools
from decimal import Decimal
from typing import Sequence

from .currency import Currency, get_currency
from .rounding import minor_unit, round_amount

__all__ = ["Money", "CurrencyMismatch"]


class CurrencyMismatch(TypeError):
    """Arithmetic or comparison between two different currencies."""


@functools.total_ordering
class Money:
    """An amount of a currency, always rounded to the currency's minor unit.

    >>> Money("10.005", "USD")            # banker's rounding by default
    Money('10.00', 'USD')
    >>> Money("10.005", "USD", rounding="half_up")
    Money('10.01', 'USD')
    """

    __slots__ = ("amount", "currency")

    def __init__(self, amount, currency, rounding: str = "half_even"):
        self.currency: Currency = get_currency(currency)
        self.amount: Decimal = round_amount(amount, self.currency, rounding)

    @classmethod
    def from_minor(cls, units: int, currency) -> "Money":
        """Build from an integer number of minor units (cents, fils, ...)."""
        cur = get_currency(currency)
        return cls(Decimal(units).scaleb(-cur.minor_units), cur)

    def to_minor(self) -> int:
        """The amount as an integer number of minor units."""
        return int(self.amount.scaleb(self.currency.minor_units))

    # -- arithmetic ----------------------------------------------------------------------------

    def _check(self, other) -> "Money":
        if not isinstance(other, Money):
            raise TypeError(f"expected Money, got {type(other).__name__}")
        if other.currency != self.currency:
            raise CurrencyMismatch(f"{self.currency} vs {other.currency}")
        return other

    def __add__(self, other):
        other = self._check(other)
        return Money(self.amount + other.amount, self.currency)

    def __sub__(self, other):
        other = self._check(other)
        return Money(self.amount - other.amount, self.currency)

    def __mul__(self, factor):
        if isinstance(factor, Money):
            raise TypeError("cannot multiply Money by Money")
        if isinstance(factor, float):
            factor = Decimal(repr(factor))
        return Money(self.amount * Decimal(factor), self.currency)

    __rmul__ = __mul__

    def __neg__(self):
        return Money(-self.amount, self.currency)

    def __abs__(self):
        return Money(abs(self.amount), self.currency)

    def __bool__(self):
        return bool(self.amount)

    # -- splitting -----------------------------------------------------------------------------

    def allocate(self, ratios: Sequence[int | Decimal]) -> list["Money"]:
        """Split into parts proportional to ``ratios`` without losing or creating minor units.

        Leftover minor units go one at a time to the first parts.
        """
        if not ratios or any(r < 0 for r in ratios) or sum(ratios) == 0:
            raise ValueError("ratios must be non-negative and not all zero")
        total_units = self.to_minor()
        total_ratio = sum(Decimal(r) for r in ratios)
        shares = [int(total_units * Decimal(r) / total_ratio) for r in ratios]
        remainder = total_units - sum(shares)
        step = 1 if remainder >= 0 else -1
        for i in range(abs(remainder)):
            shares[i % len(shares)] += step
        return [Money.from_minor(s, self.currency) for s in shares]

    def split(self, parts: int) -> list["Money"]:
        """Split into ``parts`` near-equal amounts."""
        if parts < 1:
            raise ValueError("parts must be at least 1")
        return self.allocate([1] * parts)

    # -- comparison / representation -----------------------------------------------------------

    def __eq__(self, other):
        if not isinstance(other, Money):
            return NotImplemented
        return self.currency == other.currency and self.amount == other.amount

    def __lt__(self, other):
        other = self._check(other)
        return self.amount < other.amount

    def __hash__(self):
        return hash((self.currency.code, self.amount))

    def __repr__(self):
        return f"Money('{self.amount}', '{self.currency.code}')"

    def __str__(self):
        from .formatting import format_money
        return format_money(self)

    @property
    def minor_unit(self) -> Decimal:
        return minor_unit(self.currency)
