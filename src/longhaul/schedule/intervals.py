"""Sets of integer instants as sorted, disjoint, half-open intervals.

These are the elements of the closed semiring of SYSTEM.md §2: union is ⊕, intersection
is ⊗, the empty set is 0̄ and the whole line 1̄. Time is an integer (longhaul uses
microseconds since the Unix epoch), so the set of start times of a reservation that
fits a free interval [l, h) is again half-open: [l, h - duration + 1).

A set is stored flat, as boundaries (l0, h0, l1, h1, ...) with l0 < h0 < l1 < h1 ...;
adjacent intervals are merged, so equal sets have equal boundaries. The module-level
functions work on such flat sequences and are what the path searches call in their
inner loops; `IntervalSet` wraps them for everyone else.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator, Sequence

NEG_INF = -(2**62)
"""Stands for minus infinity; every real instant is greater."""
POS_INF = 2**62
"""Stands for plus infinity; every real instant is smaller."""

Flat = list[int]


def union(a: Sequence[int], b: Sequence[int]) -> Flat:
    """a ⊕ b."""
    if not a:
        return list(b)
    if not b:
        return list(a)
    out: Flat = []
    i = j = 0
    na, nb = len(a), len(b)
    while i < na or j < nb:
        if j >= nb or (i < na and a[i] <= b[j]):
            lo, hi = a[i], a[i + 1]
            i += 2
        else:
            lo, hi = b[j], b[j + 1]
            j += 2
        if out and lo <= out[-1]:
            out[-1] = max(out[-1], hi)
        else:
            out.append(lo)
            out.append(hi)
    return out


def intersect(a: Sequence[int], b: Sequence[int]) -> Flat:
    """a ⊗ b."""
    out: Flat = []
    i = j = 0
    na, nb = len(a), len(b)
    while i < na and j < nb:
        a_hi, b_hi = a[i + 1], b[j + 1]
        lo = a[i] if a[i] > b[j] else b[j]
        hi = a_hi if a_hi < b_hi else b_hi
        if lo < hi:
            out.append(lo)
            out.append(hi)
        if a_hi < b_hi:
            i += 2
        else:
            j += 2
    return out


def complement(a: Sequence[int]) -> Flat:
    """Every instant not in a."""
    bounds = [NEG_INF, *a, POS_INF]
    out: Flat = []
    for k in range(0, len(bounds), 2):
        if bounds[k] < bounds[k + 1]:
            out.append(bounds[k])
            out.append(bounds[k + 1])
    return out


def difference(a: Sequence[int], b: Sequence[int]) -> Flat:
    """The instants of a that are not in b."""
    if not a or not b:
        return list(a)
    return intersect(a, complement(b))


def erode(a: Sequence[int], duration: int) -> Flat:
    """The instants t with [t, t + duration) inside a: the start times that fit.

    An unbounded end stays unbounded.
    """
    if duration < 1:
        raise ValueError(f"duration must be at least 1, got {duration}")
    out: Flat = []
    for k in range(0, len(a), 2):
        lo, hi = a[k], a[k + 1]
        if hi != POS_INF:
            hi = hi - duration + 1
        if lo < hi:
            out.append(lo)
            out.append(hi)
    return out


def contains(a: Sequence[int], t: int) -> bool:
    return bisect.bisect_right(a, t) % 2 == 1


def normalize(pairs: Iterable[tuple[int, int]]) -> Flat:
    """The flat set covering the given (lo, hi) pairs, in any order, empty ones dropped."""
    out: Flat = []
    for lo, hi in sorted(p for p in pairs if p[0] < p[1]):
        if out and lo <= out[-1]:
            out[-1] = max(out[-1], hi)
        else:
            out.append(lo)
            out.append(hi)
    return out


class IntervalSet:
    """An immutable set of integer instants: sorted, disjoint, half-open intervals."""

    __slots__ = ("_bounds",)

    def __init__(self, pairs: Iterable[tuple[int, int]] = ()) -> None:
        self._bounds: tuple[int, ...] = tuple(normalize(pairs))

    @classmethod
    def from_flat(cls, bounds: Sequence[int]) -> IntervalSet:
        """Wrap boundaries that are already normalized (as the functions above return)."""
        result = cls.__new__(cls)
        result._bounds = tuple(bounds)
        return result

    @classmethod
    def line(cls) -> IntervalSet:
        """1̄: every instant."""
        return cls.from_flat((NEG_INF, POS_INF))

    @classmethod
    def empty(cls) -> IntervalSet:
        """0̄: no instant."""
        return cls.from_flat(())

    @property
    def bounds(self) -> tuple[int, ...]:
        return self._bounds

    def __or__(self, other: IntervalSet) -> IntervalSet:
        return IntervalSet.from_flat(union(self._bounds, other._bounds))

    def __and__(self, other: IntervalSet) -> IntervalSet:
        return IntervalSet.from_flat(intersect(self._bounds, other._bounds))

    def __sub__(self, other: IntervalSet) -> IntervalSet:
        return IntervalSet.from_flat(difference(self._bounds, other._bounds))

    def __invert__(self) -> IntervalSet:
        return IntervalSet.from_flat(complement(self._bounds))

    def erode(self, duration: int) -> IntervalSet:
        return IntervalSet.from_flat(erode(self._bounds, duration))

    def __contains__(self, t: object) -> bool:
        return isinstance(t, int) and contains(self._bounds, t)

    def __iter__(self) -> Iterator[tuple[int, int]]:
        b = self._bounds
        return ((b[k], b[k + 1]) for k in range(0, len(b), 2))

    def __len__(self) -> int:
        return len(self._bounds) // 2

    def __bool__(self) -> bool:
        return bool(self._bounds)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, IntervalSet) and self._bounds == other._bounds

    def __hash__(self) -> int:
        return hash(self._bounds)

    def __repr__(self) -> str:
        def show(t: int) -> str:
            return "-inf" if t == NEG_INF else "+inf" if t == POS_INF else str(t)

        return "IntervalSet(" + ", ".join(f"[{show(lo)}, {show(hi)})" for lo, hi in self) + ")"

    @property
    def first(self) -> int:
        """The smallest instant; raises ValueError when empty."""
        if not self._bounds:
            raise ValueError("an empty set has no first instant")
        return self._bounds[0]

    @property
    def last(self) -> int:
        """The largest instant; raises ValueError when empty."""
        if not self._bounds:
            raise ValueError("an empty set has no last instant")
        return self._bounds[-1] - 1

    def measure(self) -> int:
        """How many instants; unbounded sets count to the sentinels."""
        b = self._bounds
        return sum(b[k + 1] - b[k] for k in range(0, len(b), 2))
