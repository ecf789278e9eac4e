"""Human-readable formatting and parsing of :class:`Money` values."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

from .currency import get_currency
from .money import Money

__all__ = ["STYLES", "format_money", "parse_money"]

#: Number styles: (thousands separator, decimal separator).
STYLES = {
    "en": (",", "."),
    "de": (".", ","),
    "fr": ("\u202f", ","),
    "ch": ("'", "."),
    "plain": ("", "."),
}


def _group(digits: str, sep: str) -> str:
    if not sep:
        return digits
    out = []
    while len(digits) > 3:
        out.append(digits[-3:])
        digits = digits[:-3]
    out.append(digits)
    return sep.join(reversed(out))


def format_money(money: Money, style: str = "en", symbol: bool = True) -> str:
    """Format ``money`` for display.

    ``style`` picks the separators (see :data:`STYLES`); with ``symbol=False`` the ISO code is
    appended instead of the symbol. Negative amounts get a leading ``-``.

    >>> format_money(Money("1234.5", "EUR"), style="de")
    '€1.234,50'
    """
    try:
        thousands, decimal_sep = STYLES[style]
    except KeyError:
        raise ValueError(f"unknown style {style!r}") from None
    cur = money.currency
    text = f"{abs(money.amount):.2f}"
    int_part, _, frac_part = text.partition(".")
    number = _group(int_part, thousands)
    if frac_part:
        number += decimal_sep + frac_part
    sign = "-" if money.amount < 0 else ""
    if not symbol:
        return f"{sign}{number} {cur.code}"
    if cur.symbol_first:
        return f"{sign}{cur.symbol}{number}"
    return f"{sign}{number}{cur.symbol}"


_NUMBER_RE = re.compile(r"[-+]?[\d.,'\u202f\s]*\d")


def parse_money(text: str, currency, style: str = "en") -> Money:
    """Parse a formatted amount such as ``"$1,234.50"`` or ``"1.234,50 €"`` in ``currency``."""
    thousands, decimal_sep = STYLES[style]
    cur = get_currency(currency)
    m = _NUMBER_RE.search(text)
    if not m:
        raise ValueError(f"no amount in {text!r}")
    raw = m.group(0)
    if thousands:
        raw = raw.replace(thousands, "")
    raw = re.sub(r"\s", "", raw).replace(decimal_sep, ".")
    negative = "-" in text[: m.start()] or raw.startswith("-")
    try:
        amount = Decimal(raw.lstrip("+-"))
    except InvalidOperation:
        raise ValueError(f"cannot parse amount {text!r}") from None
    return Money(-amount if negative else amount, cur)
