"""Friendly number formatting: ordinals, thousands separators, large numbers in words."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from typing import Union

Number = Union[int, float, Decimal]

_SMALL_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")

_POWERS = (
    (10**15, "quadrillion"),
    (10**12, "trillion"),
    (10**9, "billion"),
    (10**6, "million"),
)


def ordinal(number: int) -> str:
    """``1`` -> ``"1st"``, ``22`` -> ``"22nd"``, ``13`` -> ``"13th"``, ``111`` -> ``"111th"``."""
    if isinstance(number, bool) or not isinstance(number, int):
        raise TypeError(f"expected an int, got {type(number).__name__}")
    if 10 <= abs(number) % 100 <= 20:
        suffix = "th"
    else:
        suffix = {1: "st", 2: "nd", 3: "rd"}.get(abs(number) % 10, "th")
    return f"{number}{suffix}"


def intcomma(number: Number, sep: str = ",") -> str:
    """``1234567`` -> ``"1,234,567"``; decimals are kept as given (``1234.5`` -> ``"1,234.5"``)."""
    text = str(number)
    sign = ""
    if text.startswith("-"):
        sign, text = "-", text[1:]
    whole, dot, frac = text.partition(".")
    groups = []
    while len(whole) > 3:
        groups.insert(0, whole[-3:])
        whole = whole[:-3]
    groups.insert(0, whole)
    return sign + sep.join(groups) + dot + frac


def intword(number: int, precision: int = 1) -> str:
    """``1_200_000`` -> ``"1.2 million"``; numbers below a million are returned with commas.

    The value is rounded half up to ``precision`` decimals; trailing zeros are
    dropped (``2_000_000`` -> ``"2 million"``).
    """
    if abs(number) < 10**6:
        return intcomma(number)
    for power, word in _POWERS:
        if abs(number) >= power:
            scaled = (Decimal(number) / power).quantize(Decimal(1).scaleb(-precision), rounding=ROUND_HALF_UP)
            text = format(scaled.normalize(), "f")
            return f"{text} {word}"
    return intcomma(number)  # pragma: no cover - unreachable


def apnumber(number: int) -> str:
    """Associated Press style: ``0``-``9`` as words, everything else as digits."""
    if isinstance(number, int) and not isinstance(number, bool) and 0 <= number <= 9:
        return _SMALL_WORDS[number]
    return str(number)
