"""What the emulated testbed builds, worked out without touching the machine.

A *host* is a network namespace named after a topology node (`lh-ornl-host1`). A
*circuit* joins two hosts through one `longhaul-wan` process: a TUN device in each host
namespace, a /30 of 198.18.0.0/16 between them, and the path's propagation delay and
rate in each direction. Loop-backs (both ends at ORNL) join two hosts at the same site.
The cross-traffic host (`lh-cross`) hangs off a circuit's source host by a veth pair
with an address in 198.19.0.0/16, and its UDP is routed over the circuit.

Everything here is a pure function of the topology and the request; `testbed.py` makes
it real.
"""

from __future__ import annotations

import ipaddress
import os
import re
from dataclasses import dataclass

from longhaul.errors import InputError
from longhaul.topology import Link, LoopView, NodeKind, Path, Topology

DEFAULT_PREFIX = "lh-"


def prefix() -> str:
    """What every namespace the testbed makes starts with (`down --all` removes them all):
    `$LONGHAUL_TESTBED_PREFIX`, else `lh-` (tests use their own, to leave a testbed that
    is up alone)."""
    return os.environ.get("LONGHAUL_TESTBED_PREFIX", DEFAULT_PREFIX)


def cross_host() -> str:
    """The namespace of the cross-traffic host."""
    return prefix() + "cross"


DEVICE_PREFIX = "lhc"
"""Every TUN device is `lhc<circuit number>a` or `...b`; veths are `lhx<number>h|x`."""
CIRCUITS_NET = ipaddress.IPv4Network("198.18.0.0/16")
CROSS_NET = ipaddress.IPv4Network("198.19.0.0/16")
MAX_CIRCUITS = CIRCUITS_NET.num_addresses // 4 - 1

LOOP_HOSTS = ("ornl-host1", "ornl-host2")
"""The two 10GigE hosts at ORNL that USN's loop-backs joined."""
DEFAULT_LOOPS_MILES = (0.2, 1400.0, 6600.0, 8600.0)


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


def host_namespace(host: str) -> str:
    """The namespace of topology node `host`: `lh-` and the name, made safe."""
    safe = re.sub(r"[^a-z0-9-]+", "-", host.lower()).strip("-")
    if not safe:
        raise InputError("host", f"{host!r} gives no usable namespace name")
    return prefix() + safe


def device_names(number: int) -> tuple[str, str]:
    """The TUN devices of circuit `number`, in its source and destination hosts."""
    return f"{DEVICE_PREFIX}{number}a", f"{DEVICE_PREFIX}{number}b"


def circuit_addresses(number: int) -> tuple[str, str]:
    """The source and destination addresses of circuit `number` (a /30 each)."""
    if not 1 <= number <= MAX_CIRCUITS:
        raise InputError("circuit", f"circuit numbers run from 1 to {MAX_CIRCUITS}")
    base = CIRCUITS_NET.network_address + 4 * number
    return str(base + 1), str(base + 2)


def cross_addresses(number: int) -> tuple[str, str]:
    """The veth addresses joining the cross-traffic host to the source of circuit `number`:
    (the circuit's source host side, the cross-traffic host side)."""
    base = CROSS_NET.network_address + 4 * number
    return str(base + 1), str(base + 2)


def cross_devices(number: int) -> tuple[str, str]:
    return f"lhx{number}h", f"lhx{number}x"


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
    host_links = [_host_link(topology, h) for h in hosts]
    start = view.loop.start
    for host, link in zip(hosts, host_links, strict=True):
        if link.other_end(host) != start:
            raise InputError("loops", f"{host} is not attached to the loop's switch {start}")
    path = topology.walk(hosts[0], (host_links[0].id, *view.path.link_ids, host_links[1].id))
    return path_spec(topology, path, f"loop {miles_label(view.length_miles)} mi")


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


def _host_link(topology: Topology, host: str) -> Link:
    node = topology.nodes[host]
    if node.kind is not NodeKind.HOST or not node.ports:
        raise InputError("host", f"{host} is not a host with a port")
    link = topology.link_at(host, node.ports[0])
    if link is None:
        raise InputError("host", f"{host}'s port {node.ports[0]} is not connected")
    return link


def parse_loops(text: str) -> tuple[float, ...]:
    """`0.2,1400,6600` as lengths in miles."""
    values = []
    for raw in text.split(","):
        part = raw.strip().replace("_", "")
        if not part:
            continue
        try:
            miles = float(part)
        except ValueError:
            raise InputError("--loops", f"{part!r} is not a length in miles") from None
        if miles < 0:
            raise InputError("--loops", f"{part} miles is negative")
        values.append(miles)
    if not values:
        raise InputError("--loops", "name at least one loop length, e.g. 0.2,1400")
    return tuple(values)


@dataclass(frozen=True)
class Sysctls:
    """What the testbed sets: in each host namespace, and host-wide while it is up."""

    namespace: dict[str, str]
    host: dict[tuple[str, int], int]
    """Host-wide minimums, by sysctl and position in its list of values: raised to these
    if lower, restored on `down`."""


PAGE_BYTES = 4096
MIN_BUFFER_BYTES = 16 * 1024 * 1024


def sysctls_for(specs: list[CircuitSpec], memory_bytes: int) -> Sysctls:
    """Socket buffers big enough for the largest bandwidth-delay product on the testbed.

    A TCP sender fills the path and the queue (one BDP each), and the receive window
    takes about twice the data it holds, so buffers go to four BDPs. Host-wide, TCP may
    use a quarter of memory before it feels pressure and half at most, so eight streams
    with big windows do not starve each other.
    """
    bdp = max((s.bdp_bytes for s in specs), default=0)
    buffer = max(MIN_BUFFER_BYTES, 4 * bdp)
    buffer = min(buffer, 2**31 - 1)
    namespace = {
        "net.ipv4.tcp_rmem": f"4096 131072 {buffer}",
        "net.ipv4.tcp_wmem": f"4096 16384 {buffer}",
        # A connection must not start from what an earlier one learnt about the path.
        "net.ipv4.tcp_no_metrics_save": "1",
        # Quiet devices: no router solicitations on an idle link being timed.
        "net.ipv6.conf.all.disable_ipv6": "1",
        "net.ipv6.conf.default.disable_ipv6": "1",
        # Hosts forward the cross-traffic host's UDP onto their circuits.
        "net.ipv4.ip_forward": "1",
        "net.ipv4.conf.all.rp_filter": "0",
        "net.ipv4.conf.default.rp_filter": "0",
    }
    pages = memory_bytes // PAGE_BYTES
    host = {
        ("net.core.rmem_max", 0): buffer,
        ("net.core.wmem_max", 0): buffer,
        ("net.ipv4.tcp_mem", 1): pages // 4,  # pressure
        ("net.ipv4.tcp_mem", 2): pages // 2,  # the most
    }
    return Sysctls(namespace, host)
