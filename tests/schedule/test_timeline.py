"""Free bandwidth per link against a brute-force sum over bookings at each instant."""

from hypothesis import given
from hypothesis import strategies as st

from longhaul.schedule import FreeTimeline, IntervalSet

CAPACITY = 10
loads = st.lists(
    st.tuples(st.integers(0, 30), st.integers(1, 15), st.integers(1, 6)).map(
        lambda x: (x[0], x[0] + x[1], x[2])
    ),
    max_size=8,
)


def free_at(load_list, t):
    return CAPACITY - sum(m for s, e, m in load_list if s <= t < e)


@given(loads)
def test_free_bandwidth_is_capacity_minus_concurrent_load(load_list):
    timeline = FreeTimeline.build(CAPACITY, load_list)
    for t in range(-2, 50):
        assert timeline.free_at(t) == free_at(load_list, t)


@given(loads, st.integers(-2, 45), st.integers(1, 20))
def test_min_free_over_a_span(load_list, start, length):
    timeline = FreeTimeline.build(CAPACITY, load_list)
    expected = min(free_at(load_list, t) for t in range(start, start + length))
    assert timeline.min_free(start, start + length) == expected


@given(loads, st.integers(0, 12), st.integers(-2, 30), st.integers(1, 30), st.integers(1, 10))
def test_free_starts_fit_the_whole_duration(load_list, need, lo, width, dur):
    timeline = FreeTimeline.build(CAPACITY, load_list)
    hi = lo + width
    got = IntervalSet.from_flat(timeline.free_starts(need, lo, hi, dur))
    for t in range(lo - 3, hi + 3):
        fits = lo <= t and t + dur <= hi
        fits = fits and all(free_at(load_list, u) >= need for u in range(t, t + dur))
        assert (t in got) == fits, t


@given(loads, loads)
def test_adding_loads_one_by_one_equals_building_at_once(first, second):
    timeline = FreeTimeline.build(CAPACITY, first)
    for s, e, m in second:
        timeline = timeline.with_load(s, e, m)
    together = FreeTimeline.build(CAPACITY, first + second)
    for t in range(-2, 50):
        assert timeline.free_at(t) == together.free_at(t)


@given(loads)
def test_releasing_every_load_restores_capacity(load_list):
    timeline = FreeTimeline.build(CAPACITY, load_list)
    for s, e, m in load_list:
        timeline = timeline.with_load(s, e, -m)
    assert all(timeline.free_at(t) == CAPACITY for t in range(-2, 50))


def test_two_equal_bookings_starting_at_the_same_instant_count_twice():
    timeline = FreeTimeline.build(CAPACITY, [(5, 10, 4), (5, 10, 4)])
    assert timeline.free_at(5) == CAPACITY - 8
    assert timeline.min_free(0, 20) == CAPACITY - 8
    added = FreeTimeline.build(CAPACITY, [(5, 10, 4)]).with_load(5, 10, 4)
    assert added.free_at(7) == CAPACITY - 8


def test_a_booking_ending_where_another_starts_does_not_overlap_it():
    timeline = FreeTimeline.build(CAPACITY, [(0, 5, 6), (5, 10, 6)])
    assert timeline.min_free(0, 10) == CAPACITY - 6


def test_steps_start_at_the_span_start():
    timeline = FreeTimeline.build(CAPACITY, [(5, 10, 4)])
    assert timeline.steps(0, 20) == [(0, 10), (5, 6), (10, 10)]
    assert timeline.steps(6, 8) == [(6, 6)]
