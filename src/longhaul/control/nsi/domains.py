"""Domains that peer, and how a request between two of them is split (NSI's path
finding for an aggregator, GFD.212 §2.2): which domains a circuit crosses, where it
crosses each boundary, and the VLANs it may use there.

A file of domains (TOML, `data/domains/usn-peers.toml` ships as the demo) names each
domain's network and topology, and its peerings: Service Demarcation Points, each two
STPs (one per side) with the VLANs that side accepts. Pure: no network, no database.
"""

from __future__ import annotations

import tomllib
from collections import deque
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from longhaul.control.nsi.stp import URN_PREFIX, Stp, parse_stp
from longhaul.errors import InputError


@dataclass(frozen=True)
class Domain:
    name: str
    network: str
    topology: str
    """A shipped topology's name (`usn`) or a topology file's path."""


@dataclass(frozen=True)
class Peering:
    """Two STPs naming one boundary point, from either side."""

    a: Stp
    b: Stp

    def vlans(self) -> tuple[int, int] | None:
        """The VLANs both sides accept; None if they share none."""
        return _overlap(self.a.vlans, self.b.vlans)

    def facing(self, network: str) -> tuple[Stp, Stp] | None:
        """(this side's STP, the other side's) as seen from `network`, if it is one side."""
        if self.a.network == network:
            return self.a, self.b
        if self.b.network == network:
            return self.b, self.a
        return None


@dataclass(frozen=True)
class Segment:
    """The part of a circuit inside one domain: between two of its STPs, each with the
    VLANs it may use (a range to choose from, or one already chosen upstream)."""

    network: str
    src: Stp
    dst: Stp


@dataclass(frozen=True)
class Domains:
    domains: tuple[Domain, ...]
    peerings: tuple[Peering, ...]

    def domain(self, network: str) -> Domain:
        for domain in self.domains:
            if domain.network == network:
                return domain
        known = ", ".join(d.network for d in self.domains)
        raise InputError("stp", f"no domain has the network {network!r} (known: {known})")

    def split(self, src: Stp, dst: Stp) -> list[Segment]:
        """The segments of a circuit from `src` to `dst`: through the fewest domains, each
        boundary crossed where both sides share VLANs (the first such peering listed)."""
        crossings = self._crossings(src.network, dst.network)
        segments = []
        entry = src
        for peering in crossings:
            here, there = peering.facing(entry.network) or (peering.a, peering.b)
            shared = peering.vlans()
            segments.append(Segment(entry.network, entry, _labelled(here, shared)))
            entry = _labelled(there, shared)
        segments.append(Segment(dst.network, entry, dst))
        return segments

    def _crossings(self, start: str, goal: str) -> list[Peering]:
        """Breadth-first over the domains: the peerings crossed, in order."""
        self.domain(start), self.domain(goal)
        came_by: dict[str, Peering | None] = {start: None}
        queue = deque([start])
        while queue:
            here = queue.popleft()
            if here == goal:
                break
            for peering in self.peerings:
                sides = peering.facing(here)
                if sides is None or peering.vlans() is None:
                    continue
                there = sides[1].network
                if there not in came_by:
                    came_by[there] = peering
                    queue.append(there)
        if goal not in came_by:
            raise InputError("dest_stp", f"no chain of peerings leads from {start} to {goal}")
        crossings: list[Peering] = []
        here = goal
        while (crossed := came_by[here]) is not None:
            crossings.append(crossed)
            sides = crossed.facing(here)
            assert sides is not None
            here = sides[1].network
        return crossings[::-1]


def load_domains(path: Path | str) -> Domains:
    """Read a domains file; `InputError` naming what is wrong."""
    text = Path(path).read_text(encoding="utf-8")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(str(path), f"not TOML: {exc}") from exc
    return domains_from(data, str(path))


def shipped_domains(name: str = "usn-peers") -> Domains:
    resource = resources.files("longhaul") / "data" / "domains" / f"{name}.toml"
    return load_domains(str(resource))


def domains_from(data: dict[str, Any], source: str) -> Domains:
    try:
        domains = tuple(
            Domain(str(d["name"]), str(d["network"]), str(d["topology"]))
            for d in data.get("domains", [])
        )
    except KeyError as exc:
        raise InputError(
            source, f"a domain needs name, network and topology; {exc} missing"
        ) from exc
    networks = {d.network for d in domains}
    for domain in domains:
        if not domain.network.startswith(URN_PREFIX):
            raise InputError(source, f"{domain.name}: network must start {URN_PREFIX!r}")
    peerings = []
    for number, entry in enumerate(data.get("peerings", []), 1):
        sides = [
            _side(entry.get(key), networks, f"{source}: peering {number} {key}") for key in "ab"
        ]
        peerings.append(Peering(*sides))
    return Domains(domains, tuple(peerings))


def _side(text: Any, networks: set[str], where: str) -> Stp:
    if not isinstance(text, str):
        raise InputError(where, "give the STP as a string")
    network = max((n for n in networks if text.startswith(n + ":")), key=len, default=None)
    if network is None:
        raise InputError(where, f"{text!r} is in none of the domains listed")
    stp = parse_stp(text, where, network)
    if stp.vlans is None:
        raise InputError(where, "a peering's STP needs the VLANs its side accepts (?vlan=N-M)")
    return stp


def _overlap(a: tuple[int, int] | None, b: tuple[int, int] | None) -> tuple[int, int] | None:
    if a is None or b is None:
        return a or b
    low, high = max(a[0], b[0]), min(a[1], b[1])
    return (low, high) if low <= high else None


def _labelled(stp: Stp, vlans: tuple[int, int] | None) -> Stp:
    return Stp(stp.network, stp.local, vlans)
