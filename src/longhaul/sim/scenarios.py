"""Scenarios for `longhaul-sim`, built from the topology and a campaign's parameters, so
a simulated run sees the same circuit (rate, delay, queue) the emulated one would."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from longhaul.topology.circuits import CircuitSpec

DEFAULT_HOST = "usn-type-1"
"""USN's 10GigE hosts of 2008 (PCI-Express, Linux 2.6.18 auto-tuning ceilings)."""
HOST_PRESET_MTU_BYTES = {
    "usn-type-1": 9000,
    "usn-type-2": 9000,
    "usn-type-3": 9000,
    "linux-2.6.18": 1500,
    "linux-6.x": 1500,
}
"""The host presets longhaul-sim knows (`longhaul-sim presets`) and their MTUs, which set
what a run costs: the simulator's work is per packet."""
HOST_PRESETS = tuple(HOST_PRESET_MTU_BYTES)
SIM_CC = ("reno", "bic", "cubic", "htcp", "highspeed", "scalable", "vegas")
"""The congestion controls longhaul-sim models."""


@dataclass(frozen=True)
class TcpRun:
    """One simulated iperf3-like run: n streams of one congestion control for a while."""

    cc: str
    streams: int
    duration_s: float
    warmup_s: float
    host: str = DEFAULT_HOST
    buffer_bytes: int = 0
    """Both hosts' socket-buffer ceilings (send and receive); 0 keeps the preset's."""
    loss: float = 0.0
    cross_traffic_gbps: float = 0.0
    seed: int = 1


def random_loss(length_miles: float, loss_per_packet: float, loss_per_mile: float) -> float:
    """The random loss per packet of a loop: a floor every path has (hosts, NICs, the
    edge conversions) plus a share for every mile of line and equipment it crosses."""
    return loss_per_packet + loss_per_mile * length_miles


def tcp_scenario(circuit: CircuitSpec, run: TcpRun) -> dict[str, Any]:
    """The scenario JSON (as a dict) for `run` over `circuit`."""
    path: dict[str, Any] = {
        "rate_bps": float(circuit.rate_bps),
        "rtt_ms": circuit.rtt_ms,
        "queue_bytes": circuit.queue_bytes or circuit.bdp_bytes,
        "loss": {"random": run.loss or circuit.loss},
    }
    if run.cross_traffic_gbps > 0:
        path["cross_traffic_bps"] = run.cross_traffic_gbps * 1e9
    scenario: dict[str, Any] = {
        "duration_s": run.duration_s,
        "omit_s": run.warmup_s,
        "interval_s": 1.0,
        "cc": run.cc,
        "streams": run.streams,
        "seed": run.seed,
        "path": path,
        "host_preset": run.host,
    }
    if run.buffer_bytes:
        ceilings = {"snd_buf_max_bytes": run.buffer_bytes, "rcv_buf_max_bytes": run.buffer_bytes}
        scenario["hosts"] = {"sender": ceilings, "receiver": dict(ceilings)}
    return scenario
