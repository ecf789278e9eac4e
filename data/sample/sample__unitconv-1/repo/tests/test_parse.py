import pytest

from unitconv import Dimension, UnitError, UnknownUnitError, parse_unit
from unitconv.parse import split_prefix


def test_exact_symbol_wins_over_prefix():
    assert split_prefix("min")[1].name == "minute"
    assert split_prefix("mm") == ("m", split_prefix("m")[1])
    assert split_prefix("Pa")[1].name == "pascal"
    assert split_prefix("cd")[1].name == "candela"


def test_two_letter_prefix():
    prefix, unit = split_prefix("dam")
    assert prefix == "da"
    assert unit.symbol == "m"


@pytest.mark.parametrize("symbol", ["µm", "μm", "um"])
def test_micro_spellings(symbol):
    prefix, unit = split_prefix(symbol)
    assert unit.symbol == "m"
    assert parse_unit(symbol).factor == pytest.approx(1e-6)


def test_unprefixable_units():
    with pytest.raises(UnknownUnitError):
        split_prefix("kmin")
    with pytest.raises(UnknownUnitError):
        split_prefix("kft")


def test_dimension_of_compound():
    assert parse_unit("kg*m/s^2").dimension == Dimension.of(M=1, L=1, T=-2)
    assert parse_unit("J/kg/K").dimension == Dimension.of(L=2, T=-2, Th=-1)
    assert parse_unit("m·s^-1").dimension == parse_unit("m/s").dimension


def test_plain_factors():
    assert parse_unit("km").factor == 1000.0
    assert parse_unit("h").factor == 3600.0
    assert parse_unit("m^3").factor == 1.0
    assert parse_unit("L").factor == pytest.approx(1e-3)


def test_dimensionless_one():
    assert parse_unit("1/s").dimension == parse_unit("Hz").dimension


@pytest.mark.parametrize("bad", ["", "m^", "kg/", "^2"])
def test_malformed(bad):
    with pytest.raises(UnitError):
        parse_unit(bad)
