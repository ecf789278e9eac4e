"""semverlite: small, dependency-free semantic version parsing and npm-style range matching."""

from .ranges import Comparator, InvalidRange, Range, max_satisfying, min_satisfying, satisfies
from .version import InvalidVersion, Version, parse

__version__ = "0.4.2"

__all__ = [
    "Comparator",
    "InvalidRange",
    "InvalidVersion",
    "Range",
    "Version",
    "max_satisfying",
    "min_satisfying",
    "parse",
    "satisfies",
]
