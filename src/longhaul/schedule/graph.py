"""Path searches over a topology's links, each asked per link whether it can carry the request.

Nodes and links are numbered so the inner loops touch only lists and ints. Every link is
full-duplex, so it can be crossed either way. Callers pass what a link can do in the slot
asked about (usable or not, its width, its feasible start times); the searches know
nothing of time or bookings.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from longhaul.schedule.intervals import Flat, difference, intersect, union
from longhaul.topology import Link, Topology

Step = tuple[int, int, int]
"""(link, from node, to node), all numbered."""


@dataclass(frozen=True)
class Graph:
    node_ids: tuple[str, ...]
    node_index: dict[str, int]
    links: tuple[Link, ...]
    link_index: dict[str, int]
    ends: tuple[tuple[int, int], ...]
    length_miles: tuple[float, ...]
    adjacency: tuple[tuple[tuple[int, int], ...], ...]
    """Per node, (link, neighbour) in link-id order, so ties resolve the same way every time."""

    @classmethod
    def of(cls, topology: Topology) -> Graph:
        node_ids = tuple(sorted(topology.nodes))
        node_index = {node: k for k, node in enumerate(node_ids)}
        links = tuple(topology.links[link_id] for link_id in sorted(topology.links))
        ends = tuple((node_index[lk.a.node], node_index[lk.b.node]) for lk in links)
        adjacency: list[list[tuple[int, int]]] = [[] for _ in node_ids]
        for k, (a, b) in enumerate(ends):
            adjacency[a].append((k, b))
            adjacency[b].append((k, a))
        return cls(
            node_ids=node_ids,
            node_index=node_index,
            links=links,
            link_index={lk.id: k for k, lk in enumerate(links)},
            ends=ends,
            length_miles=tuple(lk.length_miles for lk in links),
            adjacency=tuple(tuple(edges) for edges in adjacency),
        )


def fewest_hops(
    graph: Graph, src: int, dst: int, usable: Callable[[int], bool]
) -> list[Step] | None:
    """The usable path with the fewest hops, ties broken by length; None if there is none."""
    length = graph.length_miles
    adjacency = graph.adjacency
    best: dict[int, tuple[int, float]] = {src: (0, 0.0)}
    came_by: dict[int, tuple[int, int]] = {}
    done: set[int] = set()
    heap: list[tuple[int, float, int]] = [(0, 0.0, src)]
    checked: dict[int, bool] = {}
    while heap:
        hops, miles, node = heapq.heappop(heap)
        if node in done:
            continue
        if node == dst:
            return _steps_to(dst, came_by)
        done.add(node)
        for link, other in adjacency[node]:
            if other in done:
                continue
            key = (hops + 1, miles + length[link])
            known = best.get(other)
            if known is not None and known <= key:
                continue
            ok = checked.get(link)
            if ok is None:
                ok = checked[link] = usable(link)
            if ok:
                best[other] = key
                came_by[other] = (link, node)
                heapq.heappush(heap, (key[0], key[1], other))
    return None


def widest_width(graph: Graph, src: int, dst: int, width: Callable[[int], int]) -> int:
    """The largest bottleneck width over all paths (0 when none has any)."""
    adjacency = graph.adjacency
    best: dict[int, int] = {}
    done: set[int] = set()
    heap: list[tuple[int, int]] = [(-(2**62), src)]
    while heap:
        neg, node = heapq.heappop(heap)
        if node in done:
            continue
        if node == dst:
            return -neg
        done.add(node)
        for link, other in adjacency[node]:
            if other in done:
                continue
            through = min(-neg, width(link))
            if through > best.get(other, 0):
                best[other] = through
                heapq.heappush(heap, (-through, other))
    return 0


def reachable_starts(
    graph: Graph, src: int, dst: int, domain: Flat, starts_on: Callable[[int], Flat]
) -> Flat:
    """ALL-SLOTS: the start times in `domain` at which some path joins src to dst.

    `starts_on(link)` gives the starts (within `domain`) at which the link can carry the
    request. This is the semiring closure of SYSTEM.md §2, τ(w) ← τ(w) ⊕ (τ(v) ⊗ L_e),
    run to its fixpoint with two savings: links free over the whole domain impose nothing,
    so the nodes they join are merged first and share one label; and only what a label
    gained since it was last passed on (its delta) is passed on again.
    """
    if not domain:
        return []
    parent = list(range(len(graph.node_ids)))

    def root(node: int) -> int:
        while parent[node] != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    partial: list[tuple[int, int, Flat]] = []
    for link, (a, b) in enumerate(graph.ends):
        starts = starts_on(link)
        if starts == domain:
            parent[root(a)] = root(b)
        elif starts:
            partial.append((a, b, starts))
    source, target = root(src), root(dst)
    if source == target:
        return list(domain)

    neighbours: dict[int, list[tuple[int, Flat]]] = {}
    for a, b, starts in partial:
        ra, rb = root(a), root(b)
        if ra != rb:
            neighbours.setdefault(ra, []).append((rb, starts))
            neighbours.setdefault(rb, []).append((ra, starts))

    label: dict[int, Flat] = {source: list(domain)}
    pending: dict[int, Flat] = {source: list(domain)}
    queue = deque([source])
    while queue:
        node = queue.popleft()
        delta = pending.pop(node)
        for other, starts in neighbours.get(node, ()):
            reached = intersect(delta, starts)
            if not reached:
                continue
            gained = difference(reached, label.get(other, []))
            if not gained:
                continue
            label[other] = union(label.get(other, []), gained)
            if other in pending:
                pending[other] = union(pending[other], gained)
            else:
                pending[other] = gained
                queue.append(other)
        if label.get(target) == domain:
            break
    return label.get(target, [])


def _steps_to(dst: int, came_by: dict[int, tuple[int, int]]) -> list[Step]:
    steps: list[Step] = []
    node = dst
    while node in came_by:
        link, prev = came_by[node]
        steps.append((link, prev, node))
        node = prev
    steps.reverse()
    return steps
