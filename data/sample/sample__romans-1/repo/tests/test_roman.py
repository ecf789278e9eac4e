import pytest

from romans import InvalidRomanNumeral, from_roman, is_roman, to_roman


@pytest.mark.parametrize(
    "number, numeral",
    [(1, "I"), (4, "IV"), (9, "IX"), (14, "XIV"), (40, "XL"), (90, "XC"), (400, "CD"),
     (944, "CMXLIV"), (1994, "MCMXCIV"), (2024, "MMXXIV"), (3999, "MMMCMXCIX")],
)
def test_known_values(number, numeral):
    assert to_roman(number) == numeral
    assert from_roman(numeral) == number


def test_round_trip_everything():
    for n in range(1, 4000):
        assert from_roman(to_roman(n)) == n


def test_lower_case_and_whitespace():
    assert from_roman(" mcmxciv ") == 1994


@pytest.mark.parametrize("bad", [0, -1, 4000])
def test_to_roman_out_of_range(bad):
    with pytest.raises(ValueError):
        to_roman(bad)


@pytest.mark.parametrize("bad", [1.0, "12", True])
def test_to_roman_type(bad):
    with pytest.raises(TypeError):
        to_roman(bad)


@pytest.mark.parametrize("bad", ["", "ABC", "X1", "MMMM", None])
def test_from_roman_rejects(bad):
    with pytest.raises(InvalidRomanNumeral):
        from_roman(bad)


def test_is_roman():
    assert is_roman("XLII")
    assert not is_roman("XLIIZ")
    assert not is_roman("")
