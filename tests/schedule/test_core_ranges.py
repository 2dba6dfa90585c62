"""The Rust core refuses numbers it does not hold with a typed error, before any
arithmetic: nothing near 2**63 wraps around on its way through."""

import pytest

from longhaul import _schedule as core

BIG = 2**63 - 1
"""The largest i64: a time, duration or bandwidth this size once wrapped in the core."""


def network() -> core.Network:
    # Two nodes, one 10 Gb/s link in 1 Mb/s steps.
    return core.Network(2, [(0, 1)], [100.0], [10_000], [1])


@pytest.mark.parametrize(
    ("call", "says"),
    [
        (lambda: core.erode([0, 10], BIG), "duration"),
        (lambda: core.contains([0, 10], BIG), "t must lie in"),
        (lambda: core.union([0, BIG], [1, 2]), "a bound"),
        (lambda: core.normalize([(0, BIG)]), "hi"),
        (lambda: core.FreeTimeline.build(BIG, []), "capacity_mbps"),
        (lambda: core.FreeTimeline.build(100, [(0, 10, BIG)]), "mbps"),
        (lambda: core.FreeTimeline.build(100, []).with_load(0, 10, -BIG), "mbps"),
        (lambda: core.FreeTimeline.build(100, []).free_starts(10, 0, 100, BIG), "duration"),
        (lambda: core.Network(2, [(0, 1)], [1.0], [BIG], [1]), "capacity_mbps"),
        (lambda: network().earliest(core.Way.between(0, 1), 10, BIG, 0), "duration"),
        (lambda: network().earliest(core.Way.between(0, 1), 10, 60, BIG), "first"),
        (lambda: network().slots(core.Way.between(0, 1), 10, 60, 0, BIG), "stop"),
        (lambda: network().fixed_slot(core.Way.between(0, 1), BIG, 0, 10), "need"),
        (lambda: network().with_bookings([(0, 0, BIG, 10)]), "end"),
    ],
)
def test_numbers_near_two_to_the_63_are_refused_not_wrapped(call, says):
    with pytest.raises(core.RangeError, match=says):
        call()


def test_the_range_error_is_a_value_error_and_the_bounds_still_work():
    assert issubclass(core.RangeError, ValueError)
    assert core.contains([core.NEG_INF, core.POS_INF], core.POS_INF - 1)
    assert core.erode([0, core.POS_INF], core.POS_INF) == [0, core.POS_INF]
    assert network().earliest(core.Way.between(0, 1), core.MAX_MBPS, 60, 0) is None
    with pytest.raises(OverflowError):  # past i64 altogether: PyO3's own refusal
        core.contains([0, 10], 2**64)
