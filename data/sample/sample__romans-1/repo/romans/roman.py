"""Conversion between integers and Roman numerals in standard form.

Standard form writes each decimal digit separately with the additive symbols
``I V X L C D M`` and the six subtractive pairs ``IV IX XL XC CD CM``; it covers
1 to 3999.  Lower-case input is accepted.
"""

from __future__ import annotations

from romans.errors import InvalidRomanNumeral

MAX_ROMAN = 3999

_PAIRS = (
    (1000, "M"),
    (900, "CM"),
    (500, "D"),
    (400, "CD"),
    (100, "C"),
    (90, "XC"),
    (50, "L"),
    (40, "XL"),
    (10, "X"),
    (9, "IX"),
    (5, "V"),
    (4, "IV"),
    (1, "I"),
)

_VALUES = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}


def to_roman(number: int) -> str:
    """``to_roman(1994)`` -> ``"MCMXCIV"``.

    Raises :class:`TypeError` for non-integers (``bool`` included) and
    :class:`ValueError` outside ``1..3999``.
    """
    if isinstance(number, bool) or not isinstance(number, int):
        raise TypeError(f"expected an int, got {type(number).__name__}")
    if not 1 <= number <= MAX_ROMAN:
        raise ValueError(f"{number} cannot be written as a Roman numeral (1..{MAX_ROMAN})")
    out = []
    for value, symbol in _PAIRS:
        count, number = divmod(number, value)
        out.append(symbol * count)
    return "".join(out)


def from_roman(text: str) -> int:
    """``from_roman("MCMXCIV")`` -> ``1994``.

    Raises :class:`InvalidRomanNumeral` for anything that is not a Roman
    numeral in standard form.
    """
    if not isinstance(text, str):
        raise InvalidRomanNumeral(text, "not a string")
    numeral = text.strip().upper()
    if not numeral:
        raise InvalidRomanNumeral(text, "empty")
    for ch in numeral:
        if ch not in _VALUES:
            raise InvalidRomanNumeral(text, f"unexpected character {ch!r}")
    total = 0
    for i, ch in enumerate(numeral):
        value = _VALUES[ch]
        following = _VALUES[numeral[i + 1]] if i + 1 < len(numeral) else 0
        if value < following:
            total -= value
        else:
            total += value
    if total > MAX_ROMAN:
        raise InvalidRomanNumeral(text, f"value {total} is larger than {MAX_ROMAN}")
    return total


def is_roman(text: str) -> bool:
    """True if :func:`from_roman` would accept ``text``."""
    try:
        from_roman(text)
    except InvalidRomanNumeral:
        return False
    return True
