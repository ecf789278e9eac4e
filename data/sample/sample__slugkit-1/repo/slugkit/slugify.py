"""The :func:`slugify` function."""

from __future__ import annotations

import re
from typing import Iterable, Mapping

from .translit import transliterate

__all__ = ["slugify", "is_slug", "DEFAULT_SEPARATOR"]

DEFAULT_SEPARATOR = "-"

_APOSTROPHES_RE = re.compile(r"(?<=\w)['\u2019](?=\w)")
_NON_WORD_RE = re.compile(r"[^A-Za-z0-9]+")


def _split_words(text: str) -> list[str]:
    # "don't" -> "dont", not "don-t"
    text = _APOSTROPHES_RE.sub("", text)
    return [w for w in _NON_WORD_RE.split(text) if w]


def slugify(
    text: str,
    separator: str = DEFAULT_SEPARATOR,
    *,
    lowercase: bool = True,
    max_length: int | None = None,
    stopwords: Iterable[str] = (),
    replacements: Iterable[tuple[str, str]] = (),
    transliterations: Mapping[str, str] | None = None,
) -> str:
    """Turn ``text`` into a URL-friendly slug.

    ``"Hello, Wörld!"`` becomes ``"hello-world"``: the text is transliterated to ASCII, every run of
    characters other than letters and digits becomes one ``separator``, and separators are never
    doubled or left at either end.

    :param separator: string put between words.
    :param lowercase: lower-case the result (default).
    :param max_length: cut the slug to at most this many characters.
    :param stopwords: words (compared case-insensitively) to leave out, unless that would leave
        nothing.
    :param replacements: ``(old, new)`` pairs applied to the raw text first.
    :param transliterations: extra character mappings, e.g. :data:`slugkit.GERMAN`.
    """
    if not isinstance(text, str):
        raise TypeError(f"slugify() expects a str, got {type(text).__name__}")
    if max_length is not None and max_length < 1:
        raise ValueError("max_length must be at least 1")

    for old, new in replacements:
        text = text.replace(old, new)
    text = transliterate(text, transliterations)
    if lowercase:
        text = text.lower()

    words = _split_words(text)
    stop = {w.lower() for w in stopwords}
    if stop:
        kept = [w for w in words if w.lower() not in stop]
        words = kept or words

    slug = separator.join(words)
    if max_length is not None:
        slug = slug[:max_length]
    return slug


def is_slug(value: str, separator: str = DEFAULT_SEPARATOR, *, lowercase: bool = True) -> bool:
    """True when ``value`` looks like something :func:`slugify` produces.

    >>> is_slug("hello-world"), is_slug("hello--world"), is_slug("-hello")
    (True, False, False)
    """
    if not value:
        return False
    if lowercase and value != value.lower():
        return False
    words = value.split(separator) if separator else [value]
    return all(w and w.isascii() and w.isalnum() for w in words)
