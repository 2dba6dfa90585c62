"""What each switch on a circuit's path is told: TL1 for the SONET core switches (as a
CoreDirector takes it) and CLI for the Ethernet edge switches (as a Force10 E300 takes
it). The `log` driver records these; the `cli` driver types them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from longhaul.control.drivers.base import Circuit
from longhaul.topology import NodeKind, Topology

STS3C_MBPS = 150
"""An STS-3c carries 150 Mb/s (149.76 of payload): the unit a cross-connect is sized in."""


@dataclass(frozen=True)
class DeviceCommands:
    node: str
    language: str | None
    """`tl1`, `cli`, or None when this switch is told nothing."""
    lines: list[str]
    note: str | None = None

    def to_json(self) -> dict[str, Any]:
        found: dict[str, Any] = {"node": self.node, "language": self.language,
                                 "lines": self.lines}  # fmt: skip
        if self.note is not None:
            found["note"] = self.note
        return found


def device_commands(topology: Topology, circuit: Circuit, op: str) -> list[DeviceCommands]:
    """Per switch of the path, in order, what `op` (provision, modify, release) sends."""
    steps: list[DeviceCommands] = []
    for index, node_id in enumerate(circuit.path.nodes):
        kind = topology.nodes[node_id].kind
        in_port, out_port = circuit.ports_at(index)
        if kind is NodeKind.HOST:
            continue
        if in_port is None or out_port is None:
            # A reservation that names a switch, not one of its ports, ends inside it:
            # there is no second port to join, so this switch is told nothing.
            port = in_port or out_port
            note = f"ends here on line port {port}: no client port named, nothing to join"
            steps.append(DeviceCommands(node_id, None, [], note))
        elif kind is NodeKind.CORE:
            steps.append(
                DeviceCommands(node_id, "tl1", _tl1(circuit, op, node_id, in_port, out_port))
            )
        else:
            steps.append(DeviceCommands(node_id, "cli", _edge_cli(circuit, op, in_port, out_port)))
    return steps


def _tl1(circuit: Circuit, op: str, node: str, in_port: str, out_port: str) -> list[str]:
    """A bidirectional STS-3c cross-connect group sized to the bandwidth booked."""
    sts = -(-circuit.bandwidth_mbps // STS3C_MBPS)
    ctag = circuit.reservation_id
    ends = f"{in_port.replace('/', '-')},{out_port.replace('/', '-')}"
    if op == "provision":
        return [f"ENT-CRS-STS3C:{node}:{ends}:{ctag}::CKTID={circuit.name},NUMSTS={sts},CCT=2WAY;"]
    if op == "modify":
        return [f"ED-CRS-STS3C:{node}:{ends}:{ctag}::CKTID={circuit.name},NUMSTS={sts};"]
    return [f"DLT-CRS-STS3C:{node}:{ends}:{ctag}::CKTID={circuit.name};"]


def _edge_cli(circuit: Circuit, op: str, in_port: str, out_port: str) -> list[str]:
    """A VLAN joining the two ports, policed to the bandwidth booked."""
    vlan = vlan_of(circuit)
    if op == "release":
        return ["configure", f"no interface vlan {vlan}", "end"]
    lines = ["configure", f"interface vlan {vlan}", f" description {circuit.name}"]
    if op == "provision":
        lines += [f" tagged TenGigabitEthernet {in_port}", f" tagged TenGigabitEthernet {out_port}"]
    lines += [
        f" rate police {circuit.bandwidth_mbps} peak {circuit.bandwidth_mbps}",
        " no shutdown",
        "end",
    ]
    return lines


def vlan_of(circuit: Circuit) -> int:
    """A VLAN id from the reservation id, within the usable 1000..3999."""
    return 1000 + circuit.reservation_id % 3000
