"""moneyfmt: exact money amounts with per-currency rounding and formatting."""

from .currency import Currency, UnknownCurrency, get_currency, register_currency
from .formatting import STYLES, format_money, parse_money
from .money import CurrencyMismatch, Money
from .rounding import ROUNDING_MODES, minor_unit, round_amount

__version__ = "2.3.0"

__all__ = [
    "Currency",
    "CurrencyMismatch",
    "Money",
    "ROUNDING_MODES",
    "STYLES",
    "UnknownCurrency",
    "format_money",
    "get_currency",
    "minor_unit",
    "parse_money",
    "register_currency",
    "round_amount",
]
