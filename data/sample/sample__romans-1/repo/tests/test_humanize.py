from decimal import Decimal

import pytest

from romans import apnumber, intcomma, intword, ordinal


@pytest.mark.parametrize(
    "n, expected",
    [(1, "1st"), (2, "2nd"), (3, "3rd"), (4, "4th"), (11, "11th"), (12, "12th"), (13, "13th"),
     (21, "21st"), (22, "22nd"), (101, "101st"), (111, "111th"), (112, "112th"), (0, "0th"), (-1, "-1st")],
)
def test_ordinal(n, expected):
    assert ordinal(n) == expected


def test_intcomma():
    assert intcomma(1234567) == "1,234,567"
    assert intcomma(-1234) == "-1,234"
    assert intcomma(999) == "999"
    assert intcomma(Decimal("1234.50")) == "1,234.50"
    assert intcomma(1000000, sep=".") == "1.000.000"


def test_intword():
    assert intword(1_200_000) == "1.2 million"
    assert intword(2_000_000) == "2 million"
    assert intword(3_450_000_000, precision=2) == "3.45 billion"
    assert intword(999_999) == "999,999"
    assert intword(1_250_000) == "1.3 million"


def test_apnumber():
    assert apnumber(0) == "zero"
    assert apnumber(7) == "seven"
    assert apnumber(10) == "10"
