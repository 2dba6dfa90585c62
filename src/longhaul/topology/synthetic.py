"""Random topologies shaped like a national research network, for benchmarks and tests."""

from __future__ import annotations

import heapq
import math
import random
from collections import defaultdict

from longhaul.topology.model import Layer, Link, Node, NodeKind, Site
from longhaul.topology.network import Topology

_WIDTH_MILES, _HEIGHT_MILES = 2800.0, 1200.0
_ROUTE_FACTOR = 1.25
"""Fibre follows roads and rights of way, not straight lines."""
_LAYERS = (Layer.OC192, Layer.OC192, Layer.OC48, Layer.LANPHY, Layer.WANPHY, Layer.GIGE)


def random_topology(nodes: int, degree: float = 4.0, seed: int = 0) -> Topology:
    """`nodes` switches scattered over a continent, joined into one connected network.

    Each node links to a nearby node placed before it (a spanning tree, so everything
    is reachable); then random near neighbours are joined until the average degree
    (links per node) reaches `degree`. Layers, and so capacities, are drawn at random.
    """
    if nodes < 2:
        raise ValueError(f"nodes must be at least 2, got {nodes}")
    rng = random.Random(seed)
    points = [(rng.uniform(0, _WIDTH_MILES), rng.uniform(0, _HEIGHT_MILES)) for _ in range(nodes)]
    pairs: set[tuple[int, int]] = set()
    for k in range(1, nodes):
        nearest = heapq.nsmallest(3, range(k), key=lambda j: _distance(points[j], points[k]))
        pairs.add((rng.choice(nearest), k))
    target = max(nodes - 1, round(nodes * degree / 2))
    neighbours = _nearest_neighbours(points, count=8)
    while len(pairs) < target:
        a = rng.randrange(nodes)
        b = rng.choice(neighbours[a])
        pairs.add((min(a, b), max(a, b)))

    ports: defaultdict[int, list[str]] = defaultdict(list)
    links = []
    for k, (a, b) in enumerate(sorted(pairs)):
        layer = rng.choice(_LAYERS)
        ports[a].append(f"p{k}")
        ports[b].append(f"p{k}")
        links.append(
            Link(
                id=f"l{k}",
                a=f"n{a}:p{k}",
                b=f"n{b}:p{k}",
                layer=layer,
                length_miles=round(_distance(points[a], points[b]) * _ROUTE_FACTOR, 1),
                capacity_mbps=layer.payload_mbps,
                granularity_mbps=layer.default_granularity_mbps,
            )
        )
    site = Site(id="NET", name=f"synthetic network of {nodes} nodes")
    node_list = [
        Node(id=f"n{k}", site=site.id, kind=NodeKind.CORE, ports=tuple(ports[k]))
        for k in range(nodes)
    ]
    return Topology(f"synthetic-{nodes}", [site], node_list, links)


def _distance(p: tuple[float, float], q: tuple[float, float]) -> float:
    return math.hypot(p[0] - q[0], p[1] - q[1])


def _nearest_neighbours(points: list[tuple[float, float]], count: int) -> list[list[int]]:
    """For each point, the `count` nearest others (a grid keeps this near-linear)."""
    cell = math.sqrt(_WIDTH_MILES * _HEIGHT_MILES * count / len(points))
    grid: defaultdict[tuple[int, int], list[int]] = defaultdict(list)
    for k, (x, y) in enumerate(points):
        grid[(int(x // cell), int(y // cell))].append(k)
    result = []
    for k, (x, y) in enumerate(points):
        gx, gy = int(x // cell), int(y // cell)
        reach = 1
        while True:
            near = [
                j
                for dx in range(-reach, reach + 1)
                for dy in range(-reach, reach + 1)
                for j in grid.get((gx + dx, gy + dy), ())
                if j != k
            ]
            if len(near) >= count or reach > len(points):
                break
            reach += 1
        near.sort(key=lambda j: _distance(points[j], points[k]))
        result.append(near[:count])
    return result
