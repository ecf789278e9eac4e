"""Memoization on top of :class:`ttlcache.TTLCache`."""

from __future__ import annotations

import functools
from typing import Any, Callable, Hashable

from .cache import TTLCache

__all__ = ["cached", "make_key"]

_KWD_MARK = object()
_MISS = object()


def make_key(*args: Any, **kwargs: Any) -> Hashable:
    """A hashable key for a call: positional arguments, then sorted keyword arguments."""
    key: tuple = args
    if kwargs:
        key += (_KWD_MARK,) + tuple(sorted(kwargs.items()))
    return key


def cached(cache: TTLCache | None = None, *, key: Callable[..., Hashable] = make_key,
           maxsize: int = 128, ttl: float | None = None):
    """Decorator caching a function's results in ``cache`` (or a new ``TTLCache(maxsize, ttl)``).

    Exceptions are not cached. The wrapper exposes ``cache`` and ``cache_clear()``.

    >>> @cached(ttl=60)
    ... def lookup(user_id): ...
    """
    def decorator(func):
        store = cache if cache is not None else TTLCache(maxsize=maxsize, ttl=ttl)

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            k = key(*args, **kwargs)
            value = store.get(k, _MISS)
            if value is _MISS:
                value = func(*args, **kwargs)
                store.set(k, value)
            return value

        wrapper.cache = store
        wrapper.cache_clear = store.clear
        return wrapper

    return decorator
