"""unitconv: convert physical quantities between units, with SI prefixes.

>>> from unitconv import convert
>>> convert(36, "km/h", "m/s")
10.0
>>> convert(1, "kWh", "MJ")
3.6
"""

from unitconv.convert import Quantity, convert, same_dimension
from unitconv.errors import DimensionError, UnitError, UnknownUnitError
from unitconv.parse import parse_unit
from unitconv.units import PREFIXES, UNITS, Dimension, Unit

__all__ = [
    "PREFIXES",
    "UNITS",
    "Dimension",
    "DimensionError",
    "Quantity",
    "Unit",
    "UnitError",
    "UnknownUnitError",
    "convert",
    "parse_unit",
    "same_dimension",
]

__version__ = "0.4.1"
