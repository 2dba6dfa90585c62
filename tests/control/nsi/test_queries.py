"""The four queries across domains, combined from each domain's answers."""

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from longhaul.control.errors import ConflictError
from longhaul.control.nsi import queries

T = datetime(2030, 1, 7, tzinfo=UTC)
H = timedelta(hours=1)


@dataclass
class Calendar:
    """A domain whose segment is free only during `free` (whole runs of instants)."""

    network: str
    free: list[tuple[datetime, datetime]]
    capacity: int = 1000
    src: str = "a"
    dst: str = "b"
    asked: list[datetime] = field(default_factory=list)

    def fixed_slot(self, mbps, start, end):
        return mbps <= self.capacity and any(lo <= start and end <= hi for lo, hi in self.free)

    def earliest_start(self, mbps, duration, not_before):
        self.asked.append(not_before)
        if mbps > self.capacity:
            return None
        for lo, hi in self.free:
            start = max(lo, not_before)
            if start + duration <= hi:
                return start
        return None

    def max_bandwidth(self, start, end):
        return self.capacity if self.fixed_slot(0, start, end) else 0

    def all_slots(self, mbps, duration, window_start, window_end):
        runs = []
        for lo, hi in self.free:
            first, last = max(lo, window_start), min(hi, window_end) - duration
            if first <= last:
                runs.append((first, last))
        return runs


def test_the_earliest_start_all_allow_is_found_by_moving_to_the_latest():
    a = Calendar("a", [(T, T + 2 * H), (T + 5 * H, T + 9 * H)])
    b = Calendar("b", [(T + H, T + 3 * H), (T + 6 * H, T + 20 * H)])
    assert queries.earliest_start([a, b], 100, H, T) == T + H
    assert queries.earliest_start([a, b], 100, 2 * H, T) == T + 6 * H
    assert a.asked[-1] == T + 6 * H  # asked again from the candidate until both agree


def test_one_domain_that_never_can_means_never():
    a, b = Calendar("a", [(T, T + 9 * H)]), Calendar("b", [(T, T + 9 * H)], capacity=10)
    assert queries.earliest_start([a, b], 100, H, T) is None
    assert queries.max_bandwidth([a, b], T, T + H) == 10
    assert not queries.fixed_slot([a, b], 100, T, T + H)
    assert queries.fixed_slot([a, b], 10, T, T + H)


def test_calendars_that_never_meet_are_refused_after_the_rounds():
    class Leapfrog(Calendar):
        def earliest_start(self, mbps, duration, not_before):
            return not_before + (H if self.network == "a" else 2 * H)

    with pytest.raises(ConflictError, match="rounds"):
        queries.earliest_start([Leapfrog("a", []), Leapfrog("b", [])], 1, H, T)


def test_all_slots_are_the_starts_every_domain_allows():
    a = Calendar("a", [(T, T + 4 * H), (T + 6 * H, T + 10 * H)])
    b = Calendar("b", [(T + 2 * H, T + 8 * H)])
    assert queries.all_slots([a, b], 100, H, T, T + 12 * H) == [
        (T + 2 * H, T + 3 * H), (T + 6 * H, T + 7 * H),
    ]  # fmt: skip


runs = st.lists(st.tuples(st.integers(0, 50), st.integers(0, 10)), max_size=6).map(
    lambda xs: sorted({(lo, lo + span) for lo, span in xs})
)


def _disjoint(rs):
    merged = []
    for lo, hi in rs:
        if merged and lo <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(hi, merged[-1][1]))
        else:
            merged.append((lo, hi))
    return merged


@given(a=runs, b=runs)
def test_intersect_is_the_starts_in_both(a, b):
    a, b = _disjoint(a), _disjoint(b)
    both = queries.intersect(a, b)
    inside = lambda rs, t: any(lo <= t <= hi for lo, hi in rs)  # noqa: E731
    for t in range(-1, 65):
        assert inside(both, t) == (inside(a, t) and inside(b, t))
