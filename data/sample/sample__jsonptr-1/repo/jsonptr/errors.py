"""Exceptions raised by jsonptr."""

from __future__ import annotations


class PointerError(Exception):
    """Base class of every jsonptr error."""


class InvalidPointerError(PointerError, ValueError):
    """The pointer string is not valid RFC 6901 syntax."""


class ResolutionError(PointerError, LookupError):
    """A pointer does not lead to a value in the document.

    ``pointer`` is the full pointer being resolved and ``depth`` the index of
    the reference token that could not be followed.
    """

    def __init__(self, message: str, pointer: str = "", depth: int = 0) -> None:
        super().__init__(message)
        self.pointer = pointer
        self.depth = depth
