"""Parsing, formatting and manipulating JSON Pointers (RFC 6901).

A pointer is a sequence of *reference tokens*.  In the string form every token
is prefixed with ``/`` and the characters ``~`` and ``/`` inside a token are
escaped as ``~0`` and ``~1``.  The empty string is the pointer to the whole
document.
"""

from __future__ import annotations

import re
from typing import Iterable, Sequence, Union
from urllib.parse import quote, unquote

from jsonptr.errors import InvalidPointerError

_BAD_ESCAPE = re.compile(r"~(?![01])")


def escape(token: str) -> str:
    """Escape a reference token for use inside a pointer string."""
    return token.replace("~", "~0").replace("/", "~1")


def unescape(token: str) -> str:
    """Undo :func:`escape`.  Raises :class:`InvalidPointerError` on a bad ``~`` escape."""
    if _BAD_ESCAPE.search(token):
        raise InvalidPointerError(f"invalid escape sequence in token {token!r}")
    return token.replace("~0", "~").replace("~1", "/")


class JsonPointer:
    """An immutable, parsed JSON Pointer.

    Build one with :meth:`parse` (from the string form), :meth:`from_parts`
    (from unescaped tokens) or :meth:`from_fragment` (from a URI fragment such as
    ``#/a%20b``).
    """

    __slots__ = ("_parts",)

    def __init__(self, parts: Sequence[str] = ()) -> None:
        self._parts = tuple(str(p) for p in parts)

    # ------------------------------------------------------------------ constructors

    @classmethod
    def parse(cls, text: str) -> "JsonPointer":
        """Parse the string form of a pointer (``""`` or ``"/..."``)."""
        if not isinstance(text, str):
            raise InvalidPointerError(f"pointer must be a string, not {type(text).__name__}")
        if text == "":
            return cls()
        if not text.startswith("/"):
            raise InvalidPointerError(f"pointer must start with '/': {text!r}")
        return cls(unescape(tok) for tok in text[1:].split("/"))

    @classmethod
    def from_parts(cls, parts: Iterable[object]) -> "JsonPointer":
        """Build a pointer from *unescaped* reference tokens (ints are allowed)."""
        return cls(str(p) for p in parts)

    @classmethod
    def from_fragment(cls, fragment: str) -> "JsonPointer":
        """Parse the URI fragment representation, e.g. ``#/c%25d``."""
        if not fragment.startswith("#"):
            raise InvalidPointerError(f"fragment must start with '#': {fragment!r}")
        return cls.parse(unquote(fragment[1:]))

    # ------------------------------------------------------------------ properties

    @property
    def parts(self) -> list[str]:
        """The unescaped reference tokens."""
        return list(self._parts)

    @property
    def is_root(self) -> bool:
        return not self._parts

    @property
    def parent(self) -> "JsonPointer":
        """The pointer one level up.  The root has no parent."""
        if not self._parts:
            raise InvalidPointerError("the root pointer has no parent")
        return JsonPointer(self._parts[:-1])

    @property
    def last(self) -> str:
        """The final reference token."""
        if not self._parts:
            raise InvalidPointerError("the root pointer has no last token")
        return self._parts[-1]

    def join(self, *parts: object) -> "JsonPointer":
        """A new pointer with ``parts`` (unescaped tokens) appended."""
        return JsonPointer(self._parts + tuple(str(p) for p in parts))

    def startswith(self, other: "JsonPointer") -> bool:
        """True if ``other`` is this pointer or one of its ancestors."""
        return self._parts[: len(other._parts)] == other._parts

    # ------------------------------------------------------------------ formatting

    def __str__(self) -> str:
        return "".join("/" + escape(p) for p in self._parts)

    def as_fragment(self) -> str:
        """The URI fragment form, percent-encoding unsafe characters."""
        return "#" + quote(str(self), safe="/~!$&'()*+,;=:@")

    def __repr__(self) -> str:
        return f"JsonPointer({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, JsonPointer):
            return self._parts == other._parts
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._parts)

    def __len__(self) -> int:
        return len(self._parts)


PointerLike = Union[str, JsonPointer, Sequence[object]]


def as_pointer(value: PointerLike) -> JsonPointer:
    """Coerce a pointer string, a :class:`JsonPointer` or a token list to a pointer."""
    if isinstance(value, JsonPointer):
        return value
    if isinstance(value, str):
        return JsonPointer.parse(value)
    return JsonPointer.from_parts(value)
