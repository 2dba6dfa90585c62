"""The elements of a topology: sites, nodes with ports, links, loop-backs and paths.

These are the shapes of a topology file (TOML) as well as the values the rest of
longhaul works with. Cross-references between them (a link's ends, a loop's links)
are checked by `Topology`, which sees them all at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_serializer, model_validator

DEFAULT_DELAY_US_PER_MILE = 9.5
"""One-way propagation delay per mile of fibre, equipment included (USN loop RTTs)."""

_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._/-]*$"


class Layer(StrEnum):
    """The physical or link layer a link runs at; it sets the usable payload rate."""

    OC192 = "oc192"
    OC48 = "oc48"
    OC12 = "oc12"
    OC3 = "oc3"
    WANPHY = "wanphy"
    LANPHY = "lanphy"
    GIGE = "gige"

    @property
    def payload_mbps(self) -> int:
        return _PAYLOAD_MBPS[self]

    @property
    def default_granularity_mbps(self) -> int:
        # SONET is switched in STS-3c time slots (64 per OC192), Ethernet is policed per Mb/s.
        return 150 if self.is_sonet else 1

    @property
    def is_sonet(self) -> bool:
        return self in (Layer.OC192, Layer.OC48, Layer.OC12, Layer.OC3)


_PAYLOAD_MBPS = {
    Layer.OC192: 9600,
    Layer.OC48: 2400,
    Layer.OC12: 600,
    Layer.OC3: 150,
    Layer.WANPHY: 9290,
    Layer.LANPHY: 10000,
    Layer.GIGE: 1000,
}


class NodeKind(StrEnum):
    CORE = "core"
    """A SONET switch of the backbone (Ciena CoreDirector at USN)."""
    EDGE = "edge"
    """An Ethernet switch at the edge (Force10 E300 at USN)."""
    HOST = "host"
    """An end system with a NIC."""


class _Element(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Site(_Element):
    """A place: a laboratory or a point of presence."""

    id: str = Field(pattern=_NAME_PATTERN)
    name: str = ""
    gateway: str | None = None
    """The node a query naming the site starts or ends at."""
    lat: float | None = Field(default=None, ge=-90, le=90)
    lon: float | None = Field(default=None, ge=-180, le=180)
    """Where the site is, in degrees, for maps."""


class Node(_Element):
    """A switch or host at a site, with the ports its links attach to."""

    id: str = Field(pattern=_NAME_PATTERN)
    site: str
    kind: NodeKind
    model: str = ""
    ports: tuple[str, ...] = ()


class Endpoint(_Element):
    """One end of a link: a port on a node, written `node:port` in files."""

    node: str
    port: str

    @model_validator(mode="before")
    @classmethod
    def _parse(cls, value: Any) -> Any:
        if isinstance(value, str):
            node, sep, port = value.partition(":")
            if not sep or not node or not port:
                raise ValueError(f"expected 'node:port', got {value!r}")
            return {"node": node, "port": port}
        return value

    @model_serializer
    def _as_text(self) -> str:
        return str(self)

    def __str__(self) -> str:
        return f"{self.node}:{self.port}"


class Link(_Element):
    """A full-duplex circuit between two ports; a booking uses it in both directions."""

    id: str = Field(pattern=_NAME_PATTERN)
    a: Endpoint
    b: Endpoint
    layer: Layer
    length_miles: float = Field(ge=0)
    capacity_mbps: int = Field(gt=0)
    granularity_mbps: int = Field(gt=0)
    delay_us: float | None = Field(default=None, ge=0)
    """One-way delay when it is known better than length × 9.5 µs."""

    @model_validator(mode="before")
    @classmethod
    def _layer_defaults(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("layer") in Layer.__members__.values():
            layer = Layer(data["layer"])
            data = {
                "capacity_mbps": layer.payload_mbps,
                "granularity_mbps": layer.default_granularity_mbps,
                **data,
            }
        return data

    @property
    def one_way_delay_us(self) -> float:
        if self.delay_us is not None:
            return self.delay_us
        return self.length_miles * DEFAULT_DELAY_US_PER_MILE

    @property
    def nodes(self) -> tuple[str, str]:
        return (self.a.node, self.b.node)

    def other_end(self, node: str) -> str:
        if node == self.a.node:
            return self.b.node
        if node == self.b.node:
            return self.a.node
        raise ValueError(f"link {self.id!r} does not touch node {node!r}")

    def booked_mbps(self, bandwidth_mbps: int) -> int:
        """What a request of `bandwidth_mbps` takes on this link: whole granules."""
        granules = -(-bandwidth_mbps // self.granularity_mbps)
        return granules * self.granularity_mbps

    def bookable_mbps(self, free_mbps: int) -> int:
        """The largest request this link can carry with `free_mbps` left."""
        return max(0, free_mbps // self.granularity_mbps * self.granularity_mbps)


class Loop(_Element):
    """A loop-back connection: a walk over links that leaves a node and returns to it."""

    name: str = Field(min_length=1)
    start: str
    links: tuple[str, ...] = Field(min_length=1)
    measured_rtt_ms: float | None = Field(default=None, gt=0)
    """The RTT ping measured on the real connection, for comparison."""


@dataclass(frozen=True)
class Hop:
    """One link of a path, in the direction it is crossed."""

    link: Link
    src: str
    dst: str


@dataclass(frozen=True)
class Path:
    """A walk through the topology, hop by hop."""

    hops: tuple[Hop, ...]

    @property
    def nodes(self) -> tuple[str, ...]:
        if not self.hops:
            return ()
        return (self.hops[0].src, *(hop.dst for hop in self.hops))

    @property
    def link_ids(self) -> tuple[str, ...]:
        return tuple(hop.link.id for hop in self.hops)

    @property
    def hop_count(self) -> int:
        return len(self.hops)

    @property
    def length_miles(self) -> float:
        return sum(hop.link.length_miles for hop in self.hops)

    @property
    def one_way_delay_us(self) -> float:
        return sum(hop.link.one_way_delay_us for hop in self.hops)

    @property
    def rtt_ms(self) -> float:
        return 2 * self.one_way_delay_us / 1000

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready description: nodes, links, hop count, length and RTT."""
        return {
            "nodes": list(self.nodes),
            "links": list(self.link_ids),
            "hops": self.hop_count,
            "length_miles": round(self.length_miles, 3),
            "rtt_ms": round(self.rtt_ms, 3),
        }

    def __str__(self) -> str:
        if not self.hops:
            return "(empty path)"
        parts = [self.hops[0].src]
        for hop in self.hops:
            parts.append(f"-[{hop.link.id}]-> {hop.dst}")
        return " ".join(parts)
