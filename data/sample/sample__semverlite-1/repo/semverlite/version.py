"""Parsing and comparison of Semantic Versioning 2.0.0 version strings."""

from __future__ import annotations

import functools
import re

__all__ = ["InvalidVersion", "Version", "parse"]

_VERSION_RE = re.compile(
    r"""
    ^v?
    (?P<major>0|[1-9]\d*)
    \.(?P<minor>0|[1-9]\d*)
    \.(?P<patch>0|[1-9]\d*)
    (?:-(?P<prerelease>[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?
    (?:\+(?P<build>[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?
    $
    """,
    re.VERBOSE,
)


class InvalidVersion(ValueError):
    """Raised when a string is not a valid semantic version."""


def _prerelease_key(ident: str):
    # Numeric identifiers sort numerically and before alphanumeric ones.
    if ident.isdigit():
        return (0, int(ident), "")
    return (1, 0, ident)


@functools.total_ordering
class Version:
    """An immutable semantic version.

    >>> Version.parse("1.4.0-rc.1") < Version.parse("1.4.0")
    True
    """

    __slots__ = ("major", "minor", "patch", "prerelease", "build")

    def __init__(self, major: int, minor: int = 0, patch: int = 0,
                 prerelease: tuple[str, ...] = (), build: tuple[str, ...] = ()):
        for name, value in (("major", major), ("minor", minor), ("patch", patch)):
            if not isinstance(value, int) or value < 0:
                raise InvalidVersion(f"{name} must be a non-negative integer, got {value!r}")
        object.__setattr__(self, "major", major)
        object.__setattr__(self, "minor", minor)
        object.__setattr__(self, "patch", patch)
        object.__setattr__(self, "prerelease", tuple(prerelease))
        object.__setattr__(self, "build", tuple(build))

    def __setattr__(self, name, value):
        raise AttributeError("Version objects are immutable")

    @classmethod
    def parse(cls, text: str) -> "Version":
        """Parse ``text`` (an optional leading ``v`` is accepted)."""
        if isinstance(text, Version):
            return text
        m = _VERSION_RE.match(text.strip())
        if not m:
            raise InvalidVersion(f"invalid version: {text!r}")
        pre = tuple(m.group("prerelease").split(".")) if m.group("prerelease") else ()
        for ident in pre:
            if ident.isdigit() and len(ident) > 1 and ident.startswith("0"):
                raise InvalidVersion(f"numeric prerelease identifier has a leading zero: {text!r}")
        build = tuple(m.group("build").split(".")) if m.group("build") else ()
        return cls(int(m.group("major")), int(m.group("minor")), int(m.group("patch")), pre, build)

    # -- comparison ---------------------------------------------------------------------------

    @property
    def release(self) -> tuple[int, int, int]:
        """The ``(major, minor, patch)`` triple."""
        return (self.major, self.minor, self.patch)

    @property
    def is_prerelease(self) -> bool:
        return bool(self.prerelease)

    def _cmp_key(self):
        # A version without prerelease sorts after all of its prereleases.
        if not self.prerelease:
            pre = (1,)
        else:
            pre = (0, tuple(_prerelease_key(i) for i in self.prerelease))
        return (self.release, pre)

    def __eq__(self, other):
        if isinstance(other, str):
            other = Version.parse(other)
        if not isinstance(other, Version):
            return NotImplemented
        return self._cmp_key() == other._cmp_key()

    def __lt__(self, other):
        if isinstance(other, str):
            other = Version.parse(other)
        if not isinstance(other, Version):
            return NotImplemented
        return self._cmp_key() < other._cmp_key()

    def __hash__(self):
        return hash(self._cmp_key())

    # -- bumping ------------------------------------------------------------------------------

    def bump_major(self) -> "Version":
        return Version(self.major + 1, 0, 0)

    def bump_minor(self) -> "Version":
        return Version(self.major, self.minor + 1, 0)

    def bump_patch(self) -> "Version":
        # 1.2.3-rc.1 -> 1.2.3: finishing a prerelease does not bump the patch number.
        if self.prerelease:
            return Version(self.major, self.minor, self.patch)
        return Version(self.major, self.minor, self.patch + 1)

    # -- representation -----------------------------------------------------------------------

    def __str__(self):
        s = f"{self.major}.{self.minor}.{self.patch}"
        if self.prerelease:
            s += "-" + ".".join(self.prerelease)
        if self.build:
            s += "+" + ".".join(self.build)
        return s

    def __repr__(self):
        return f"Version('{self}')"


def parse(text: str) -> Version:
    """Shortcut for :meth:`Version.parse`."""
    return Version.parse(text)
