"""Money helpers: rounding, formatting and exact allocation."""

from __future__ import annotations

from decimal import ROUND_FLOOR, ROUND_HALF_UP, Decimal, InvalidOperation
from typing import List, Sequence, Union

CENT = Decimal("0.01")
Amount = Union[Decimal, int, str]

_SYMBOLS = {"EUR": "€", "USD": "$", "GBP": "£"}


def to_money(value: Amount) -> Decimal:
    """Convert to a Decimal rounded to cents, half up.

    Floats are refused: ``0.1 + 0.2`` style errors have no place on an invoice.
    """
    if isinstance(value, float):
        raise TypeError("use Decimal or str for money, not float")
    try:
        return Decimal(value).quantize(CENT, rounding=ROUND_HALF_UP)
    except InvalidOperation:
        raise ValueError(f"not an amount: {value!r}") from None


def format_money(amount: Amount, currency: str = "EUR") -> str:
    """``format_money(Decimal("1234.5"))`` -> ``"€1,234.50"``; negative amounts get a minus sign."""
    value = to_money(amount)
    symbol = _SYMBOLS.get(currency, currency + " ")
    sign = "-" if value < 0 else ""
    return f"{sign}{symbol}{abs(value):,.2f}"


def allocate(amount: Amount, weights: Sequence[Amount]) -> List[Decimal]:
    """Split ``amount`` in proportion to ``weights`` so that the parts add up exactly.

    Uses the largest-remainder method on whole cents; ties go to the earlier
    weight.  Zero total weight splits evenly.
    """
    total_cents = int(to_money(amount) * 100)
    ws = [Decimal(w) for w in weights]
    if not ws:
        return []
    weight_sum = sum(ws)
    if weight_sum == 0:
        ws = [Decimal(1)] * len(ws)
        weight_sum = Decimal(len(ws))
    exact = [Decimal(total_cents) * w / weight_sum for w in ws]
    floors = [int(e.to_integral_value(rounding=ROUND_FLOOR)) for e in exact]
    leftover = total_cents - sum(floors)
    order = sorted(range(len(ws)), key=lambda i: (-(exact[i] - floors[i]), i))
    for i in order[:leftover]:
        floors[i] += 1
    return [(Decimal(c) / 100).quantize(CENT) for c in floors]
