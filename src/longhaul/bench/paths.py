"""`longhaul bench paths`: latency of the four path queries on loaded topologies.

For each topology (USN, and synthetic networks of 100 and 1,000 nodes with about four
links per node), 10,000 random reservations are booked the way the control plane would
book them: a random request (endpoints, bandwidth, a start within 30 days, a duration
from 15 minutes to 12 hours) is booked on a path with room from its start, or else from
its `earliest_start` if that is within a week (`Availability.with_admitted`); a request
that cannot start within a week of its slot is turned away and another drawn, as a user
would give up. Links therefore fill up to their capacity, never beyond. A name with a
count, `n1000_1m`, is a year's calendar instead: reservations with starts within 365
days until it holds that many bookings (here a million), a booking being one link of one
reservation, as the core stores them and as the figures count them. Then each query
runs on fresh random requests, starting within the calendar's days, and its latency is
recorded.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from longhaul.schedule import Availability, Request
from longhaul.topology import Topology, usn
from longhaul.topology.synthetic import random_topology

T0 = datetime(2030, 1, 7, tzinfo=UTC)
HORIZON = timedelta(days=30)
YEAR = timedelta(days=365)
PATIENCE = timedelta(days=7)
"""How long after its slot a request may still start; later, it is turned away."""
_BATCH = 10_000
"""Requests admitted per call into the core (progress is reported between calls)."""
ALL_SLOTS_WINDOW = timedelta(days=7)
QUERIES = ("fixed_slot", "earliest_start", "max_bandwidth", "all_slots")
_BANDWIDTHS_MBPS = (150, 300, 600, 1000, 1200, 2400, 4800)


@dataclass(frozen=True)
class Plan:
    """What one run measures."""

    topologies: tuple[str, ...] = ("usn", "n100", "n1000", "n1000_1m")
    reservations: int = 10_000
    """Booked on each topology named without a count of its own."""
    samples: int = 1000
    seed: int = 1


Progress = Callable[[str, int, int], None]
"""(what, done, total) — how far a long step has got."""


@dataclass(frozen=True)
class Calendar:
    """What one benchmark topology holds: `reservations` with starts within `days`, or
    (a year's calendar) as many as it takes to hold `link_bookings`."""

    graph: str
    days: int
    reservations: int | None = None
    link_bookings: int | None = None

    @classmethod
    def named(cls, name: str, plan: Plan) -> Calendar:
        """`usn` or `nN` (the plan's reservations over 30 days), or `nN_C` with C a count
        such as `1m` or `200k`: a year holding that many bookings, one per link a
        reservation crosses (the unit the scheduling core stores)."""
        graph, sep, count = name.partition("_")
        if not sep:
            return cls(graph, HORIZON.days, reservations=plan.reservations)
        scale = {"k": 1_000, "m": 1_000_000}.get(count[-1:].lower())
        if scale is None or not count[:-1].isdigit():
            raise ValueError(f"unknown benchmark calendar {name!r}; use e.g. n1000_1m or n100_200k")
        return cls(graph, YEAR.days, link_bookings=int(count[:-1]) * scale)

    def wants(self, reservations: int, link_bookings: int) -> int:
        """How many more reservations to ask for (an estimate for a calendar of bookings,
        from the hops of those booked so far); 0 when it is full."""
        if self.reservations is not None:
            return self.reservations - reservations
        assert self.link_bookings is not None
        missing = self.link_bookings - link_bookings
        if missing <= 0:
            return 0
        hops = link_bookings / reservations if reservations else 10
        return max(1, int(missing / hops))


def check(plan: Plan) -> None:
    """Raise ValueError, naming it, for a topology the plan names that does not exist."""
    for name in plan.topologies:
        _check_graph(Calendar.named(name, plan).graph)


def run(plan: Plan, progress: Progress | None = None) -> dict[str, Any]:
    check(plan)
    report: dict[str, Any] = {"topologies": {}}
    for name in plan.topologies:
        calendar = Calendar.named(name, plan)
        rng = random.Random(f"{plan.seed}-{name}")
        topology = _topology(calendar.graph, plan.seed)
        started = time.perf_counter()
        avail, stats = _admit(topology, calendar, rng, name, progress)
        entry: dict[str, Any] = {
            "nodes": len(topology.nodes),
            "links": len(topology.links),
            **stats,
            "days": calendar.days,
            "booking_s": round(time.perf_counter() - started, 2),
        }
        span = timedelta(days=calendar.days)
        entry |= _measure_queries(avail, plan.samples, span, rng, name, progress)
        report["topologies"][name] = entry
    report["workload"] = {
        "horizon_days": HORIZON.days,
        "all_slots_window_days": ALL_SLOTS_WINDOW.days,
        "bandwidths_mbps": list(_BANDWIDTHS_MBPS),
        "duration_minutes": [15, 720],
        "patience_days": PATIENCE.days,
        "samples_per_query": plan.samples,
        "seed": plan.seed,
    }
    return report


def _topology(name: str, seed: int) -> Topology:
    """USN, or `nN`: a synthetic network of N nodes."""
    _check_graph(name)
    return usn() if name == "usn" else random_topology(int(name[1:]), degree=4, seed=seed)


def _check_graph(name: str) -> None:
    if name != "usn" and not (name.startswith("n") and name[1:].isdigit()):
        raise ValueError(f"unknown benchmark topology {name!r}; use usn or nN (e.g. n100)")


def _request(rng: random.Random, nodes: list[str]) -> tuple[str, str, int, timedelta]:
    src, dst = rng.sample(nodes, 2)
    minutes = round(15 * (720 / 15) ** rng.random())  # log-uniform between 15 min and 12 h
    return src, dst, rng.choice(_BANDWIDTHS_MBPS), timedelta(minutes=minutes)


def _instant(rng: random.Random, span: timedelta = HORIZON) -> datetime:
    return T0 + timedelta(minutes=rng.randrange(int(span.total_seconds() // 60)))


def _admit(
    topology: Topology,
    calendar: Calendar,
    rng: random.Random,
    name: str,
    progress: Progress | None,
) -> tuple[Availability, dict[str, Any]]:
    """Book the calendar's reservations as users would: at the slot asked for when it is
    free, else at the earliest start after it within `PATIENCE`; requests turned away
    are drawn again."""
    avail = Availability(topology)
    nodes = sorted(topology.nodes)
    span = timedelta(days=calendar.days)
    booked = link_bookings = moved = turned_away = 0
    last_end = T0
    while wanted := calendar.wants(booked, link_bookings):
        asked = []
        for _ in range(min(_BATCH, wanted)):
            src, dst, mbps, duration = _request(rng, nodes)
            asked.append(Request(src, dst, mbps, _instant(rng, span), duration))
        avail, admitted = avail.with_admitted(asked, PATIENCE)
        for request, found in zip(asked, admitted, strict=True):
            if found is None:
                turned_away += 1
                continue
            booked += 1
            moved += found.start != request.start
            link_bookings += found.path.hop_count
            last_end = max(last_end, found.start + request.duration)
        if progress and calendar.reservations is not None:
            progress(f"{name}: booking reservations", booked, calendar.reservations)
        elif progress and calendar.link_bookings is not None:
            progress(f"{name}: booking links", link_bookings, calendar.link_bookings)
    stats = {
        "reservations": booked,
        "link_bookings": link_bookings,
        "moved_to_earliest_start": moved,
        "turned_away": turned_away,
        "bookings_span_days": round((last_end - T0) / timedelta(days=1), 1),
    }
    return avail, stats


def _measure_queries(
    avail: Availability,
    samples: int,
    span: timedelta,
    rng: random.Random,
    name: str,
    progress: Progress | None,
) -> dict[str, Any]:
    nodes = sorted(avail.topology.nodes)
    times: dict[str, list[float]] = {query: [] for query in QUERIES}
    found = dict.fromkeys(times, 0)
    for k in range(samples):
        src, dst, mbps, duration = _request(rng, nodes)
        start = _instant(rng, span)
        with _timed(times["fixed_slot"]):
            path = avail.fixed_slot(src, dst, mbps, start, start + duration)
        found["fixed_slot"] += path is not None
        with _timed(times["earliest_start"]):
            earliest = avail.earliest_start(src, dst, mbps, duration, start)
        found["earliest_start"] += earliest is not None
        with _timed(times["max_bandwidth"]):
            widest = avail.max_bandwidth(src, dst, start, start + duration)
        found["max_bandwidth"] += widest.bandwidth_mbps > 0
        window = (start, start + ALL_SLOTS_WINDOW)
        with _timed(times["all_slots"]):
            slots = avail.all_slots(src, dst, mbps, duration, window)
        found["all_slots"] += bool(slots.starts)
        if progress and (k + 1) % 10 == 0:
            progress(f"{name}: timing queries", k + 1, samples)
    return {
        query: {
            "p50_ms": round(_percentile(ms, 50), 3),
            "p99_ms": round(_percentile(ms, 99), 3),
            "mean_ms": round(statistics.fmean(ms), 3),
            "answered": found[query],
            "samples": len(ms),
        }
        for query, ms in times.items()
    }


@contextmanager
def _timed(into: list[float]) -> Iterator[None]:
    started = time.perf_counter_ns()
    yield
    into.append((time.perf_counter_ns() - started) / 1e6)


def _percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    rank = pct / 100 * (len(ordered) - 1)
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)
