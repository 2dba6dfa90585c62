"""Closed intervals of reals, for checking figures that were published rounded.

A published 6.69 is any true value in [6.685, 6.695]: half a unit in its last digit
either side. A figure derived from rounded inputs is then an interval too, and a
published derived figure agrees with its inputs when its own interval overlaps the
interval recomputed from theirs.

Endpoints are exact rationals (`Fraction`), so that a check on the edge of an interval
is decided by the numbers and not by binary floating point: 0.0165 is exactly 0.0165.
A float operand means its exact binary value; to mean a decimal, parse its text.

Arithmetic gives an enclosure of every result of the operation on members of the
operands. It is the exact range when each uncertain input appears once in an
expression, or when every appearance pushes the result the same way; otherwise (x − x,
say) it is wider than the true range, never narrower.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction

Exact = int | float | Fraction
"""A number taken as exact: an interval of width 0."""

_DECIMAL = re.compile(r"[+-]?\d+(?:\.(\d+))?")


@dataclass(frozen=True)
class Interval:
    """The closed interval [low, high] of real numbers (low ≤ high)."""

    low: Fraction
    high: Fraction

    def __post_init__(self) -> None:
        # Accept ints and floats for the endpoints but keep them exact from here on.
        object.__setattr__(self, "low", Fraction(self.low))
        object.__setattr__(self, "high", Fraction(self.high))
        if self.low > self.high:
            raise ValueError(f"an interval needs low ≤ high, got [{self.low}, {self.high}]")

    @classmethod
    def point(cls, value: Exact) -> Interval:
        """The interval holding only `value`."""
        return cls(Fraction(value), Fraction(value))

    @property
    def width(self) -> Fraction:
        return self.high - self.low

    @property
    def midpoint(self) -> Fraction:
        return (self.low + self.high) / 2

    def contains(self, value: Exact | Interval) -> bool:
        """Whether `value` (a number, or every member of an interval) lies inside."""
        other = _as_interval(value)
        return self.low <= other.low and other.high <= self.high

    def overlaps(self, other: Interval) -> bool:
        """Whether the two intervals share at least one number (touching counts)."""
        return self.low <= other.high and other.low <= self.high

    def as_floats(self) -> tuple[float, float]:
        """The endpoints as floats, for JSON and printing."""
        return float(self.low), float(self.high)

    def __str__(self) -> str:
        low, high = self.as_floats()
        return f"[{low:.6g}, {high:.6g}]"

    def __neg__(self) -> Interval:
        return Interval(-self.high, -self.low)

    def __add__(self, other: Interval | Exact) -> Interval:
        right = _as_interval(other)
        return Interval(self.low + right.low, self.high + right.high)

    def __radd__(self, other: Exact) -> Interval:
        return self + other

    def __sub__(self, other: Interval | Exact) -> Interval:
        right = _as_interval(other)
        return Interval(self.low - right.high, self.high - right.low)

    def __rsub__(self, other: Exact) -> Interval:
        return Interval.point(other) - self

    def __mul__(self, other: Interval | Exact) -> Interval:
        right = _as_interval(other)
        # Signs may differ, so any endpoint product can be the least or the greatest.
        products = [a * b for a in (self.low, self.high) for b in (right.low, right.high)]
        return Interval(min(products), max(products))

    def __rmul__(self, other: Exact) -> Interval:
        return self * other

    def __truediv__(self, other: Interval | Exact) -> Interval:
        right = _as_interval(other)
        if right.contains(0):
            raise ZeroDivisionError(f"division by an interval holding 0: {right}")
        return self * Interval(1 / right.high, 1 / right.low)

    def __rtruediv__(self, other: Exact) -> Interval:
        return Interval.point(other) / self


def rounded(text: str) -> Interval:
    """The interval of true values a published decimal stands for: half a unit in its
    last digit either side ("6.69" → [6.685, 6.695], "1400" → [1399.5, 1400.5]).

    Text, not a float: "0.50" and "0.5" are different claims, and only the text says
    which one was published.
    """
    stripped = text.strip()
    match = _DECIMAL.fullmatch(stripped)
    if match is None:
        raise ValueError(f"not a plain decimal number: {text!r}")
    decimals = len(match.group(1) or "")
    half_unit = Fraction(1, 2 * 10**decimals)
    value = Fraction(stripped)
    return Interval(value - half_unit, value + half_unit)


def exact(text: str) -> Fraction:
    """A decimal given as text, as the exact number it spells ("0.2" → 1/5)."""
    stripped = text.strip()
    if _DECIMAL.fullmatch(stripped) is None:
        raise ValueError(f"not a plain decimal number: {text!r}")
    return Fraction(stripped)


def mean(intervals: Iterable[Interval]) -> Interval:
    """The interval of means of one member from each interval."""
    items = list(intervals)
    if not items:
        raise ValueError("the mean of no intervals is undefined")
    total = sum(items[1:], items[0])
    return total / len(items)


def _as_interval(value: Interval | Exact) -> Interval:
    return value if isinstance(value, Interval) else Interval.point(value)
