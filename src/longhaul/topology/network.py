"""A validated topology: the graph of nodes and links, with lookups and loop paths."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from longhaul.errors import InputError
from longhaul.topology.model import Hop, Link, Loop, Node, Path, Site

T = TypeVar("T")


class TopologyError(ValueError):
    """A topology is inconsistent; `problems` names each offending element."""

    def __init__(self, problems: Sequence[str], source: str = "topology") -> None:
        self.problems = tuple(problems)
        self.source = source
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"invalid {source} ({len(self.problems)} problem(s)):\n{lines}")


class UnknownNameError(InputError):
    """A name given by a user matches no node or site."""

    def __init__(self, field: str, name: str, suggestions: Sequence[str]) -> None:
        self.name = name
        hint = f"; did you mean {', '.join(repr(s) for s in suggestions)}?" if suggestions else ""
        super().__init__(field, f"no node or site named {name!r}{hint}")


@dataclass(frozen=True)
class LoopView:
    """A loop-back connection with the path it walks."""

    loop: Loop
    path: Path

    @property
    def name(self) -> str:
        return self.loop.name

    @property
    def length_miles(self) -> float:
        return self.path.length_miles

    @property
    def rtt_ms(self) -> float:
        return self.path.rtt_ms


class Topology:
    """Sites, nodes, links and loops that refer to each other consistently.

    Constructing one checks every cross-reference and raises `TopologyError` listing
    all problems at once, so a user can fix a file in one pass.
    """

    def __init__(
        self,
        name: str,
        sites: Iterable[Site],
        nodes: Iterable[Node],
        links: Iterable[Link],
        loops: Iterable[Loop] = (),
        source: str = "topology",
    ) -> None:
        self.name = name
        problems: list[str] = []
        self.sites = _index("site", [(s.id, s) for s in sites], problems)
        self.nodes = _index("node", [(n.id, n) for n in nodes], problems)
        self.links = _index("link", [(lk.id, lk) for lk in links], problems)
        self._loops = _index("loop", [(lp.name, lp) for lp in loops], problems)
        problems += self._check_sites_and_nodes()
        self._port_links: dict[tuple[str, str], Link] = {}
        problems += self._check_links()
        self._names = self._build_name_index(problems)
        self.adjacency = self._build_adjacency()
        self.loops: dict[str, LoopView] = {}
        for loop in self._loops.values():
            try:
                self.loops[loop.name] = LoopView(
                    loop, self.walk(loop.start, loop.links, loop.start)
                )
            except ValueError as exc:
                problems.append(f"loop {loop.name!r}: {exc}")
        if problems:
            raise TopologyError(problems, source)

    # -- lookups ------------------------------------------------------------------

    def resolve(self, name: str, field: str = "node") -> str:
        """The node id `name` refers to: a node id, or a site id (its gateway node).

        Matching ignores case. Raises `UnknownNameError` naming `field`.
        """
        node_id = self._names.get(name.casefold())
        if node_id is None:
            choices = sorted({*self.nodes, *self.sites})
            raise UnknownNameError(field, name, difflib.get_close_matches(name, choices, n=3))
        return node_id

    def walk(self, start: str, link_ids: Sequence[str], end: str | None = None) -> Path:
        """The path that leaves `start` over `link_ids` in order, arriving at `end` if given.

        Raises ValueError saying where the walk breaks.
        """
        if start not in self.nodes:
            raise ValueError(f"start node {start!r} is not defined")
        hops: list[Hop] = []
        here = start
        for link_id in link_ids:
            link = self.links.get(link_id)
            if link is None:
                raise ValueError(f"link {link_id!r} is not defined")
            if here not in link.nodes:
                raise ValueError(f"link {link_id!r} does not continue from node {here!r}")
            there = link.other_end(here)
            hops.append(Hop(link, here, there))
            here = there
        if end is not None and here != end:
            where = f"back at its start {end!r}" if end == start else f"at {end!r}"
            raise ValueError(f"walk ends at {here!r}, not {where}")
        return Path(tuple(hops))

    def link_at(self, node: str, port: str) -> Link | None:
        """The link attached to `port` of `node`, if any."""
        return self._port_links.get((node, port))

    def loop_links(self, name: str, field: str = "loop") -> tuple[str, ...]:
        """The links a named loop-back walks; `InputError` naming `field` lists the loops."""
        view = self.loops.get(name)
        if view is None:
            names = ", ".join(repr(n) for n in self.loops) or "none"
            raise InputError(field, f"no loop-back named {name!r}; the topology has {names}")
        return view.loop.links

    def loop_by_length(self, miles: float) -> LoopView:
        """The loop whose length is nearest to `miles` (loops are named by nominal length)."""
        if not self.loops:
            raise LookupError(f"topology {self.name!r} has no loops")
        return min(self.loops.values(), key=lambda lp: abs(lp.length_miles - miles))

    # -- validation -----------------------------------------------------------------

    def _check_sites_and_nodes(self) -> list[str]:
        problems = []
        for node in self.nodes.values():
            if node.site not in self.sites:
                problems.append(f"node {node.id!r}: site {node.site!r} is not defined")
            for port in _duplicates(node.ports):
                problems.append(f"node {node.id!r}: port {port!r} is listed twice")
        for site in self.sites.values():
            gateway = self.nodes.get(site.gateway) if site.gateway else None
            if site.gateway and gateway is None:
                problems.append(f"site {site.id!r}: gateway node {site.gateway!r} is not defined")
            elif gateway is not None and gateway.site != site.id and gateway.site in self.sites:
                problems.append(
                    f"site {site.id!r}: gateway {gateway.id!r} belongs to site {gateway.site!r}"
                )
        return problems

    def _check_links(self) -> list[str]:
        problems = []
        used_by: dict[tuple[str, str], str] = {}
        for link in self.links.values():
            if link.a.node == link.b.node:
                problems.append(f"link {link.id!r}: connects node {link.a.node!r} to itself")
            if link.granularity_mbps > link.capacity_mbps:
                problems.append(
                    f"link {link.id!r}: granularity_mbps {link.granularity_mbps} exceeds "
                    f"capacity_mbps {link.capacity_mbps}"
                )
            for end_name, end in (("a", link.a), ("b", link.b)):
                node = self.nodes.get(end.node)
                if node is None:
                    problems.append(
                        f"link {link.id!r}: end {end_name} = {str(end)!r} names unknown node "
                        f"{end.node!r} (a link to nowhere)"
                    )
                    continue
                if end.port not in node.ports:
                    problems.append(
                        f"link {link.id!r}: end {end_name} = {str(end)!r}: node {end.node!r} "
                        f"has no port {end.port!r} (its ports: {', '.join(node.ports) or 'none'})"
                    )
                key = (end.node, end.port)
                if key in used_by:
                    problems.append(
                        f"port {str(end)!r} is used by both link {used_by[key]!r} "
                        f"and link {link.id!r}"
                    )
                used_by.setdefault(key, link.id)
                self._port_links.setdefault(key, link)
        return problems

    def _build_name_index(self, problems: list[str]) -> dict[str, str]:
        names: dict[str, str] = {}
        owners: dict[str, str] = {}
        for node in self.nodes.values():
            _claim(names, owners, node.id, node.id, f"node {node.id!r}", problems)
        for site in self.sites.values():
            target = site.gateway if site.gateway in self.nodes else None
            if target is not None:
                _claim(names, owners, site.id, target, f"site {site.id!r}", problems)
        return names

    def _build_adjacency(self) -> dict[str, tuple[tuple[Link, str], ...]]:
        adjacency: dict[str, list[tuple[Link, str]]] = {node: [] for node in self.nodes}
        for link_id in sorted(self.links):
            link = self.links[link_id]
            if link.a.node in adjacency and link.b.node in adjacency:
                adjacency[link.a.node].append((link, link.b.node))
                adjacency[link.b.node].append((link, link.a.node))
        return {node: tuple(edges) for node, edges in adjacency.items()}


def _index(kind: str, keyed: list[tuple[str, T]], problems: list[str]) -> dict[str, T]:
    index: dict[str, T] = {}
    for key, item in keyed:
        if key in index:
            problems.append(f"{kind} {key!r} is defined twice")
        else:
            index[key] = item
    return index


def _claim(
    names: dict[str, str],
    owners: dict[str, str],
    name: str,
    target: str,
    owner: str,
    problems: list[str],
) -> None:
    key = name.casefold()
    if key in owners:
        problems.append(f"{owner}: name clashes with {owners[key]} (names ignore case)")
        return
    names[key] = target
    owners[key] = owner


def _duplicates(items: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    repeated: list[str] = []
    for item in items:
        if item in seen and item not in repeated:
            repeated.append(item)
        seen.add(item)
    return repeated
