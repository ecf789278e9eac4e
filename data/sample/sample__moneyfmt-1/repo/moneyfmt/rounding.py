"""Rounding amounts to a currency's minor unit."""

from __future__ import annotations

import decimal
from decimal import Decimal

from .currency import Currency

__all__ = ["ROUNDING_MODES", "minor_unit", "round_amount"]

#: Rounding mode names accepted throughout moneyfmt. ``half_even`` is "banker's rounding".
ROUNDING_MODES = {
    "half_even": decimal.ROUND_HALF_EVEN,
    "bankers": decimal.ROUND_HALF_EVEN,
    "half_up": decimal.ROUND_HALF_UP,
    "half_down": decimal.ROUND_HALF_DOWN,
    "up": decimal.ROUND_UP,
    "down": decimal.ROUND_DOWN,
    "ceiling": decimal.ROUND_CEILING,
    "floor": decimal.ROUND_FLOOR,
}


def minor_unit(currency: Currency) -> Decimal:
    """The smallest amount of ``currency``: ``Decimal('0.01')`` for USD, ``Decimal('1')`` for JPY."""
    return Decimal(1).scaleb(-currency.minor_units)


def round_amount(amount, currency: Currency, mode: str = "half_even") -> Decimal:
    """Round ``amount`` to the minor unit of ``currency`` using the named rounding ``mode``."""
    try:
        rounding = ROUNDING_MODES[mode]
    except KeyError:
        raise ValueError(f"unknown rounding mode {mode!r}; "
                         f"expected one of {', '.join(sorted(ROUNDING_MODES))}") from None
    if isinstance(amount, float):
        # go through repr so that 0.1 becomes Decimal('0.1'), not 0.1000000000000000055...
        amount = Decimal(repr(amount))
    return Decimal(amount).quantize(minor_unit(currency), rounding=rounding)
