"""Interval arithmetic: every result encloses the operation on members of the operands,
and published decimals become the intervals they stand for."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from longhaul.analysis.intervals import Interval, exact, mean, rounded

small = st.fractions(min_value=-1000, max_value=1000, max_denominator=1000)


@st.composite
def interval_with_member(draw: st.DrawFn) -> tuple[Interval, Fraction]:
    low, high = sorted((draw(small), draw(small)))
    share = draw(st.fractions(min_value=0, max_value=1, max_denominator=100))
    return Interval(low, high), low + share * (high - low)


@given(interval_with_member(), interval_with_member())
def test_arithmetic_encloses_every_result_of_members(left, right):
    (a, x), (b, y) = left, right
    assert (a + b).contains(x + y)
    assert (a - b).contains(x - y)
    assert (a * b).contains(x * y)
    if not b.contains(0):
        assert (a / b).contains(x / y)


@given(interval_with_member(), interval_with_member())
def test_sums_and_products_are_exact_at_the_endpoints(left, right):
    (a, _), (b, _) = left, right
    ends = [p * q for p in (a.low, a.high) for q in (b.low, b.high)]
    assert a * b == Interval(min(ends), max(ends))
    assert a + b == Interval(a.low + b.low, a.high + b.high)


def test_a_published_decimal_is_half_a_unit_either_side():
    assert rounded("6.69") == Interval(Fraction("6.685"), Fraction("6.695"))
    assert rounded("1400") == Interval(Fraction("1399.5"), Fraction("1400.5"))
    # "0.50" claims more than "0.5": the trailing zero is a digit.
    assert rounded("0.50").width == Fraction(1, 100)
    assert rounded("0.5").width == Fraction(1, 10)


def test_edges_are_decided_exactly():
    # 0.0165 as a float is just below 0.0165; as a decimal it is the edge itself.
    assert rounded("0.017").contains(exact("0.0165"))
    assert rounded("0.017").overlaps(Interval(exact("0.010"), exact("0.0165")))
    assert not rounded("0.017").overlaps(Interval(exact("0.010"), exact("0.01649")))


def test_mean_of_intervals_is_the_mean_of_the_ends():
    assert mean([rounded("7.48"), rounded("7.47")]) == Interval(Fraction("7.47"), Fraction("7.48"))


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="low ≤ high"):
        Interval(2, 1)
    with pytest.raises(ZeroDivisionError):
        Interval(1, 2) / Interval(-1, 1)
    with pytest.raises(ValueError, match="plain decimal"):
        rounded("1e3")
    with pytest.raises(ValueError, match="no intervals"):
        mean([])
