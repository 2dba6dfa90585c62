"""Service Termination Points: where a connection enters and leaves a network.

An STP is named by its network's identifier, a local identifier and a label
(GFD.212 §3.3; the names are OGF network URNs, GFD.202, e.g.
`urn:ogf:network:es.net:2013::star-cr5:10_1_8:+?vlan=1779-1799`). In longhaul the
network identifier is the server's (`serve --nsi-network`), and the local identifier is
what the rest of longhaul calls an end: a node, a site or `node:port`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from longhaul.errors import InputError

URN_PREFIX = "urn:ogf:network:"
VLAN_MIN, VLAN_MAX = 1, 4094
"""IEEE 802.1Q: 0 and 4095 are reserved."""
_LABEL = re.compile(r"^vlan=(\d+)(?:-(\d+))?$")


@dataclass(frozen=True)
class Stp:
    network: str
    """The network's identifier, `urn:ogf:network:...`."""
    local: str
    """The end inside that network: a node, a site or `node:port`."""
    vlans: tuple[int, int] | None = None
    """The VLAN label's range, inclusive (one VLAN: both the same); None: no label."""

    def __str__(self) -> str:
        text = f"{self.network}:{self.local}"
        if self.vlans is None:
            return text
        low, high = self.vlans
        return f"{text}?vlan={low}" if low == high else f"{text}?vlan={low}-{high}"


def parse_stp(text: str, field: str, network: str) -> Stp:
    """The STP `text` names, which must lie in `network` (this domain): `InputError`
    naming `field` otherwise, saying what was expected."""
    if not isinstance(text, str) or not text.startswith(URN_PREFIX):
        raise InputError(field, f"an STP is a URN starting {URN_PREFIX!r}, got {text!r}")
    name, _, label = text.partition("?")
    if not name.startswith(network + ":") or len(name) == len(network) + 1:
        raise InputError(
            field,
            f"{name!r} is not an STP of this network ({network}): it must start "
            f"{network + ':'!r} and name a node, site or node:port after it",
        )
    return Stp(network, name[len(network) + 1 :], _vlans(label, field) if label else None)


def _vlans(label: str, field: str) -> tuple[int, int]:
    found = _LABEL.match(label)
    if found is None:
        raise InputError(field, f"the label must be vlan=N or vlan=N-M, got {label!r}")
    low = int(found.group(1))
    high = int(found.group(2) or low)
    if not VLAN_MIN <= low <= high <= VLAN_MAX:
        raise InputError(field, f"VLANs run {VLAN_MIN}-{VLAN_MAX}, low to high; got {label!r}")
    return low, high
