"""The `log` driver: records the exact commands it would send, and sends nothing.

Each operation appends one JSON line to its log: when, what, for which reservation, and
per switch the commands, TL1 for the SONET core switches (as a Ciena CoreDirector takes
them) and CLI for the Ethernet edge switches (as a Force10 E300 takes it). The status of
a circuit is read back from the log, so it survives a restart.
"""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime
from pathlib import Path as FilePath
from typing import Any

from longhaul.control.drivers.base import Circuit, CircuitStatus
from longhaul.topology import NodeKind, Topology

_STS3C_MBPS = 150


class LogDriver:
    name = "log"

    def __init__(self, topology: Topology, log_file: FilePath) -> None:
        self.topology = topology
        self.log_file = log_file
        self._lock = threading.Lock()

    def provision(self, circuit: Circuit) -> None:
        self._record("provision", circuit, self._commands(circuit, "provision"))

    def modify(self, circuit: Circuit, previous: Circuit) -> None:
        commands = self._commands(previous, "release") + self._commands(circuit, "provision")
        if previous.path == circuit.path:
            commands = self._commands(circuit, "modify")
        self._record("modify", circuit, commands)

    def release(self, circuit: Circuit) -> None:
        self._record("release", circuit, self._commands(circuit, "release"))

    def status(self, circuit: Circuit) -> CircuitStatus:
        last = None
        for entry in self.entries():
            if entry["reservation"] == circuit.reservation_id:
                last = entry["op"]
        return CircuitStatus.UP if last in ("provision", "modify") else CircuitStatus.DOWN

    def entries(self) -> list[dict[str, Any]]:
        """Everything recorded so far, oldest first."""
        with self._lock:
            if not self.log_file.exists():
                return []
            lines = self.log_file.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    def _record(self, op: str, circuit: Circuit, commands: list[dict[str, Any]]) -> None:
        entry = {
            "at": datetime.now(UTC).isoformat(),
            "driver": self.name,
            "op": op,
            "reservation": circuit.reservation_id,
            "circuit": circuit.name,
            "bandwidth_mbps": circuit.bandwidth_mbps,
            "links": list(circuit.path.link_ids),
            "commands": commands,
        }
        with self._lock:
            self.log_file.parent.mkdir(parents=True, exist_ok=True)
            with self.log_file.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(entry) + "\n")

    def _commands(self, circuit: Circuit, op: str) -> list[dict[str, Any]]:
        commands: list[dict[str, Any]] = []
        for index, node_id in enumerate(circuit.path.nodes):
            kind = self.topology.nodes[node_id].kind
            in_port, out_port = circuit.ports_at(index)
            if kind is NodeKind.HOST:
                continue
            if in_port is None or out_port is None:
                # A reservation that names a switch, not one of its ports, ends inside it:
                # there is no second port to join, so this switch is told nothing.
                port = in_port or out_port
                note = f"ends here on line port {port}: no client port named, nothing to join"
                commands.append({"node": node_id, "language": None, "lines": [], "note": note})
            elif kind is NodeKind.CORE:
                lines = _tl1(circuit, op, node_id, in_port, out_port)
                commands.append({"node": node_id, "language": "tl1", "lines": lines})
            else:
                lines = _edge_cli(circuit, op, in_port, out_port)
                commands.append({"node": node_id, "language": "cli", "lines": lines})
        return commands


def _tl1(circuit: Circuit, op: str, node: str, in_port: str, out_port: str) -> list[str]:
    """A bidirectional STS-3c cross-connect group sized to the bandwidth booked."""
    sts = -(-circuit.bandwidth_mbps // _STS3C_MBPS)
    ctag = circuit.reservation_id
    ends = f"{in_port.replace('/', '-')},{out_port.replace('/', '-')}"
    if op == "provision":
        return [f"ENT-CRS-STS3C:{node}:{ends}:{ctag}::CKTID={circuit.name},NUMSTS={sts},CCT=2WAY;"]
    if op == "modify":
        return [f"ED-CRS-STS3C:{node}:{ends}:{ctag}::CKTID={circuit.name},NUMSTS={sts};"]
    return [f"DLT-CRS-STS3C:{node}:{ends}:{ctag}::CKTID={circuit.name};"]


def _edge_cli(circuit: Circuit, op: str, in_port: str, out_port: str) -> list[str]:
    """A VLAN joining the two ports, policed to the bandwidth booked."""
    vlan = _vlan(circuit)
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


def _vlan(circuit: Circuit) -> int:
    """A VLAN id from the reservation id, within the usable 1000..3999."""
    return 1000 + circuit.reservation_id % 3000
