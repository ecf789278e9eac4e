"""Transliteration of non-ASCII text to ASCII.

Characters with an explicit entry in :data:`TRANSLITERATIONS` use it (``ß`` -> ``ss``, ``ø`` ->
``o``, Cyrillic and Greek letters); everything else is decomposed with Unicode NFKD and stripped of
combining marks (``é`` -> ``e``). Characters that still are not ASCII are dropped.
"""

from __future__ import annotations

import unicodedata
from typing import Mapping

__all__ = ["TRANSLITERATIONS", "GERMAN", "transliterate"]

TRANSLITERATIONS: dict[str, str] = {
    # Latin letters NFKD cannot decompose
    "ß": "ss", "ẞ": "SS", "æ": "ae", "Æ": "AE", "ø": "o", "Ø": "O", "œ": "oe", "Œ": "OE",
    "ł": "l", "Ł": "L", "đ": "d", "Đ": "D", "ð": "d", "Ð": "D", "þ": "th", "Þ": "Th",
    "ı": "i", "ħ": "h", "Ħ": "H",
    # punctuation that should read as words
    "&": " and ", "@": " at ", "%": " percent ",
    # Cyrillic
    "а": "a", "б": "b", "в": "v", "г": "g", "д": "d", "е": "e", "ё": "yo", "ж": "zh", "з": "z",
    "и": "i", "й": "y", "к": "k", "л": "l", "м": "m", "н": "n", "о": "o", "п": "p", "р": "r",
    "с": "s", "т": "t", "у": "u", "ф": "f", "х": "kh", "ц": "ts", "ч": "ch", "ш": "sh",
    "щ": "shch", "ъ": "", "ы": "y", "ь": "", "э": "e", "ю": "yu", "я": "ya",
    # Greek
    "α": "a", "β": "v", "γ": "g", "δ": "d", "ε": "e", "ζ": "z", "η": "i", "θ": "th", "ι": "i",
    "κ": "k", "λ": "l", "μ": "m", "ν": "n", "ξ": "x", "ο": "o", "π": "p", "ρ": "r", "σ": "s",
    "ς": "s", "τ": "t", "υ": "y", "φ": "f", "χ": "ch", "ψ": "ps", "ω": "o",
}

#: Optional German-style umlaut expansion (``ä`` -> ``ae``) instead of plain stripping (``a``).
GERMAN: dict[str, str] = {"ä": "ae", "ö": "oe", "ü": "ue", "Ä": "Ae", "Ö": "Oe", "Ü": "Ue"}


def _lookup(ch: str, tables: list[Mapping[str, str]]) -> str | None:
    for table in tables:
        if ch in table:
            return table[ch]
        lower = ch.lower()
        if lower != ch and lower in table:
            return table[lower].capitalize()
    return None


def transliterate(text: str, extra: Mapping[str, str] | None = None) -> str:
    """Return an ASCII approximation of ``text``.

    ``extra`` entries take precedence over the built-in table (e.g. ``slugkit.GERMAN``).
    """
    tables: list[Mapping[str, str]] = [extra] if extra else []
    tables.append(TRANSLITERATIONS)
    out = []
    for ch in text:
        if ch.isascii() and ch not in TRANSLITERATIONS and not (extra and ch in extra):
            out.append(ch)
            continue
        mapped = _lookup(ch, tables)
        if mapped is not None:
            out.append(mapped)
            continue
        # decompose ("é" -> "e" + combining acute, "ή" -> "η" + combining tonos) and map the base
        # characters again; combining marks and anything still non-ASCII are dropped
        for part in unicodedata.normalize("NFKD", ch):
            if unicodedata.combining(part):
                continue
            if part.isascii():
                out.append(part)
                continue
            mapped = _lookup(part, tables)
            if mapped is not None:
                out.append(mapped)
    return "".join(out)
