"""Adding parameters to, and removing them from, existing URLs."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit, urlunsplit

from .build import build_query
from .encoding import Params, iter_pairs

__all__ = ["merge_url", "remove_params", "query_params"]


def query_params(url: str) -> list[tuple[str, str]]:
    """The decoded ``(key, value)`` pairs of ``url``'s query, in order, repeats included."""
    return parse_qsl(urlsplit(url).query, keep_blank_values=True)


def merge_url(url: str, params: Params, *, sort: bool = False, space_as_plus: bool = False) -> str:
    """Return ``url`` with ``params`` added to its query string.

    Parameters already in the URL are kept, in their order; a key that appears in ``params``
    replaces the URL's value(s) for that key. The fragment is preserved.

    >>> merge_url("https://example.com/items?page=1#top", {"page": 2, "q": "tea"})
    'https://example.com/items?page=2&q=tea#top'
    """
    parts = urlsplit(url)
    merged = dict(parse_qsl(parts.query, keep_blank_values=True))
    for key, value in iter_pairs(params):
        merged[key] = value
    query = build_query(list(merged.items()), sort=sort, space_as_plus=space_as_plus)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment))


def remove_params(url: str, *keys: str) -> str:
    """Return ``url`` without the given query parameters (all their values)."""
    parts = urlsplit(url)
    drop = set(keys)
    kept = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k not in drop]
    return urlunsplit((parts.scheme, parts.netloc, parts.path, build_query(kept), parts.fragment))
