"""The free bandwidth of one link over time, as a step function of integer instants."""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterable

from longhaul.schedule.intervals import NEG_INF, POS_INF, Flat, erode


class FreeTimeline:
    """Capacity minus the load of the bookings active at each instant.

    `times[k]` is where segment k starts (`times[0]` is minus infinity) and `free[k]` the
    free bandwidth from there to the next breakpoint. A booking [start, end) is active at
    t when start <= t < end; two bookings that start at the same instant both count.
    Free bandwidth may go negative when a topology's capacity shrinks under old bookings;
    that only means nothing more fits.
    """

    __slots__ = ("capacity_mbps", "free", "times")

    def __init__(self, capacity_mbps: int, times: list[int], free: list[int]) -> None:
        self.capacity_mbps = capacity_mbps
        self.times = times
        self.free = free

    @classmethod
    def build(cls, capacity_mbps: int, loads: Iterable[tuple[int, int, int]]) -> FreeTimeline:
        """From (start, end, mbps) loads, each taking `mbps` during [start, end)."""
        delta: defaultdict[int, int] = defaultdict(int)
        for start, end, mbps in loads:
            delta[start] -= mbps
            delta[end] += mbps
        times, free = [NEG_INF], [capacity_mbps]
        level = capacity_mbps
        for t in sorted(delta):
            if delta[t] == 0:
                continue
            level += delta[t]
            times.append(t)
            free.append(level)
        return cls(capacity_mbps, times, free)

    def with_load(self, start: int, end: int, mbps: int) -> FreeTimeline:
        """A new timeline with `mbps` more taken during [start, end) (less, if negative)."""
        times, free = list(self.times), list(self.free)
        lo = _split(times, free, start)
        hi = _split(times, free, end)
        for k in range(lo, hi):
            free[k] -= mbps
        return FreeTimeline(self.capacity_mbps, times, free)

    def free_at(self, t: int) -> int:
        return self.free[bisect.bisect_right(self.times, t) - 1]

    def min_free(self, start: int, end: int) -> int:
        """The least free bandwidth at any instant of [start, end)."""
        times = self.times
        if len(times) == 1:
            return self.free[0]
        i = bisect.bisect_right(times, start) - 1
        j = bisect.bisect_left(times, end, i + 1)
        return min(self.free[i:j])

    def free_starts(self, need_mbps: int, lo: int, hi: int, duration: int) -> Flat:
        """The starts t with [t, t + duration) inside [lo, hi) and `need_mbps` free throughout."""
        times, free = self.times, self.free
        i = bisect.bisect_right(times, lo) - 1
        j = bisect.bisect_left(times, hi, i + 1)
        window = free[i:j]
        if min(window) >= need_mbps:
            runs = [lo, hi]
        elif max(window) < need_mbps:
            return []
        else:
            runs = []
            last = len(times) - 1
            for k in range(i, j):
                if free[k] < need_mbps:
                    continue
                seg_lo = times[k] if times[k] > lo else lo
                seg_hi = times[k + 1] if k < last else POS_INF
                seg_hi = min(seg_hi, hi)
                if runs and runs[-1] == seg_lo:
                    runs[-1] = seg_hi
                else:
                    runs.append(seg_lo)
                    runs.append(seg_hi)
        return erode(runs, duration)

    def steps(self, start: int, end: int) -> list[tuple[int, int]]:
        """(instant, free) where the free bandwidth changes within [start, end), from `start`."""
        times = self.times
        i = bisect.bisect_right(times, start) - 1
        j = bisect.bisect_left(times, end, i + 1)
        return [(max(times[k], start), self.free[k]) for k in range(i, j)]


def _split(times: list[int], free: list[int], t: int) -> int:
    """Make `t` a breakpoint (copying the free value of the segment it falls in); its index."""
    k = bisect.bisect_left(times, t)
    if k < len(times) and times[k] == t:
        return k
    times.insert(k, t)
    free.insert(k, free[k - 1])
    return k
