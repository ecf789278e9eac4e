"""The unit registry: base dimensions, named units and SI prefixes.

Every unit is stored as a factor relative to the coherent SI unit of its
dimension (metre, kilogram, second, ampere, kelvin, mole, candela) together
with that dimension.  Only multiplicative units are supported; temperature
*differences* in kelvin work, absolute Celsius/Fahrenheit scales do not.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Tuple

BASE_DIMENSIONS = ("L", "M", "T", "I", "Θ", "N", "J")


@dataclass(frozen=True)
class Dimension:
    """Exponents of the seven SI base dimensions, e.g. velocity is L¹T⁻¹."""

    exponents: Tuple[int, ...] = (0, 0, 0, 0, 0, 0, 0)

    @classmethod
    def of(cls, **powers: int) -> "Dimension":
        """``Dimension.of(L=1, T=-1)``; ``Th`` may be used for temperature."""
        exps = [0] * len(BASE_DIMENSIONS)
        for name, power in powers.items():
            key = "Θ" if name == "Th" else name
            exps[BASE_DIMENSIONS.index(key)] = power
        return cls(tuple(exps))

    def __mul__(self, other: "Dimension") -> "Dimension":
        return Dimension(tuple(a + b for a, b in zip(self.exponents, other.exponents)))

    def __pow__(self, power: int) -> "Dimension":
        return Dimension(tuple(a * power for a in self.exponents))

    @property
    def is_dimensionless(self) -> bool:
        return not any(self.exponents)

    def __str__(self) -> str:
        parts = [f"{n}^{e}" if e != 1 else n for n, e in zip(BASE_DIMENSIONS, self.exponents) if e]
        return "·".join(parts) or "1"


DIMENSIONLESS = Dimension()
LENGTH = Dimension.of(L=1)
MASS = Dimension.of(M=1)
TIME = Dimension.of(T=1)
CURRENT = Dimension.of(I=1)
TEMPERATURE = Dimension.of(Th=1)
AMOUNT = Dimension.of(N=1)
LUMINOSITY = Dimension.of(J=1)


@dataclass(frozen=True)
class Unit:
    """A named unit: ``factor`` SI units of ``dimension``.

    ``prefixable`` says whether SI prefixes may be attached (``km`` yes,
    ``kmin`` no).
    """

    symbol: str
    factor: float
    dimension: Dimension
    prefixable: bool = True
    name: str = ""


def _u(symbol, factor, dimension, prefixable=True, name=""):
    return Unit(symbol, float(factor), dimension, prefixable, name)


_FORCE = Dimension.of(M=1, L=1, T=-2)
_ENERGY = Dimension.of(M=1, L=2, T=-2)
_POWER = Dimension.of(M=1, L=2, T=-3)

UNITS: Dict[str, Unit] = {
    u.symbol: u
    for u in [
        # SI base units (the kilogram is registered as the gram so that prefixes work)
        _u("m", 1, LENGTH, name="metre"),
        _u("g", 1e-3, MASS, name="gram"),
        _u("s", 1, TIME, name="second"),
        _u("A", 1, CURRENT, name="ampere"),
        _u("K", 1, TEMPERATURE, name="kelvin"),
        _u("mol", 1, AMOUNT, name="mole"),
        _u("cd", 1, LUMINOSITY, name="candela"),
        # derived SI units
        _u("Hz", 1, Dimension.of(T=-1), name="hertz"),
        _u("N", 1, _FORCE, name="newton"),
        _u("Pa", 1, Dimension.of(M=1, L=-1, T=-2), name="pascal"),
        _u("J", 1, _ENERGY, name="joule"),
        _u("W", 1, _POWER, name="watt"),
        _u("C", 1, Dimension.of(I=1, T=1), name="coulomb"),
        _u("V", 1, Dimension.of(M=1, L=2, T=-3, I=-1), name="volt"),
        _u("Ω", 1, Dimension.of(M=1, L=2, T=-3, I=-2), name="ohm"),
        # accepted non-SI units
        _u("L", 1e-3, Dimension.of(L=3), name="litre"),
        _u("t", 1e3, MASS, name="tonne"),
        _u("min", 60, TIME, prefixable=False, name="minute"),
        _u("h", 3600, TIME, prefixable=False, name="hour"),
        _u("d", 86400, TIME, prefixable=False, name="day"),
        _u("Wh", 3600, _ENERGY, name="watt-hour"),
        _u("eV", 1.602176634e-19, _ENERGY, name="electronvolt"),
        _u("bar", 1e5, Dimension.of(M=1, L=-1, T=-2), name="bar"),
        # imperial / US customary
        _u("in", 0.0254, LENGTH, prefixable=False, name="inch"),
        _u("ft", 0.3048, LENGTH, prefixable=False, name="foot"),
        _u("mi", 1609.344, LENGTH, prefixable=False, name="mile"),
        _u("lb", 0.45359237, MASS, prefixable=False, name="pound"),
        _u("gal", 3.785411784e-3, Dimension.of(L=3), prefixable=False, name="US gallon"),
    ]
}

PREFIXES: Dict[str, float] = {
    "Y": 1e24,
    "Z": 1e21,
    "E": 1e18,
    "P": 1e15,
    "T": 1e12,
    "G": 1e9,
    "M": 1e6,
    "k": 1e3,
    "h": 1e2,
    "da": 1e1,
    "d": 1e-1,
    "c": 1e-2,
    "m": 1e-3,
    "µ": 1e-6,
    "μ": 1e-6,  # GREEK SMALL LETTER MU, often typed instead of MICRO SIGN
    "u": 1e-6,  # ASCII fallback
    "n": 1e-9,
    "p": 1e-12,
    "f": 1e-15,
    "a": 1e-18,
}
