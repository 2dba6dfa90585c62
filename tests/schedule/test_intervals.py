"""Interval sets: the semiring laws, and membership against plain sets of integers."""

from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from longhaul.schedule import NEG_INF, POS_INF, IntervalSet

UNIVERSE = range(-5, 45)

pairs = st.lists(st.tuples(st.integers(0, 40), st.integers(0, 40)), max_size=6)
sets = pairs.map(IntervalSet)
durations = st.integers(1, 12)


def members(s: IntervalSet) -> set[int]:
    return {t for t in UNIVERSE if t in s}


@given(pairs)
def test_normal_form_is_sorted_disjoint_and_merges_adjacent(raw):
    bounds = IntervalSet(raw).bounds
    assert all(a < b for a, b in pairwise(bounds))
    covered = {t for lo, hi in raw for t in range(lo, hi)}
    assert members(IntervalSet(raw)) == covered


def test_adjacent_intervals_merge():
    assert IntervalSet([(0, 5), (5, 9)]) == IntervalSet([(0, 9)])
    assert len(IntervalSet([(0, 5), (6, 9)])) == 2


@given(sets, sets)
def test_union_and_intersection_match_sets(a, b):
    assert members(a | b) == members(a) | members(b)
    assert members(a & b) == members(a) & members(b)
    assert members(a - b) == members(a) - members(b)


@given(sets, sets)
def test_commutative(a, b):
    assert a | b == b | a
    assert a & b == b & a


@given(sets, sets, sets)
def test_associative_and_distributive(a, b, c):
    assert (a | b) | c == a | (b | c)
    assert (a & b) & c == a & (b & c)
    assert a & (b | c) == (a & b) | (a & c)
    assert a | (b & c) == (a | b) & (a | c)


@given(sets)
def test_identities_and_idempotence(a):
    zero, one = IntervalSet.empty(), IntervalSet.line()
    assert a | zero == a
    assert a & one == a
    assert a & zero == zero
    assert a | one == one
    assert a | a == a
    assert a & a == a


@given(sets, sets)
def test_absorption_and_de_morgan(a, b):
    assert a | (a & b) == a
    assert a & (a | b) == a
    assert ~(a | b) == ~a & ~b
    assert ~~a == a
    assert a - b == a & ~b


@given(sets, durations)
def test_erosion_keeps_starts_that_fit(a, d):
    eroded = a.erode(d)
    for t in UNIVERSE:
        fits = all(t + k in a for k in range(d))
        assert (t in eroded) == fits, (t, d)


@given(sets, sets, durations)
def test_erosion_distributes_over_intersection(a, b, d):
    assert (a & b).erode(d) == a.erode(d) & b.erode(d)


@given(sets, durations, durations)
def test_erosion_composes(a, d1, d2):
    assert a.erode(d1).erode(d2) == a.erode(d1 + d2 - 1)


def test_unbounded_ends_stay_unbounded():
    assert IntervalSet([(NEG_INF, 10)]).erode(4) == IntervalSet([(NEG_INF, 7)])
    assert IntervalSet([(3, POS_INF)]).erode(4) == IntervalSet([(3, POS_INF)])
    assert IntervalSet.line().erode(1000) == IntervalSet.line()


def test_erosion_by_one_is_identity_and_longer_than_interval_empties():
    five = IntervalSet([(0, 5)])
    assert five.erode(1) == five
    assert five.erode(5) == IntervalSet([(0, 1)])
    assert not five.erode(6)


def test_erosion_by_less_than_one_is_refused():
    with pytest.raises(ValueError, match=r"duration must lie in \[1, "):
        IntervalSet([(0, 5)]).erode(0)


def test_first_last_and_measure():
    s = IntervalSet([(10, 20), (30, 35)])
    assert (s.first, s.last, s.measure()) == (10, 34, 15)
    assert 34 in s and 35 not in s
    assert not IntervalSet([(5, 5), (3, 1)])
