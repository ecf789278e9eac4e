"""A small fluent builder for query strings."""

from __future__ import annotations

from typing import Any

from .build import build_query
from .encoding import iter_pairs
from .url import merge_url

__all__ = ["QueryBuilder"]


class QueryBuilder:
    """Collect parameters step by step, then render them.

    >>> (QueryBuilder().add("tag", "a").add("tag", "b").set("page", 2).build())
    'tag=a&tag=b&page=2'
    """

    def __init__(self, params=None, *, sort: bool = False, space_as_plus: bool = False):
        self._pairs: list[tuple[str, str]] = list(iter_pairs(params)) if params else []
        self.sort = sort
        self.space_as_plus = space_as_plus

    def add(self, key: str, value: Any) -> "QueryBuilder":
        """Append a value for ``key`` (keeping existing ones)."""
        self._pairs.extend(iter_pairs([(key, value)]))
        return self

    def set(self, key: str, value: Any) -> "QueryBuilder":
        """Replace every value of ``key``; the new values take the place of the first old one."""
        new = list(iter_pairs([(key, value)]))
        out: list[tuple[str, str]] = []
        placed = False
        for k, v in self._pairs:
            if k == key:
                if not placed:
                    out.extend(new)
                    placed = True
                continue
            out.append((k, v))
        if not placed:
            out.extend(new)
        self._pairs = out
        return self

    def remove(self, key: str) -> "QueryBuilder":
        self._pairs = [(k, v) for k, v in self._pairs if k != key]
        return self

    def get_all(self, key: str) -> list[str]:
        return [v for k, v in self._pairs if k == key]

    def __len__(self) -> int:
        return len(self._pairs)

    def build(self) -> str:
        return build_query(self._pairs, sort=self.sort, space_as_plus=self.space_as_plus)

    def to_url(self, base: str) -> str:
        """``base`` with these parameters merged into its query string."""
        return merge_url(base, self._pairs, sort=self.sort, space_as_plus=self.space_as_plus)

    def __str__(self) -> str:
        return self.build()
