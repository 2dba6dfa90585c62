"""Circuits worked out from the topology alone: what a circuit along a path imposes (its
rate, the propagation delay, the queue, the layer that limits it) and the loop-backs by
length. The emulated testbed builds these; the simulator simulates them.
"""

from __future__ import annotations

from dataclasses import dataclass

from longhaul.errors import InputError
from longhaul.topology import Link, LoopView, NodeKind, Path, Topology

LOOP_HOSTS = ("ornl-host1", "ornl-host2")


@dataclass(frozen=True)
class CircuitSpec:
    """What one circuit imposes: the same in both directions (a symmetric path)."""

    name: str
    """For people: `loop 1,400 mi`, `reservation 12`."""
    src_host: str
    dst_host: str
    rate_bps: int
    delay_ns: int
    """One way: the round-trip time is twice this."""
    queue_bytes: int | None = None
    """None: one bandwidth-delay product (the emulator's default)."""
    loss: float = 0.0
    loss_seed: int = 1
    """The seed of the emulator's loss decisions (`longhaul-wan run --seed`): circuits
    with the same seed lose the same packets of the same traffic."""
    length_miles: float = 0.0
    links: tuple[str, ...] = ()
    layer: str = "ip"
    """The layer of the line that limits the circuit: the emulator caps the rate at its
    line rate and frames each packet as it does (`ip`: the rate counts IP bytes)."""
    jitter: str | None = None
    """Queueing jitter of a packet-switched core, `hops=N,mean=DURATION` (None: a circuit,
    as SONET: nothing beyond serialization)."""

    @property
    def rtt_ms(self) -> float:
        return 2 * self.delay_ns / 1e6

    @property
    def bdp_bytes(self) -> int:
        return int(self.rate_bps * 2 * self.delay_ns / 8e9)

    def check(self) -> None:
        if self.src_host == self.dst_host:
            raise InputError("hosts", f"a circuit joins two hosts; both ends are {self.src_host}")
        if not 1_000 <= self.rate_bps <= 100_000_000_000:
            raise InputError("rate", f"{self.rate_bps:,} b/s is outside 1 kb/s .. 100 Gb/s")
        if not 0 <= self.delay_ns <= 5_000_000_000:
            raise InputError("delay", f"{self.delay_ns / 1e6:g} ms one way is outside 0 .. 5 s")
        if not 0.0 <= self.loss < 1.0:
            raise InputError("loss", f"{self.loss} is not a probability below 1")


def path_rate_bps(path: Path, bandwidth_mbps: int | None = None) -> int:
    """The rate a circuit on `path` carries: the bandwidth asked for, and never more than
    each link's payload rate (OC192 9.6 Gb/s, WAN-PHY 9.29, LAN-PHY 10) divided by how
    often the path crosses it."""
    mbps = _bottleneck(path)[0]
    if bandwidth_mbps is not None:
        mbps = min(bandwidth_mbps, mbps)
    return mbps * 1_000_000


def path_layer(path: Path) -> str:
    """The layer of the link that limits a circuit on `path` (the first of the slowest)."""
    return _bottleneck(path)[1].layer.value


def _bottleneck(path: Path) -> tuple[int, Link]:
    """The least payload rate along `path` (each link's shared by its crossings), and
    the link it is on."""
    crossings: dict[str, int] = {}
    for hop in path.hops:
        crossings[hop.link.id] = crossings.get(hop.link.id, 0) + 1
    return min(
        ((hop.link.capacity_mbps // crossings[hop.link.id], hop.link) for hop in path.hops),
        key=lambda pair: pair[0],
    )


def path_spec(
    topology: Topology,
    path: Path,
    name: str,
    bandwidth_mbps: int | None = None,
    src_host: str | None = None,
    dst_host: str | None = None,
) -> CircuitSpec:
    """The circuit for `path`: its propagation delay and rate, between its end nodes (or
    the hosts given, for a path that starts and ends at a switch)."""
    if not path.hops:
        raise InputError("path", "an empty path joins nothing")
    src = src_host or path.nodes[0]
    dst = dst_host or path.nodes[-1]
    for field, node in (("src", src), ("dst", dst)):
        if node not in topology.nodes:
            raise InputError(field, f"no node named {node!r}")
    rate_bps = path_rate_bps(path, bandwidth_mbps)
    delay_ns = round(path.one_way_delay_us * 1000)
    return CircuitSpec(
        name=name,
        src_host=src,
        dst_host=dst,
        rate_bps=rate_bps,
        delay_ns=delay_ns,
        queue_bytes=queue_floor_bytes(rate_bps, delay_ns),
        length_miles=path.length_miles,
        links=path.link_ids,
        layer=path_layer(path),
    )


MIN_QUEUE_S = 0.001
"""A switch port holds at least a millisecond of its line rate: with only a 0.28 ms
bandwidth-delay product of queue, the 0.2-mile loop dropped TCP's 64 KB bursts and carried
7.96 Gb/s of one cubic stream; with 1 ms, 8.92 (the most there is: 8.97)."""


def queue_floor_bytes(rate_bps: int, delay_ns: int) -> int | None:
    """The queue a circuit needs beyond the emulator's default (one bandwidth-delay
    product), or None when that default is at least `MIN_QUEUE_S` of the rate."""
    floor = int(rate_bps * MIN_QUEUE_S / 8)
    bdp = int(rate_bps * 2 * delay_ns / 8e9)
    return floor if bdp < floor else None


def loop_spec(topology: Topology, length_miles: float) -> CircuitSpec:
    """The loop-back of about `length_miles` (the nearest within 2 %, or 1 mile), as a
    circuit between the two ORNL hosts through the edge switch's host ports."""
    view = _nearest_loop(topology, length_miles)
    hosts = [h for h in LOOP_HOSTS if h in topology.nodes]
    if len(hosts) != 2:
        raise InputError("loops", f"the topology lacks the loop hosts {', '.join(LOOP_HOSTS)}")
    path = topology.walk(hosts[0], loop_route(topology, view, hosts[0], hosts[1]))
    return path_spec(topology, path, f"loop {miles_label(view.length_miles)} mi")


def loop_route(topology: Topology, view: LoopView, src: str, dst: str) -> tuple[str, ...]:
    """The links from host `src` around the loop to host `dst`: `src`'s link, the loop's,
    `dst`'s link. Both hosts must hang off the switch the loop starts at."""
    host_links = [host_link(topology, h) for h in (src, dst)]
    start = view.loop.start
    for host, link in zip((src, dst), host_links, strict=True):
        if link.other_end(host) != start:
            raise InputError("loops", f"{host} is not attached to the loop's switch {start}")
    return (host_links[0].id, *view.path.link_ids, host_links[1].id)


def miles_label(miles: float) -> str:
    """`0.2`, `1,400`, `34,400`: as USN named its connections."""
    return f"{miles:.1f}" if miles < 10 else f"{round(miles):,}"


def _nearest_loop(topology: Topology, length_miles: float) -> LoopView:
    if not topology.loops:
        raise InputError("loops", f"topology {topology.name!r} has no loop-backs")
    view = min(topology.loops.values(), key=lambda v: abs(v.length_miles - length_miles))
    tolerance = max(1.0, 0.02 * length_miles)
    if abs(view.length_miles - length_miles) > tolerance:
        lengths = sorted({round(v.length_miles, 1) for v in topology.loops.values()})
        listed = ", ".join(f"{x:g}" for x in lengths)
        raise InputError("loops", f"no loop of {length_miles:g} miles; the loops are {listed}")
    return view


def host_link(topology: Topology, host: str) -> Link:
    """The link on a host's port: its interface."""
    node = topology.nodes[host]
    if node.kind is not NodeKind.HOST or not node.ports:
        raise InputError("host", f"{host} is not a host with a port")
    link = topology.link_at(host, node.ports[0])
    if link is None:
        raise InputError("host", f"{host}'s port {node.ports[0]} is not connected")
    return link
