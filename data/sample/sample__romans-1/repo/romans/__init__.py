"""romans: Roman numerals and friendly number formatting.

>>> from romans import to_roman, from_roman, ordinal, intword
>>> to_roman(1994)
'MCMXCIV'
>>> from_roman("MMXXIV")
2024
>>> ordinal(22)
'22nd'
>>> intword(1_200_000)
'1.2 million'
"""

from romans.errors import InvalidRomanNumeral
from romans.humanize import apnumber, intcomma, intword, ordinal
from romans.roman import MAX_ROMAN, from_roman, is_roman, to_roman

__all__ = [
    "InvalidRomanNumeral",
    "MAX_ROMAN",
    "apnumber",
    "from_roman",
    "intcomma",
    "intword",
    "is_roman",
    "ordinal",
    "to_roman",
]

__version__ = "1.0.4"
