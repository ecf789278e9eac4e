"""ISO 4217 currencies and their minor units."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Currency", "UnknownCurrency", "get_currency", "register_currency"]


class UnknownCurrency(KeyError):
    """The currency code is not in the registry."""


@dataclass(frozen=True)
class Currency:
    """A currency: ISO code, number of minor-unit digits and display symbol.

    ``minor_units`` is the number of decimal digits of the minor unit: 2 for USD (cents), 0 for JPY
    (no minor unit in use), 3 for KWD (fils).
    """

    code: str
    minor_units: int
    symbol: str
    symbol_first: bool = True

    def __post_init__(self):
        if len(self.code) != 3 or not self.code.isalpha() or not self.code.isupper():
            raise ValueError(f"currency code must be three upper-case letters: {self.code!r}")
        if not 0 <= self.minor_units <= 4:
            raise ValueError(f"unsupported number of minor units: {self.minor_units}")

    def __str__(self):
        return self.code


_REGISTRY: dict[str, Currency] = {}


def register_currency(currency: Currency) -> Currency:
    """Add (or replace) a currency in the registry and return it."""
    _REGISTRY[currency.code] = currency
    return currency


def get_currency(code) -> Currency:
    """Look up a currency by ISO code (case-insensitive); Currency objects pass through."""
    if isinstance(code, Currency):
        return code
    try:
        return _REGISTRY[code.upper()]
    except (KeyError, AttributeError):
        raise UnknownCurrency(code) from None


for _c in [
    Currency("USD", 2, "$"),
    Currency("EUR", 2, "€"),
    Currency("GBP", 2, "£"),
    Currency("CHF", 2, "CHF ", True),
    Currency("INR", 2, "₹"),
    Currency("SEK", 2, " kr", False),
    Currency("JPY", 0, "¥"),
    Currency("KRW", 0, "₩"),
    Currency("CLP", 0, "CLP$"),
    Currency("KWD", 3, "KD "),
    Currency("BHD", 3, "BD "),
    Currency("TND", 3, " DT", False),
]:
    register_currency(_c)
