"""Brute force for the four queries: every candidate path, checked at every time breakpoint.

Slow and obvious on purpose; the property tests compare the real searches with it. The
candidates of a request are all simple paths between its ends (from the node behind a
port, through that port's link, when a port is named), or the one walk it gives as its
route; a walk may cross a link more than once, and each crossing takes its share.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from hypothesis import strategies as st

from longhaul.schedule import Availability, Booking
from longhaul.schedule.instants import to_us
from longhaul.topology import Link, Node, Site, Topology

T0 = datetime(2030, 1, 7, tzinfo=UTC)


def at(seconds: int) -> datetime:
    return T0 + timedelta(seconds=seconds)


@dataclass
class Oracle:
    topology: Topology
    bookings: list[Booking]

    def loads(self, link: Link) -> list[tuple[int, int, int]]:
        return [
            (to_us(b.start, "s"), to_us(b.end, "e"), link.booked_mbps(b.bandwidth_mbps))
            for b in self.bookings
            if b.link_id == link.id
        ]

    def free_at(self, link: Link, t: int) -> int:
        return link.capacity_mbps - sum(m for s, e, m in self.loads(link) if s <= t < e)

    def min_free(self, link: Link, lo: int, hi: int) -> int:
        instants = {lo} | {s for s, _, _ in self.loads(link) if lo < s < hi}
        return min(self.free_at(link, t) for t in instants)

    def simple_paths(self, src: str, dst: str) -> list[list[Link]]:
        paths: list[list[Link]] = []

        def walk(node: str, seen: set[str], links: list[Link]) -> None:
            if node == dst:
                paths.append(list(links))
                return
            for link in self.topology.links.values():
                if node in link.nodes:
                    nxt = link.other_end(node)
                    if nxt not in seen:
                        walk(nxt, seen | {nxt}, [*links, link])

        walk(src, {src}, [])
        return paths

    def carries(self, path: list[Link], need: int, lo: int, hi: int) -> bool:
        return all(
            times * link.booked_mbps(need) <= self.min_free(link, lo, hi)
            for link, times in Counter(path).items()
        )

    def width(self, path: list[Link], lo: int, hi: int) -> int:
        return min(
            link.bookable_mbps(self.min_free(link, lo, hi) // times)
            for link, times in Counter(path).items()
        )

    def start_breakpoints(self, dur: int) -> set[int]:
        """Where feasibility of a start can change: a booking's end, or `dur` before its start."""
        points: set[int] = set()
        for b in self.bookings:
            points.add(to_us(b.end, "e"))
            points.add(to_us(b.start, "s") - dur + 1)
        return points


def key(path: list[Link]) -> tuple[int, float]:
    return (len(path), sum(lk.length_miles for lk in path))


def same_key(a: tuple[int, float], b: tuple[int, float]) -> bool:
    return a[0] == b[0] and math.isclose(a[1], b[1])


@dataclass
class Scenario:
    """A small random topology with bookings, and a request's ends (and route, if any)."""

    topology: Topology
    bookings: list[Booking]
    src: str
    dst: str
    route: list[str] | None = None

    @property
    def oracle(self) -> Oracle:
        return Oracle(self.topology, self.bookings)

    def availability(self) -> Availability:
        return Availability(self.topology, self.bookings)

    def _end(self, name: str) -> tuple[str, Link | None]:
        node, _, port = name.partition(":")
        return node, self.topology.link_at(node, port) if port else None

    def degenerate(self) -> bool:
        """Requests that make no sense, which must be refused with InputError."""
        (s, s_link), (d, d_link) = self._end(self.src), self._end(self.dst)
        if s_link is not None and s_link == d_link:
            return True
        if self.route is not None:
            return False
        far_s = s_link.other_end(s) if s_link else None
        far_d = d_link.other_end(d) if d_link else None
        return (
            (s == d and s_link is None and d_link is None)
            or far_s == d
            or far_d == s
            or (far_s is not None and far_s == far_d)
        )

    def candidates(self) -> list[list[Link]]:
        """Every path the request may take."""
        (s, s_link), (d, d_link) = self._end(self.src), self._end(self.dst)
        if self.route is not None:
            inner = [self.topology.links[k] for k in self.route]
            return [[*([s_link] if s_link else []), *inner, *([d_link] if d_link else [])]]
        start = s_link.other_end(s) if s_link else s
        end = d_link.other_end(d) if d_link else d
        return [
            p
            for p in self.oracle.simple_paths(start, end)
            if (s_link is None or p[0] == s_link) and (d_link is None or p[-1] == d_link)
        ]

    def feasible_start(self, need: int, t: int, dur: int) -> bool:
        return any(self.oracle.carries(p, need, t, t + dur) for p in self.candidates())


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    """Parallel links, equal lengths and shared instants are all likely; every node has a
    port with no link ("x") besides one port per link it has."""
    n = draw(st.integers(2, 5))
    nodes = [f"n{k}" for k in range(n)]
    ends: list[tuple[int, int]] = []
    if draw(st.booleans()):
        # Usually connected, so that "no path" comes from bookings and capacities.
        ends += [(draw(st.integers(0, k - 1)), k) for k in range(1, n)]
    for _ in range(draw(st.integers(0 if ends else 1, 4))):
        a = draw(st.integers(0, n - 1))
        ends.append((a, (a + draw(st.integers(1, n - 1))) % n))
    links = []
    ports: dict[str, list[str]] = {node: ["x"] for node in nodes}
    for k, (a, b) in enumerate(ends):
        capacity = draw(st.sampled_from([4, 6, 10]))
        ports[nodes[a]].append(f"p{k}")
        ports[nodes[b]].append(f"p{k}")
        links.append(
            Link(
                id=f"l{k}",
                a=f"{nodes[a]}:p{k}",
                b=f"{nodes[b]}:p{k}",
                layer="lanphy",
                length_miles=draw(st.integers(0, 5)),
                capacity_mbps=capacity,
                granularity_mbps=draw(st.sampled_from([1, 2, 3])),
            )
        )
    topology = Topology(
        "random",
        [Site(id="S")],
        [Node(id=node, site="S", kind="edge", ports=tuple(ports[node])) for node in nodes],
        links,
    )
    bookings = []
    for _ in range(draw(st.integers(0, 8))):
        link = draw(st.sampled_from(links))
        start = draw(st.integers(0, 30))
        bookings.append(
            Booking(
                link.id,
                at(start),
                at(start + draw(st.integers(1, 15))),
                # Half take the whole link, so bookings often block every path for a while.
                draw(st.one_of(st.just(link.capacity_mbps), st.integers(1, link.capacity_mbps))),
            )
        )
    kind = draw(st.sampled_from(["nodes", "ports", "route"]))
    if kind == "route":
        here = draw(st.sampled_from(nodes))
        start, route = here, []
        for _ in range(draw(st.integers(1, 5))):
            touching = [lk for lk in links if here in lk.nodes]
            if not touching:
                break
            link = draw(st.sampled_from(touching))
            route.append(link.id)
            here = link.other_end(here)
        if route:
            return Scenario(topology, bookings, start, here, route)
    src = draw(st.sampled_from(nodes))
    if kind == "nodes":
        dst = draw(st.sampled_from([node for node in nodes if node != src]))
        return Scenario(topology, bookings, src, dst)
    # Mostly another node; one node at both ends makes sense only through linked ports.
    dst = draw(st.sampled_from([node for node in nodes if node != src] * 3 + [src]))
    src_port = draw(st.sampled_from(ports[src]))
    dst_port = draw(st.sampled_from(ports[dst]))
    return Scenario(topology, bookings, f"{src}:{src_port}", f"{dst}:{dst_port}")
