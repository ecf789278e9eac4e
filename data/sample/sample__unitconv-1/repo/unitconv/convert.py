"""Converting values and the :class:`Quantity` value type."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from unitconv.errors import DimensionError
from unitconv.parse import parse_unit

Number = Union[int, float]


def same_dimension(a: str, b: str) -> bool:
    """True if unit expressions ``a`` and ``b`` measure the same dimension."""
    return parse_unit(a).dimension == parse_unit(b).dimension


def convert(value: Number, from_unit: str, to_unit: str) -> float:
    """Convert ``value`` expressed in ``from_unit`` to ``to_unit``.

    Raises :class:`DimensionError` if the units are incompatible and
    :class:`UnknownUnitError` for an unknown symbol.
    """
    src = parse_unit(from_unit)
    dst = parse_unit(to_unit)
    if src.dimension != dst.dimension:
        raise DimensionError(
            f"cannot convert {from_unit!r} ({src.dimension}) to {to_unit!r} ({dst.dimension})"
        )
    result = value * src.factor / dst.factor
    # tidy up binary floating point noise such as 0.30000000000000004
    return float(f"{result:.12g}")


@dataclass(frozen=True)
class Quantity:
    """A value with a unit, e.g. ``Quantity(3, "km")``.

    Quantities of the same dimension can be added, subtracted and compared;
    the result is expressed in the left operand's unit.
    """

    value: float
    unit: str

    def __post_init__(self) -> None:
        parse_unit(self.unit)  # validate early

    def to(self, unit: str) -> "Quantity":
        """The same quantity expressed in ``unit``."""
        return Quantity(convert(self.value, self.unit, unit), unit)

    def _coerce(self, other: "Quantity") -> float:
        if not isinstance(other, Quantity):
            raise TypeError(f"expected a Quantity, got {type(other).__name__}")
        return convert(other.value, other.unit, self.unit)

    def __add__(self, other: "Quantity") -> "Quantity":
        return Quantity(self.value + self._coerce(other), self.unit)

    def __sub__(self, other: "Quantity") -> "Quantity":
        return Quantity(self.value - self._coerce(other), self.unit)

    def __mul__(self, k: Number) -> "Quantity":
        return Quantity(self.value * k, self.unit)

    __rmul__ = __mul__

    def __lt__(self, other: "Quantity") -> bool:
        return self.value < self._coerce(other)

    def __le__(self, other: "Quantity") -> bool:
        return self.value <= self._coerce(other)

    def __str__(self) -> str:
        return f"{self.value:g} {self.unit}"
