"""Sets of integer instants as sorted, disjoint, half-open intervals.

These are the elements of the closed semiring of USN's path computation (Sahni, Rao,
Ranka et al., ICN 2007): union is ⊕, intersection is ⊗, the empty set is 0̄ and the
whole line 1̄. Time is an integer (longhaul uses microseconds since the Unix epoch), so
the set of start times of a reservation that fits a free interval [l, h) is again
half-open: [l, h - duration + 1).

A set is stored flat, as boundaries (l0, h0, l1, h1, ...) with l0 < h0 < l1 < h1 ...;
adjacent intervals are merged, so equal sets have equal boundaries. The algebra itself
is the Rust core's (crates/schedule/src/intervals.rs); this class makes it a Python value.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from longhaul import _schedule as core
from longhaul._schedule import NEG_INF, POS_INF

__all__ = ["NEG_INF", "POS_INF", "IntervalSet"]


class IntervalSet:
    """An immutable set of integer instants: sorted, disjoint, half-open intervals."""

    __slots__ = ("_bounds",)

    def __init__(self, pairs: Iterable[tuple[int, int]] = ()) -> None:
        self._bounds: tuple[int, ...] = tuple(core.normalize(list(pairs)))

    @classmethod
    def from_flat(cls, bounds: Sequence[int]) -> IntervalSet:
        """Wrap boundaries that are already in normal form, as the core returns them."""
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
        return IntervalSet.from_flat(core.union(self._bounds, other._bounds))

    def __and__(self, other: IntervalSet) -> IntervalSet:
        return IntervalSet.from_flat(core.intersect(self._bounds, other._bounds))

    def __sub__(self, other: IntervalSet) -> IntervalSet:
        return IntervalSet.from_flat(core.difference(self._bounds, other._bounds))

    def __invert__(self) -> IntervalSet:
        return IntervalSet.from_flat(core.complement(self._bounds))

    def erode(self, duration: int) -> IntervalSet:
        return IntervalSet.from_flat(core.erode(self._bounds, duration))

    def __contains__(self, t: object) -> bool:
        return isinstance(t, int) and core.contains(self._bounds, t)

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
