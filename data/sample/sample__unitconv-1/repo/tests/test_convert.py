import pytest

from unitconv import DimensionError, Quantity, UnknownUnitError, convert, same_dimension


@pytest.mark.parametrize(
    "value, src, dst, expected",
    [
        (1, "km", "m", 1000.0),
        (2.5, "h", "min", 150.0),
        (36, "km/h", "m/s", 10.0),
        (1, "kWh", "MJ", 3.6),
        (1, "N", "kg*m/s^2", 1.0),
        (750, "mL", "L", 0.75),
        (1, "L", "m^3", 0.001),
        (60, "mi/h", "km/h", 96.56064),
        (12, "in", "ft", 1.0),
        (1, "bar", "kPa", 100.0),
        (3, "µm", "nm", 3000.0),
        (1, "m²", "m^2", 1.0),
    ],
)
def test_convert(value, src, dst, expected):
    assert convert(value, src, dst) == pytest.approx(expected)


def test_dimension_mismatch():
    with pytest.raises(DimensionError) as info:
        convert(1, "m", "s")
    assert "'m'" in str(info.value)


def test_unknown_unit():
    with pytest.raises(UnknownUnitError) as info:
        convert(1, "furlong", "m")
    assert info.value.symbol == "furlong"


def test_same_dimension():
    assert same_dimension("J", "N*m")
    assert same_dimension("W", "J/s")
    assert not same_dimension("W", "J")


def test_quantity_arithmetic():
    total = Quantity(1, "km") + Quantity(500, "m")
    assert total == Quantity(1.5, "km")
    assert Quantity(2, "h") - Quantity(30, "min") == Quantity(1.5, "h")
    assert 2 * Quantity(3, "kg") == Quantity(6, "kg")
    assert Quantity(999, "m") < Quantity(1, "km")
    assert str(Quantity(2.5, "km/h")) == "2.5 km/h"


def test_quantity_to():
    assert Quantity(90, "min").to("h") == Quantity(1.5, "h")
    with pytest.raises(DimensionError):
        Quantity(1, "m").to("kg")
