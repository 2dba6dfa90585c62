"""The `log` driver: records the exact commands it would send, and sends nothing.

Each operation appends one JSON line to its log: when, what, for which reservation, and
per switch the commands (`commands.device_commands`: TL1 for the SONET core switches, CLI
for the Ethernet edge switches), as the `cli` driver types them. The status of
a circuit is read back from the log, so it survives a restart.
"""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime
from pathlib import Path as FilePath
from typing import Any

from longhaul.control.drivers.base import Circuit, CircuitStatus
from longhaul.control.drivers.commands import device_commands
from longhaul.topology import Topology


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

    def close(self) -> None:
        pass  # every entry is on disk as it is made

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
        return [step.to_json() for step in device_commands(self.topology, circuit, op)]
