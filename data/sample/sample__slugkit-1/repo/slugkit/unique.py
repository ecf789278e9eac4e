"""Generating slugs that are unique within a collection."""

from __future__ import annotations

from typing import Callable, Iterable

from .slugify import DEFAULT_SEPARATOR, slugify

__all__ = ["UniqueSlugger"]


class UniqueSlugger:
    """Hand out slugs that have not been used yet: ``post``, ``post-2``, ``post-3``, ...

    >>> s = UniqueSlugger()
    >>> s("My Post"), s("My post!")
    ('my-post', 'my-post-2')

    ``existing`` pre-seeds the set of taken slugs; ``is_taken`` lets you check an external store
    (a database) instead. ``max_length`` and the other keyword arguments are passed to
    :func:`slugify`; the numeric suffix is counted within ``max_length``.
    """

    def __init__(self, existing: Iterable[str] = (), *,
                 is_taken: Callable[[str], bool] | None = None,
                 separator: str = DEFAULT_SEPARATOR, max_length: int | None = None, **options):
        self._taken = set(existing)
        self._is_taken = is_taken
        self.separator = separator
        self.max_length = max_length
        self.options = options

    def _taken_now(self, slug: str) -> bool:
        if slug in self._taken:
            return True
        return bool(self._is_taken and self._is_taken(slug))

    def __call__(self, text: str) -> str:
        slug = slugify(text, self.separator, max_length=self.max_length, **self.options)
        n = 1
        while self._taken_now(slug):
            n += 1
            suffix = f"{self.separator}{n}"
            room = None if self.max_length is None else self.max_length - len(suffix)
            if room is not None and room < 1:
                raise ValueError(f"max_length={self.max_length} leaves no room for suffix {suffix!r}")
            slug = slugify(text, self.separator, max_length=room, **self.options) + suffix
        self._taken.add(slug)
        return slug

    def reset(self) -> None:
        """Forget every slug handed out (``existing`` included)."""
        self._taken.clear()
