"""A confidence given to the Python API as an exact number (a Decimal, a Fraction) is refused
as that type, with how to give it: it is a number, and "not a number" would send its caller to
look for NaN. A string is still "not a number"."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import pytest

import calibcli
from calibcli.errors import InputError


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (Decimal("0.5"), "0.5 is a Decimal"),
        (Fraction(1, 3), "Fraction(1, 3) is a Fraction"),
    ],
)
def test_an_exact_number_is_named_by_its_type(value, shown):
    with pytest.raises(InputError) as found:
        calibcli.calibrate([0.2, value], [1, 0])
    assert str(found.value) == f"<arrays>: index 1: confidence {shown}: give it as a float"


def test_a_string_is_still_not_a_number():
    with pytest.raises(InputError) as found:
        calibcli.calibrate([0.2, "0.5"], [1, 0])
    assert str(found.value) == '<arrays>: index 1: confidence "0.5" is not a number'
