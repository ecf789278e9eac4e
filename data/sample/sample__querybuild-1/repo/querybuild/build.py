"""Building query strings."""

from __future__ import annotations

from .encoding import Params, encode_component, iter_pairs

__all__ = ["build_query"]


def build_query(params: Params, *, sort: bool = False, safe: str = "",
                space_as_plus: bool = False, skip_none: bool = True) -> str:
    """Build a query string (without the leading ``?``) from ``params``.

    >>> build_query({"q": "red shoes", "size": [40, 41], "in_stock": True, "page": None})
    'q=red%20shoes&size=40&size=41&in_stock=true'

    :param params: a mapping, or an iterable of ``(key, value)`` pairs to control order and
        repeat keys explicitly.
    :param sort: sort by key (stable: repeated keys keep their relative order). Useful for
        cache keys and request signing.
    :param safe: characters not to percent-encode (e.g. ``"/:"``).
    :param space_as_plus: encode spaces as ``+`` instead of ``%20``.
    :param skip_none: leave out parameters whose value is ``None``.
    """
    pairs = list(iter_pairs(params, skip_none=skip_none))
    if sort:
        pairs.sort(key=lambda kv: kv[0])
    return "&".join(
        f"{encode_component(k, safe=safe, space_as_plus=space_as_plus)}="
        f"{encode_component(v, safe=safe, space_as_plus=space_as_plus)}"
        for k, v in pairs
    )
