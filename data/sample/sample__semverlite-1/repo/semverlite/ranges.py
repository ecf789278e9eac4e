"""Version ranges in the npm style: ``^1.2.3``, ``~1.2.3``, ``>=1.0.0 <2.0.0``, ``1.2.3 - 1.4.0``,
``*`` and alternatives joined with ``||``.

A range is a union (``||``) of comparator sets; a version satisfies a comparator set when it
satisfies every comparator in it.
"""

from __future__ import annotations

import re
from typing import Iterable

from .version import InvalidVersion, Version

__all__ = ["InvalidRange", "Comparator", "Range", "satisfies", "max_satisfying", "min_satisfying"]

_OPS = {
    ">=": lambda a, b: a >= b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    "<": lambda a, b: a < b,
    "=": lambda a, b: a == b,
}
_COMPARATOR_RE = re.compile(r"^(>=|<=|>|<|=|\^|~)?\s*(v?\d\S*)$")
_HYPHEN_RE = re.compile(r"^\s*(\S+)\s+-\s+(\S+)\s*$")


class InvalidRange(ValueError):
    """Raised when a range expression cannot be parsed."""


class Comparator:
    """A single ``<op> <version>`` constraint."""

    __slots__ = ("op", "version")

    def __init__(self, op: str, version: Version):
        if op not in _OPS:
            raise InvalidRange(f"unknown operator {op!r}")
        self.op = op
        self.version = version

    def test(self, version: Version) -> bool:
        return _OPS[self.op](version, self.version)

    def __str__(self):
        return f"{self.op}{self.version}"

    def __repr__(self):
        return f"Comparator('{self}')"


def _parse_version(text: str, spec: str) -> Version:
    try:
        return Version.parse(text)
    except InvalidVersion:
        raise InvalidRange(f"invalid version {text!r} in range {spec!r}") from None


def _expand_caret(v: Version) -> list[Comparator]:
    """``^1.2.3`` allows changes that do not modify the major version: ``>=1.2.3 <2.0.0``."""
    return [Comparator(">=", v), Comparator("<", v.bump_major())]


def _expand_tilde(v: Version) -> list[Comparator]:
    """``~1.2.3`` allows patch-level changes: ``>=1.2.3 <1.3.0``."""
    return [Comparator(">=", v), Comparator("<", v.bump_minor())]


def _parse_set(text: str, spec: str) -> list[Comparator]:
    text = text.strip()
    if text in ("", "*", "x", "X"):
        return []
    m = _HYPHEN_RE.match(text)
    if m:
        low = _parse_version(m.group(1), spec)
        high = _parse_version(m.group(2), spec)
        return [Comparator(">=", low), Comparator("<=", high)]
    comparators: list[Comparator] = []
    # allow "> = 1.2.3" style spacing between operator and version
    tokens = re.sub(r"(>=|<=|>|<|=|\^|~)\s+", r"\1", text).split()
    for token in tokens:
        m = _COMPARATOR_RE.match(token)
        if not m:
            raise InvalidRange(f"invalid comparator {token!r} in range {spec!r}")
        op, ver = m.group(1) or "=", _parse_version(m.group(2), spec)
        if op == "^":
            comparators.extend(_expand_caret(ver))
        elif op == "~":
            comparators.extend(_expand_tilde(ver))
        else:
            comparators.append(Comparator(op, ver))
    return comparators


class Range:
    """A parsed range expression.

    >>> Range(">=1.2.0 <2.0.0").matches("1.5.0")
    True
    """

    def __init__(self, spec: str, include_prerelease: bool = False):
        if not isinstance(spec, str):
            raise InvalidRange(f"range must be a string, got {type(spec).__name__}")
        self.spec = spec
        self.include_prerelease = include_prerelease
        self.sets = [_parse_set(part, spec) for part in spec.split("||")]

    def _set_allows_prerelease(self, comparators: list[Comparator], version: Version) -> bool:
        # A prerelease only matches if some comparator in the same set names a prerelease of the
        # same major.minor.patch (the npm rule), unless include_prerelease was requested.
        if self.include_prerelease or not version.is_prerelease:
            return True
        return any(c.version.is_prerelease and c.version.release == version.release
                   for c in comparators)

    def matches(self, version) -> bool:
        """Return True when ``version`` (a string or :class:`Version`) is inside the range."""
        version = Version.parse(version)
        for comparators in self.sets:
            if all(c.test(version) for c in comparators) and \
                    self._set_allows_prerelease(comparators, version):
                return True
        return False

    __contains__ = matches

    def __str__(self):
        return " || ".join(" ".join(str(c) for c in s) or "*" for s in self.sets)

    def __repr__(self):
        return f"Range({self.spec!r})"


def satisfies(version, spec: str) -> bool:
    """Return True when ``version`` satisfies the range ``spec``."""
    return Range(spec).matches(version)


def _candidates(versions: Iterable, spec: str) -> list[Version]:
    rng = Range(spec)
    return [v for v in (Version.parse(x) for x in versions) if rng.matches(v)]


def max_satisfying(versions: Iterable, spec: str):
    """The highest version in ``versions`` that satisfies ``spec``, as given, or None."""
    versions = list(versions)
    found = _candidates(versions, spec)
    if not found:
        return None
    best = max(found)
    return next(v for v in versions if Version.parse(v) == best)


def min_satisfying(versions: Iterable, spec: str):
    """The lowest version in ``versions`` that satisfies ``spec``, as given, or None."""
    versions = list(versions)
    found = _candidates(versions, spec)
    if not found:
        return None
    best = min(found)
    return next(v for v in versions if Version.parse(v) == best)
