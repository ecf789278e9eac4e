"""Parsing unit expressions such as ``"kg*m/s^2"``, ``"km/h"`` or ``"µmol/L"``.

Grammar (informal)::

    expression := term (("*" | "·" | " ") term)* ("/" term (("*" | "·" | " " | "/") term)*)?
    term       := [prefix] symbol ["^" integer | "²" | "³"]

Everything after the first ``/`` is in the denominator, so ``"J/kg/K"`` means
joule per kilogram per kelvin.  ``"1"`` is the dimensionless unit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import List, Optional, Tuple

from unitconv.errors import UnitError, UnknownUnitError
from unitconv.units import DIMENSIONLESS, PREFIXES, UNITS, Dimension, Unit

_TERM = re.compile(r"^(?P<sym>[^\^²³]+?)(?:\^(?P<exp>[+-]?\d+)|(?P<sup>[²³]))?$")
_SUPERSCRIPTS = {"²": 2, "³": 3}
# longest prefixes first so that "da" wins over "d"
_PREFIX_ORDER = sorted(PREFIXES, key=len, reverse=True)


@dataclass(frozen=True)
class Term:
    """One factor of a unit expression: ``prefix`` + ``unit`` raised to ``exponent``."""

    prefix: str
    unit: Unit
    exponent: int

    @property
    def factor(self) -> float:
        """Size of this term in coherent SI units."""
        scale = PREFIXES[self.prefix] if self.prefix else 1.0
        return scale * self.unit.factor ** self.exponent

    @property
    def dimension(self) -> Dimension:
        return self.unit.dimension ** self.exponent


@dataclass(frozen=True)
class ParsedUnit:
    """A parsed unit expression: overall SI ``factor`` and ``dimension``."""

    expression: str
    terms: Tuple[Term, ...]
    factor: float
    dimension: Dimension


def split_prefix(symbol: str) -> Tuple[str, Unit]:
    """Split ``"km"`` into ``("k", <metre>)``.

    An exact unit symbol always wins (``"min"`` is the minute, ``"mm"`` is the
    millimetre, ``"Pa"`` the pascal and not a peta-year).
    """
    if symbol in UNITS:
        return "", UNITS[symbol]
    for prefix in _PREFIX_ORDER:
        if symbol.startswith(prefix):
            unit = UNITS.get(symbol[len(prefix):])
            if unit is not None and unit.prefixable:
                return prefix, unit
    raise UnknownUnitError(symbol)


def _parse_term(text: str, sign: int) -> Optional[Term]:
    match = _TERM.match(text)
    if not match:
        raise UnitError(f"cannot parse unit term {text!r}")
    symbol = match.group("sym")
    if match.group("sup"):
        exponent = _SUPERSCRIPTS[match.group("sup")]
    elif match.group("exp"):
        exponent = int(match.group("exp"))
    else:
        exponent = 1
    if symbol == "1":
        return None
    prefix, unit = split_prefix(symbol)
    return Term(prefix, unit, sign * exponent)


@lru_cache(maxsize=512)
def parse_unit(expression: str) -> ParsedUnit:
    """Parse a unit expression.  Results are cached."""
    text = expression.strip()
    if not text:
        raise UnitError("empty unit expression")
    numerator, slash, rest = text.partition("/")
    groups = [(numerator, 1)]
    if slash:
        groups += [(part, -1) for part in rest.split("/")]
    terms: List[Term] = []
    for group, sign in groups:
        pieces = [p for p in re.split(r"[*·\s]+", group) if p]
        if not pieces:
            raise UnitError(f"missing unit in {expression!r}")
        for piece in pieces:
            term = _parse_term(piece, sign)
            if term is not None:
                terms.append(term)
    factor = 1.0
    dimension = DIMENSIONLESS
    for term in terms:
        factor *= term.factor
        dimension = dimension * term.dimension
    return ParsedUnit(expression, tuple(terms), factor, dimension)
