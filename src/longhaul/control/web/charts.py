"""Geometry for the pages' SVG: a time axis, step lines of free bandwidth, a map of sites.

Pure functions of values; the templates draw what these return.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta

from longhaul.schedule import Availability
from longhaul.topology import Path, Topology

_TICK_STEPS = [timedelta(minutes=m) for m in (15, 30, 60, 120, 180, 360, 720)] + [
    timedelta(days=d) for d in (1, 2, 7, 14, 28)
]


@dataclass(frozen=True)
class TimeAxis:
    """Maps [start, end) onto [left, left + width] pixels."""

    start: datetime
    end: datetime
    left: float
    width: float

    def x(self, t: datetime) -> float:
        span = (self.end - self.start).total_seconds()
        share = (t - self.start).total_seconds() / span
        return self.left + self.width * min(1.0, max(0.0, share))

    def ticks(self, most: int = 8) -> list[tuple[float, str]]:
        """Round instants to label, at most `most` of them."""
        span = self.end - self.start
        step = next((s for s in _TICK_STEPS if span / s <= most), _TICK_STEPS[-1])
        seconds = int(step.total_seconds())
        first = datetime.fromtimestamp(
            -(-int(self.start.timestamp()) // seconds) * seconds, tz=self.start.tzinfo
        )
        label = "%b %d" if step >= timedelta(days=1) else "%b %d %H:%M"
        ticks = []
        t = first
        while t <= self.end:
            ticks.append((self.x(t), t.strftime(label)))
            t += step
        return ticks


@dataclass(frozen=True)
class ValueAxis:
    """Maps [0, top] Mb/s onto [bottom, bottom - height] pixels (up is more)."""

    top_mbps: int
    bottom: float
    height: float

    def y(self, mbps: float) -> float:
        share = 0.0 if self.top_mbps <= 0 else min(1.0, max(0.0, mbps / self.top_mbps))
        return self.bottom - self.height * share


def free_along(
    avail: Availability, path: Path, start: datetime, end: datetime
) -> list[tuple[datetime, int]]:
    """The bandwidth `path` has free at each instant of [start, end): the least over its
    links (a link crossed twice offers half its free bandwidth), as steps."""
    times = Counter(path.link_ids)
    per_link = {link: avail.free_steps(link, start, end) for link in times}
    instants = sorted({t for steps in per_link.values() for t, _ in steps})
    result: list[tuple[datetime, int]] = []
    for t in instants:
        free = min(_value_at(per_link[link], t) // times[link] for link in times)
        if not result or result[-1][1] != free:
            result.append((t, free))
    return result


def step_line(steps: list[tuple[datetime, int]], time: TimeAxis, value: ValueAxis) -> str:
    """An SVG path `d` drawing `steps` from the axis start to its end."""
    if not steps:
        return ""
    parts = [f"M{time.x(steps[0][0]):.1f},{value.y(steps[0][1]):.1f}"]
    for t, mbps in steps[1:]:
        parts.append(f"H{time.x(t):.1f}V{value.y(mbps):.1f}")
    parts.append(f"H{time.x(time.end):.1f}")
    return "".join(parts)


def _value_at(steps: list[tuple[datetime, int]], t: datetime) -> int:
    value = steps[0][1]
    for at, free in steps:
        if at > t:
            break
        value = free
    return value


@dataclass(frozen=True)
class MapNode:
    id: str
    site: str
    kind: str
    x: float
    y: float


@dataclass(frozen=True)
class MapLabel:
    text: str
    x: float
    y: float


@dataclass(frozen=True)
class MapLink:
    id: str
    x1: float
    y1: float
    x2: float
    y2: float
    layer: str
    label: str


def site_map(
    topology: Topology, width: float = 900, height: float = 460, margin: float = 60
) -> tuple[list[MapNode], list[MapLink], list[MapLabel]]:
    """Nodes placed by their site's coordinates (a circle when sites have none), the nodes
    of one site around it, and parallel links drawn side by side."""
    sites = list(topology.sites.values())
    if all(s.lat is not None and s.lon is not None for s in sites):
        lon = [s.lon or 0.0 for s in sites]
        lat = [s.lat or 0.0 for s in sites]
        span_x = (max(lon) - min(lon)) or 1.0
        span_y = (max(lat) - min(lat)) or 1.0
        centre = {
            s.id: (
                margin + (width - 2 * margin) * ((s.lon or 0.0) - min(lon)) / span_x,
                margin + (height - 2 * margin) * (max(lat) - (s.lat or 0.0)) / span_y,
            )
            for s in sites
        }
    else:
        radius = min(width, height) / 2 - margin
        centre = {
            s.id: (
                width / 2 + radius * math.cos(2 * math.pi * k / len(sites)),
                height / 2 + radius * math.sin(2 * math.pi * k / len(sites)),
            )
            for k, s in enumerate(sites)
        }
    nodes: dict[str, MapNode] = {}
    for site in sites:
        members = sorted(
            (n for n in topology.nodes.values() if n.site == site.id), key=lambda n: n.id
        )
        cx, cy = centre[site.id]
        for k, node in enumerate(members):
            angle = 2 * math.pi * k / max(1, len(members))
            spread = 0 if len(members) == 1 else 22
            nodes[node.id] = MapNode(
                node.id,
                site.id,
                node.kind.value,
                cx + spread * math.cos(angle),
                cy + spread * math.sin(angle),
            )
    links = []
    seen: Counter[frozenset[str]] = Counter()
    for link in topology.links.values():
        a, b = nodes[link.a.node], nodes[link.b.node]
        pair = frozenset(link.nodes)
        offset = 4.0 * seen[pair]
        seen[pair] += 1
        length = math.hypot(b.x - a.x, b.y - a.y) or 1.0
        nx, ny = -(b.y - a.y) / length * offset, (b.x - a.x) / length * offset
        label = (
            f"{link.id}: {link.layer.value}, {link.length_miles:,g} mi, {link.capacity_mbps:,} Mb/s"
        )
        links.append(
            MapLink(link.id, a.x + nx, a.y + ny, b.x + nx, b.y + ny, link.layer.value, label)
        )
    labels = []
    for site in sites:
        cx, cy = centre[site.id]
        others = [centre[o.id] for o in sites if o.id != site.id]
        nearest = min(others, key=lambda p: math.hypot(p[0] - cx, p[1] - cy), default=(cx, cy + 1))
        # Put the name on the side away from the nearest site, clear of this site's nodes.
        below = nearest[1] < cy
        labels.append(MapLabel(site.id, cx, cy + 40 if below else cy - 30))
    return list(nodes.values()), links, labels
