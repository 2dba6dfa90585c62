"""The four path-computation queries over a topology and its bookings.

`Availability` is a value: a topology plus the free bandwidth of each of its links over
time. It answers the USN queries (SYSTEM.md §2) between two nodes:

1. `fixed_slot`: a path for a bandwidth during a given slot, or None;
2. `earliest_start`: the earliest start for a bandwidth and duration, and its path;
3. `max_bandwidth`: the highest bandwidth any path has free throughout a slot;
4. `all_slots`: every start time at which the bandwidth fits for the duration.

A request books whole granules on each link it crosses (`Link.booked_mbps`), so the same
request may take a little more on a SONET link than on an Ethernet one. Nothing here
reads a clock or a database: times are arguments.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from longhaul.errors import InputError
from longhaul.schedule import graph as search
from longhaul.schedule.graph import Graph, Step
from longhaul.schedule.instants import (
    bandwidth,
    duration_us,
    from_us,
    span_us,
    to_us,
)
from longhaul.schedule.intervals import NEG_INF, IntervalSet
from longhaul.schedule.timeline import FreeTimeline
from longhaul.topology import Hop, Path, Topology


@dataclass(frozen=True)
class Booking:
    """`bandwidth_mbps` requested on one link during [start, end)."""

    link_id: str
    start: datetime
    end: datetime
    bandwidth_mbps: int


def bookings_along(
    path: Path, start: datetime, end: datetime, bandwidth_mbps: int
) -> list[Booking]:
    """The bookings a reservation over `path` makes, one per link."""
    return [Booking(link_id, start, end, bandwidth_mbps) for link_id in path.link_ids]


class EarliestStart(NamedTuple):
    start: datetime
    path: Path


class WidestPath(NamedTuple):
    bandwidth_mbps: int
    """0 when no path has any bandwidth free throughout the slot."""
    path: Path | None


@dataclass(frozen=True)
class Slots:
    """All feasible start times of a request, and a path for any of them."""

    starts: IntervalSet
    """Start instants in microseconds since the epoch; see `windows` for datetimes."""
    duration: timedelta
    bandwidth_mbps: int
    src: str
    dst: str
    availability: Availability = field(repr=False, compare=False)

    def windows(self) -> list[tuple[datetime, datetime]]:
        """(first start, last start) of each maximal run of feasible starts, both included."""
        return [(from_us(lo), from_us(hi - 1)) for lo, hi in self.starts]

    def __contains__(self, start: object) -> bool:
        return isinstance(start, datetime) and to_us(start, "start") in self.starts

    def path_at(self, start: datetime) -> Path:
        """A path that carries the request from `start` (fewest hops, then shortest)."""
        if start not in self:
            raise InputError("start", f"{start.isoformat()} is not among the feasible starts")
        path = self.availability.fixed_slot(
            self.src, self.dst, self.bandwidth_mbps, start, start + self.duration
        )
        assert path is not None, "a feasible start always has a path"
        return path


class Availability:
    """A topology with the free bandwidth of every link over time, given its bookings."""

    def __init__(self, topology: Topology, bookings: Iterable[Booking] = ()) -> None:
        self.topology = topology
        self._graph = Graph.of(topology)
        loads: defaultdict[int, list[tuple[int, int, int]]] = defaultdict(list)
        for k, booking in enumerate(bookings):
            link, start, end, mbps = self._load_of(booking, f"bookings[{k}]")
            loads[link].append((start, end, mbps))
        self._timelines = [
            FreeTimeline.build(lk.capacity_mbps, loads[k]) for k, lk in enumerate(self._graph.links)
        ]

    def with_bookings(self, bookings: Iterable[Booking]) -> Availability:
        """A new availability with `bookings` added; this one is unchanged."""
        return self._changed(bookings, sign=1)

    def without_bookings(self, bookings: Iterable[Booking]) -> Availability:
        """A new availability with `bookings` (made earlier) released."""
        return self._changed(bookings, sign=-1)

    # -- the four queries -----------------------------------------------------------

    def fixed_slot(
        self, src: str, dst: str, bandwidth_mbps: int, start: datetime, end: datetime
    ) -> Path | None:
        """Query 1: a path with `bandwidth_mbps` free throughout [start, end), or None.

        Of all such paths, the one with the fewest hops, and of those the shortest.
        """
        s, d = self._ends(src, dst)
        need = bandwidth(bandwidth_mbps)
        lo, hi = span_us(start, end, "start", "end")
        return self._fixed_slot(s, d, need, lo, hi)

    def earliest_start(
        self,
        src: str,
        dst: str,
        bandwidth_mbps: int,
        duration: timedelta,
        not_before: datetime,
    ) -> EarliestStart | None:
        """Query 2: the earliest start at or after `not_before`, with its path.

        None when no path could ever carry `bandwidth_mbps`.
        """
        s, d = self._ends(src, dst)
        need = bandwidth(bandwidth_mbps)
        dur = duration_us(duration)
        first = to_us(not_before, "not_before")
        start = self._earliest_us(s, d, need, dur, first)
        if start is None:
            return None
        path = self._fixed_slot(s, d, need, start, start + dur)
        assert path is not None, "the earliest start was found feasible"
        return EarliestStart(from_us(start), path)

    def max_bandwidth(self, src: str, dst: str, start: datetime, end: datetime) -> WidestPath:
        """Query 3: the highest bandwidth free throughout [start, end) on any one path.

        The path returned has the fewest hops, then is the shortest, among those that
        carry that bandwidth.
        """
        s, d = self._ends(src, dst)
        lo, hi = span_us(start, end, "start", "end")
        links, timelines = self._graph.links, self._timelines

        def width(link: int) -> int:
            return links[link].bookable_mbps(timelines[link].min_free(lo, hi))

        best = search.widest_width(self._graph, s, d, width)
        if best <= 0:
            return WidestPath(0, None)
        return WidestPath(best, self._fixed_slot(s, d, best, lo, hi))

    def all_slots(
        self,
        src: str,
        dst: str,
        bandwidth_mbps: int,
        duration: timedelta,
        window: tuple[datetime, datetime],
    ) -> Slots:
        """Query 4: every start t with [t, t + duration) inside `window` at which some path
        has `bandwidth_mbps` free throughout."""
        s, d = self._ends(src, dst)
        need = bandwidth(bandwidth_mbps)
        dur = duration_us(duration)
        if not isinstance(window, tuple) or len(window) != 2:
            raise InputError("window", "expected (start, end)")
        lo, hi = span_us(window[0], window[1], "window.start", "window.end")
        starts = self._slots_us(s, d, need, dur, lo, hi - dur + 1)
        return Slots(
            IntervalSet.from_flat(starts),
            duration,
            need,
            self._graph.node_ids[s],
            self._graph.node_ids[d],
            self,
        )

    # -- what the free bandwidth looks like -----------------------------------------

    def free_steps(
        self, link_id: str, start: datetime, end: datetime
    ) -> list[tuple[datetime, int]]:
        """(instant, free Mb/s) at `start` and wherever it changes before `end`."""
        link = self._link_index(link_id, "link_id")
        lo, hi = span_us(start, end, "start", "end")
        return [(from_us(t), free) for t, free in self._timelines[link].steps(lo, hi)]

    def min_free_mbps(self, link_id: str, start: datetime, end: datetime) -> int:
        link = self._link_index(link_id, "link_id")
        lo, hi = span_us(start, end, "start", "end")
        return self._timelines[link].min_free(lo, hi)

    @property
    def last_change(self) -> datetime | None:
        """The last instant at which any link's free bandwidth changes (None if none does)."""
        last = self._last_change_us()
        return None if last == NEG_INF else from_us(last)

    # -- inside ----------------------------------------------------------------------

    def _fixed_slot(self, s: int, d: int, need: int, lo: int, hi: int) -> Path | None:
        links, timelines = self._graph.links, self._timelines

        def usable(link: int) -> bool:
            return links[link].booked_mbps(need) <= timelines[link].min_free(lo, hi)

        steps = search.fewest_hops(self._graph, s, d, usable)
        return None if steps is None else self._path(steps)

    def _slots_us(self, s: int, d: int, need: int, dur: int, first: int, stop: int) -> list[int]:
        """Feasible starts in [first, stop)."""
        if stop <= first:
            return []
        links, timelines = self._graph.links, self._timelines
        window_end = stop + dur - 1

        def starts_on(link: int) -> list[int]:
            booked = links[link].booked_mbps(need)
            return timelines[link].free_starts(booked, first, window_end, dur)

        return search.reachable_starts(self._graph, s, d, [first, stop], starts_on)

    def _earliest_us(self, s: int, d: int, need: int, dur: int, first: int) -> int | None:
        links = self._graph.links

        def fits_when_idle(link: int) -> bool:
            return links[link].booked_mbps(need) <= links[link].capacity_mbps

        if search.fewest_hops(self._graph, s, d, fits_when_idle) is None:
            return None
        # After the last change every link is idle, so a start there is feasible; search
        # up to it in windows that double, so that an early answer is found cheaply.
        last = max(first, self._last_change_us())
        span = dur
        while first <= last:
            stop = min(first + span, last + 1)
            found = self._slots_us(s, d, need, dur, first, stop)
            if found:
                return found[0]
            first, span = stop, span * 2
        return None

    def _last_change_us(self) -> int:
        return max(t.times[-1] for t in self._timelines) if self._timelines else NEG_INF

    def _path(self, steps: list[Step]) -> Path:
        g = self._graph
        return Path(tuple(Hop(g.links[k], g.node_ids[a], g.node_ids[b]) for k, a, b in steps))

    def _ends(self, src: str, dst: str) -> tuple[int, int]:
        s = self._node_index(src, "src")
        d = self._node_index(dst, "dst")
        if s == d:
            raise InputError("dst", f"must differ from src (both are {self._graph.node_ids[s]!r})")
        return s, d

    def _node_index(self, name: Any, field_name: str) -> int:
        if not isinstance(name, str):
            raise InputError(field_name, f"expected a node or site name, got {name!r}")
        return self._graph.node_index[self.topology.resolve(name, field_name)]

    def _link_index(self, link_id: Any, field_name: str) -> int:
        index = self._graph.link_index.get(link_id) if isinstance(link_id, str) else None
        if index is None:
            raise InputError(
                field_name, f"no link named {link_id!r} in topology {self.topology.name!r}"
            )
        return index

    def _load_of(self, booking: Booking, where: str) -> tuple[int, int, int, int]:
        link = self._link_index(booking.link_id, f"{where}.link_id")
        start, end = span_us(booking.start, booking.end, f"{where}.start", f"{where}.end")
        mbps = bandwidth(booking.bandwidth_mbps, f"{where}.bandwidth_mbps")
        return link, start, end, self._graph.links[link].booked_mbps(mbps)

    def _changed(self, bookings: Iterable[Booking], sign: int) -> Availability:
        new = object.__new__(Availability)
        new.topology = self.topology
        new._graph = self._graph
        new._timelines = list(self._timelines)
        for k, booking in enumerate(bookings):
            link, start, end, mbps = self._load_of(booking, f"bookings[{k}]")
            new._timelines[link] = new._timelines[link].with_load(start, end, sign * mbps)
        return new
