"""Converting Python values to query-string text and percent-encoding it."""

from __future__ import annotations

import datetime as _dt
import enum
from decimal import Decimal
from typing import Any, Iterable, Iterator, Mapping
from urllib.parse import quote

__all__ = ["to_text", "encode_component", "iter_pairs"]

Params = Mapping[str, Any] | Iterable[tuple[str, Any]]


def to_text(value: Any) -> str:
    """Render one scalar value as query-string text.

    ``True``/``False`` become ``true``/``false``; dates and datetimes use ISO 8601; enums use their
    value; bytes are decoded as UTF-8.
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, enum.Enum):
        return to_text(value.value)
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (str, int, float, Decimal)):
        return str(value)
    raise TypeError(f"cannot put a {type(value).__name__} into a query string")


def encode_component(text: str, *, safe: str = "", space_as_plus: bool = False) -> str:
    """Percent-encode ``text`` (RFC 3986 unreserved characters are left alone).

    Spaces become ``%20``, or ``+`` with ``space_as_plus`` (HTML form encoding).
    """
    if space_as_plus:
        return "+".join(quote(part, safe=safe) for part in text.split(" "))
    return quote(text, safe=safe)


def iter_pairs(params: Params, *, skip_none: bool = True) -> Iterator[tuple[str, str]]:
    """Yield ``(key, text)`` pairs from a mapping or an iterable of pairs.

    A list, tuple or set value yields one pair per item (``tag=a&tag=b``); sets are sorted for a
    stable result. ``None`` values (also inside lists) are skipped unless ``skip_none=False``, in
    which case they become an empty value.
    """
    items = params.items() if isinstance(params, Mapping) else params
    for key, value in items:
        if not isinstance(key, str):
            raise TypeError(f"query parameter names must be str, got {type(key).__name__}")
        if isinstance(value, (set, frozenset)):
            value = sorted(value, key=to_text)
        values = value if isinstance(value, (list, tuple)) else [value]
        for item in values:
            if item is None:
                if skip_none:
                    continue
                yield key, ""
            else:
                yield key, to_text(item)
