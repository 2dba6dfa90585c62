"""The four path-computation queries over a topology and its bookings.

`Availability` is a value: a topology plus the free bandwidth of each of its links over
time. It answers the USN queries (Sahni, Rao, Ranka et al., ICN 2007) between two nodes:

1. `fixed_slot`: a path for a bandwidth during a given slot, or None;
2. `earliest_start`: the earliest start for a bandwidth and duration, and its path;
3. `max_bandwidth`: the highest bandwidth any path has free throughout a slot;
4. `all_slots`: every start time at which the bandwidth fits for the duration.

Ends are nodes (`ornl-e300`), sites (`ORNL`, meaning the site's gateway node) or ports
(`ornl-e300:1/0`). A port with a link behind it (a host's NIC, say) puts that link on the
path, so its capacity is checked too. Every query may be given a `route`, link ids to
walk from one end to the other (a loop-back, for instance), instead of searching.

A request books whole granules on each link it crosses (`Link.booked_mbps`), so the same
request may take a little more on a SONET link than on an Ethernet one; a route that
crosses a link twice takes it twice. Nothing here reads a clock or a database: times
are arguments.

The searches run in the Rust core (crates/schedule): this module checks and converts
what users give (names, datetimes) and turns the answers back into paths and datetimes.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from longhaul import _schedule as core
from longhaul.errors import InputError
from longhaul.schedule.instants import (
    bandwidth,
    duration_us,
    from_us,
    span_us,
    to_us,
)
from longhaul.schedule.intervals import IntervalSet
from longhaul.topology import Hop, Link, Path, Topology


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


def larger_of(a: Sequence[Booking], b: Sequence[Booking]) -> tuple[Booking, ...]:
    """Bookings that take, on every link at every instant, the larger of what `a` and `b`
    take there: what a reservation holds while it may become either version (a change
    held, to be committed or aborted), so that both stay possible and no more is held."""
    links = sorted({x.link_id for x in (*a, *b)})
    larger: list[Booking] = []
    for link in links:
        here_a = [x for x in a if x.link_id == link]
        here_b = [x for x in b if x.link_id == link]
        instants = sorted({t for x in (*here_a, *here_b) for t in (x.start, x.end)})
        for lo, hi in itertools.pairwise(instants):
            take = max(_load(here_a, lo), _load(here_b, lo))
            if take <= 0:
                continue
            last = larger[-1] if larger else None
            if last is not None and (last.link_id, last.end, last.bandwidth_mbps) == (
                link,
                lo,
                take,
            ):
                larger[-1] = Booking(link, last.start, hi, take)
            else:
                larger.append(Booking(link, lo, hi, take))
    return tuple(larger)


def _load(bookings: Sequence[Booking], at: datetime) -> int:
    return sum(x.bandwidth_mbps for x in bookings if x.start <= at < x.end)


@dataclass(frozen=True)
class End:
    """One end of a request: a node, the port named on it, and the link behind that port."""

    node: str
    port: str | None = None
    link: Link | None = None
    """The link attached to the port, if any; a path to or from this end crosses it."""

    def __str__(self) -> str:
        return self.node if self.port is None else f"{self.node}:{self.port}"


class EarliestStart(NamedTuple):
    start: datetime
    path: Path


class Request(NamedTuple):
    """A reservation asked for: `bandwidth_mbps` from `src` to `dst` for `duration` from `start`."""

    src: str
    dst: str
    bandwidth_mbps: int
    start: datetime
    duration: timedelta


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
    route: tuple[str, ...] | None
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
            self.src, self.dst, self.bandwidth_mbps, start, start + self.duration, self.route
        )
        assert path is not None, "a feasible start always has a path"
        return path


class Availability:
    """A topology with the free bandwidth of every link over time, given its bookings."""

    def __init__(self, topology: Topology, bookings: Iterable[Booking] = ()) -> None:
        self.topology = topology
        self._index = _Index.of(topology)
        links = self._index.links
        idle = core.Network(
            len(self._index.node_ids),
            [self._index.ends(link) for link in links],
            [link.length_miles for link in links],
            [link.capacity_mbps for link in links],
            [link.granularity_mbps for link in links],
        )
        self._net = idle.with_bookings(self._loads(bookings))

    def with_bookings(self, bookings: Iterable[Booking]) -> Availability:
        """A new availability with `bookings` added; this one is unchanged."""
        return self._changed(self._net.with_bookings(self._loads(bookings)))

    def without_bookings(self, bookings: Iterable[Booking]) -> Availability:
        """A new availability with `bookings` (made earlier) released."""
        return self._changed(self._net.with_bookings(self._loads(bookings), release=True))

    def with_admitted(
        self, requests: Iterable[Request], patience: timedelta | None = None
    ) -> tuple[Availability, list[EarliestStart | None]]:
        """Book each request in turn as the control plane admits one: on a path with room
        from its start, else from its earliest start after it (`earliest_start`, then
        `fixed_slot` there) if that is within `patience` of the start asked (any, when
        None). Returns the new availability and, per request, the start and path booked,
        or None when there was none. One call into the core for them all, so that a
        calendar of a million bookings can be built."""
        if patience is not None and (not isinstance(patience, timedelta) or patience < timedelta()):
            raise InputError("patience", f"expected a duration of 0 or more, got {patience!r}")
        asked = []
        for k, request in enumerate(requests):
            where = f"requests[{k}]"
            way = self._way(request.src, request.dst, None)
            need = bandwidth(request.bandwidth_mbps, f"{where}.bandwidth_mbps")
            start = to_us(request.start, f"{where}.start")
            latest = core.POS_INF if patience is None else to_us(request.start + patience, where)
            asked.append(
                (way, need, duration_us(request.duration, f"{where}.duration"), start, latest)
            )
        net, admitted = self._net.with_admitted(asked)
        answers: list[EarliestStart | None] = []
        for found in admitted:
            if found is None:
                answers.append(None)
                continue
            start, steps = found
            path = self._path(steps)
            assert path is not None
            answers.append(EarliestStart(from_us(start), path))
        return self._changed(net), answers

    # -- the four queries -----------------------------------------------------------

    def fixed_slot(
        self,
        src: str,
        dst: str,
        bandwidth_mbps: int,
        start: datetime,
        end: datetime,
        route: Sequence[str] | None = None,
    ) -> Path | None:
        """Query 1: a path with `bandwidth_mbps` free throughout [start, end), or None.

        Of all such paths, the one with the fewest hops, and of those the shortest.
        """
        way = self._way(src, dst, route)
        need = bandwidth(bandwidth_mbps)
        lo, hi = span_us(start, end, "start", "end")
        return self._path(self._net.fixed_slot(way, need, lo, hi))

    def earliest_start(
        self,
        src: str,
        dst: str,
        bandwidth_mbps: int,
        duration: timedelta,
        not_before: datetime,
        route: Sequence[str] | None = None,
    ) -> EarliestStart | None:
        """Query 2: the earliest start at or after `not_before`, with its path.

        None when no path could ever carry `bandwidth_mbps`.
        """
        way = self._way(src, dst, route)
        need = bandwidth(bandwidth_mbps)
        dur = duration_us(duration)
        first = to_us(not_before, "not_before")
        start = self._net.earliest(way, need, dur, first)
        if start is None:
            return None
        path = self._path(self._net.fixed_slot(way, need, start, start + dur))
        assert path is not None, "the earliest start was found feasible"
        return EarliestStart(from_us(start), path)

    def max_bandwidth(
        self,
        src: str,
        dst: str,
        start: datetime,
        end: datetime,
        route: Sequence[str] | None = None,
    ) -> WidestPath:
        """Query 3: the highest bandwidth free throughout [start, end) on any one path.

        The path returned has the fewest hops, then is the shortest, among those that
        carry that bandwidth.
        """
        way = self._way(src, dst, route)
        lo, hi = span_us(start, end, "start", "end")
        best, steps = self._net.max_bandwidth(way, lo, hi)
        return WidestPath(best, self._path(steps))

    def all_slots(
        self,
        src: str,
        dst: str,
        bandwidth_mbps: int,
        duration: timedelta,
        window: tuple[datetime, datetime],
        route: Sequence[str] | None = None,
    ) -> Slots:
        """Query 4: every start t with [t, t + duration) inside `window` at which some path
        has `bandwidth_mbps` free throughout."""
        way = self._way(src, dst, route)
        need = bandwidth(bandwidth_mbps)
        dur = duration_us(duration)
        if not isinstance(window, tuple) or len(window) != 2:
            raise InputError("window", "expected (start, end)")
        lo, hi = span_us(window[0], window[1], "window.start", "window.end")
        starts = self._net.slots(way, need, dur, lo, hi - dur + 1)
        kept_route = None if route is None else tuple(route)
        return Slots(IntervalSet.from_flat(starts), duration, need, src, dst, kept_route, self)

    # -- what the free bandwidth looks like -----------------------------------------

    def free_steps(
        self, link_id: str, start: datetime, end: datetime
    ) -> list[tuple[datetime, int]]:
        """(instant, free Mb/s) at `start` and wherever it changes before `end`."""
        link = self._link_index(link_id, "link_id")
        lo, hi = span_us(start, end, "start", "end")
        return [(from_us(t), free) for t, free in self._net.steps(link, lo, hi)]

    def min_free_mbps(self, link_id: str, start: datetime, end: datetime) -> int:
        link = self._link_index(link_id, "link_id")
        lo, hi = span_us(start, end, "start", "end")
        return self._net.min_free(link, lo, hi)

    # -- inside ----------------------------------------------------------------------

    def _changed(self, net: core.Network) -> Availability:
        new = object.__new__(Availability)
        new.topology, new._index, new._net = self.topology, self._index, net
        return new

    def _path(self, steps: list[core.Step] | None) -> Path | None:
        if steps is None:
            return None
        links, nodes = self._index.links, self._index.node_ids
        return Path(tuple(Hop(links[k], nodes[a], nodes[b]) for k, a, b in steps))

    def _way(self, src: Any, dst: Any, route: Sequence[str] | None) -> core.Way:
        """Where the request may go, checked: its ends, and the route if one is given."""
        s_end, d_end = self.end(src, "src"), self.end(dst, "dst")
        s_node, s_link, d_node, d_link = s_end.node, s_end.link, d_end.node, d_end.link
        if s_link is not None and s_link == d_link:
            raise InputError("dst", f"src and dst are the two ends of link {s_link.id!r}")
        if route is not None:
            return self._along(s_node, s_link, d_node, d_link, route)
        if s_node == d_node and s_link is None and d_link is None:
            raise InputError("dst", f"must differ from src (both are {s_node!r})")
        if s_link is not None and s_link.other_end(s_node) == d_node:
            raise InputError("dst", f"is the node behind src's port (over link {s_link.id!r})")
        if d_link is not None and d_link.other_end(d_node) == s_node:
            raise InputError("src", f"is the node behind dst's port (over link {d_link.id!r})")
        if s_link is not None and d_link is not None:
            behind = s_link.other_end(s_node)
            if behind == d_link.other_end(d_node):
                raise InputError("dst", f"its port leads to {behind!r}, as src's port does")
        index = self._index
        return core.Way.between(
            index.node_index[s_node],
            index.node_index[d_node],
            None if s_link is None else index.link_index[s_link.id],
            None if d_link is None else index.link_index[d_link.id],
        )

    def _along(
        self,
        s_node: str,
        s_link: Link | None,
        d_node: str,
        d_link: Link | None,
        route: Sequence[str],
    ) -> core.Way:
        if isinstance(route, str) or not all(isinstance(link, str) for link in route):
            raise InputError("route", "expected a list of link ids")
        start = s_node if s_link is None else s_link.other_end(s_node)
        end = d_node if d_link is None else d_link.other_end(d_node)
        links = [*([s_link.id] if s_link else []), *route, *([d_link.id] if d_link else [])]
        if not links:
            raise InputError("route", "is empty, and no link lies behind the ports of src and dst")
        try:
            self.topology.walk(start, links, end)
        except ValueError as exc:
            raise InputError(
                "route", f"{exc} (walking {', '.join(links)} from {start!r})"
            ) from None
        index = self._index
        return core.Way.along(index.node_index[start], [index.link_index[k] for k in links])

    def end(self, name: Any, field_name: str = "src") -> End:
        """Resolve a node, site or `node:port`; `InputError` names `field_name` if unknown."""
        if not isinstance(name, str):
            raise InputError(field_name, f"expected a node, site or node:port, got {name!r}")
        node_name, sep, port = name.partition(":")
        node = self.topology.resolve(node_name, field_name)
        if not sep:
            return End(node)
        ports = self.topology.nodes[node].ports
        if port not in ports:
            raise InputError(
                field_name,
                f"node {node!r} has no port {port!r} (its ports: {', '.join(ports) or 'none'})",
            )
        return End(node, port, self.topology.link_at(node, port))

    def _link_index(self, link_id: Any, field_name: str) -> int:
        index = self._index.link_index.get(link_id) if isinstance(link_id, str) else None
        if index is None:
            raise InputError(
                field_name, f"no link named {link_id!r} in topology {self.topology.name!r}"
            )
        return index

    def _loads(self, bookings: Iterable[Booking]) -> list[tuple[int, int, int, int]]:
        loads = []
        for k, booking in enumerate(bookings):
            where = f"bookings[{k}]"
            link = self._link_index(booking.link_id, f"{where}.link_id")
            start, end = span_us(
                booking.start, booking.end, f"{where}.start", f"{where}.end", bounded=False
            )
            mbps = bandwidth(booking.bandwidth_mbps, f"{where}.bandwidth_mbps")
            loads.append((link, start, end, mbps))
        return loads


@dataclass(frozen=True)
class _Index:
    """The topology's nodes and links, numbered as the core knows them."""

    node_ids: tuple[str, ...]
    node_index: dict[str, int]
    links: tuple[Link, ...]
    link_index: dict[str, int]

    @classmethod
    def of(cls, topology: Topology) -> _Index:
        node_ids = tuple(sorted(topology.nodes))
        links = tuple(topology.links[link_id] for link_id in sorted(topology.links))
        return cls(
            node_ids=node_ids,
            node_index={node: k for k, node in enumerate(node_ids)},
            links=links,
            link_index={link.id: k for k, link in enumerate(links)},
        )

    def ends(self, link: Link) -> tuple[int, int]:
        return (self.node_index[link.a.node], self.node_index[link.b.node])
