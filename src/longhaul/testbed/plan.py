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
from longhaul.topology.circuits import (
    CircuitSpec,
)

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

"""The two 10GigE hosts at ORNL that USN's loop-backs joined."""
DEFAULT_LOOPS_MILES = (0.2, 1400.0, 6600.0, 8600.0)


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
