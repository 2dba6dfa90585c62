"""Watching a circuit over a run: what its emulator and its TUN devices went through
between the run's start and its end, for the run's `health`."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from longhaul.testbed import emulator, netns
from longhaul.testbed.state import CircuitRecord


@dataclass(frozen=True)
class Watch:
    circuit: CircuitRecord
    since_ns: int
    """The monotonic clock at the start (the emulator's clock too)."""
    tun_dropped: int
    arena_full: int

    @classmethod
    def start(cls, circuit: CircuitRecord) -> Watch:
        return cls(circuit, time.monotonic_ns(), _tun_dropped(circuit), _arena_full(circuit))

    def finish(self) -> dict[str, Any]:
        """The emulator's record of the run (`longhaul-wan` `health`), with the frames the
        TUN devices' queues and the emulator's memory dropped meanwhile."""
        control = Path(self.circuit.control)
        answer = emulator.request(control, {"op": "health", "since_ns": self.since_ns})
        answer.pop("ok", None)
        answer["tun_tx_dropped"] = _tun_dropped(self.circuit) - self.tun_dropped
        answer["arena_full_frames"] = _arena_full(self.circuit) - self.arena_full
        # The notes the answer comes from are 100 ms apart: it covers from the last one
        # before the start.
        answer["covers_s"] = round((answer["to_ns"] - answer["from_ns"]) / 1e9, 3)
        return answer


def _tun_dropped(circuit: CircuitRecord) -> int:
    return sum(
        netns.device_counters(ns, dev).get("tx_dropped", 0)
        for ns, dev in ((circuit.src_ns, circuit.src_dev), (circuit.dst_ns, circuit.dst_dev))
    )


def _arena_full(circuit: CircuitRecord) -> int:
    stats = emulator.request(Path(circuit.control), {"op": "stats"})
    return int(stats.get("engine", {}).get("arena_full_frames", 0))
