"""Exceptions raised by unitconv."""


class UnitError(ValueError):
    """Base class: a unit expression is invalid or a conversion is impossible."""


class UnknownUnitError(UnitError):
    """A unit symbol is not in the registry (after trying every prefix)."""

    def __init__(self, symbol: str) -> None:
        super().__init__(f"unknown unit: {symbol!r}")
        self.symbol = symbol


class DimensionError(UnitError):
    """Two units measure different physical dimensions (e.g. metres and seconds)."""
