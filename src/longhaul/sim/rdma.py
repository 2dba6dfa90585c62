"""RDMA-capable interconnects on a LAN in the simulator (`longhaul-sim rdma`): NetEffect
iWARP, Mellanox InfiniBand and Myri-10G MX (over Myrinet and over Ethernet) as Rashti and
Afsahi compared them (CAC 2007), each model's constants cited in
`crates/sim/src/rdma/interconnect.rs`; and the campaign tool that runs one of their
benchmarks per run."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from longhaul.measure.params import Param
from longhaul.measure.rows import Row, Source
from longhaul.measure.tools import ToolError
from longhaul.sim import runner
from longhaul.topology import usn
from longhaul.topology.circuits import loop_spec

if TYPE_CHECKING:
    from longhaul.measure.campaign import Run
    from longhaul.testbed import CircuitRecord, Testbed

INTERCONNECTS = ("iwarp", "ib", "mxom", "mxoe")
"""The models: NetEffect NE010e iWARP, Mellanox MHEA28-XT InfiniBand, Myri-10G MX over
Myrinet, and over Ethernet."""

LABELS = {
    "iwarp": "iWARP (NetEffect NE010e)",
    "ib": "InfiniBand (Mellanox MHEA28-XT)",
    "mxom": "Myri-10G MX over Myrinet",
    "mxoe": "Myri-10G MX over Ethernet",
}

SWEEPS = ("connections", "logp", "reuse", "queue", "wan")


def run(what: str, interconnect: str = "all", *args: str) -> dict[str, Any]:
    """`longhaul-sim rdma WHAT`: profile, a sweep, point or fit, keyed by interconnect
    (in the order of `INTERCONNECTS`)."""
    found = runner.run_rdma([what, "--interconnect", interconnect, *args])
    return {name: found[name] for name in INTERCONNECTS if name in found}


@dataclass(frozen=True)
class RdmaPoint:
    """One benchmark run of one interconnect (`longhaul-sim rdma point`)."""

    interconnect: str
    message_bytes: int
    mpi: bool = False
    connections: int = 1
    reuse_pct: int = 100
    queue_entries: int = 0
    unexpected_entries: int = 0
    rtt_ms: float = 0.0
    """0: both hosts in one machine room; otherwise the loop between the switch ports."""

    def args(self) -> list[str]:
        args = [
            "point",
            "--interconnect",
            self.interconnect,
            "--size",
            str(self.message_bytes),
            "--connections",
            str(self.connections),
            "--reuse-pct",
            str(self.reuse_pct),
            "--queue-entries",
            str(self.queue_entries),
            "--unexpected-entries",
            str(self.unexpected_entries),
            "--rtt-ms",
            f"{self.rtt_ms:.6g}",
        ]
        if self.mpi:
            args.append("--mpi")
        return args


def measure_point(point: RdmaPoint) -> dict[str, Any]:
    """The simulator's figures for one point."""
    return dict(runner.run_rdma(point.args())[point.interconnect])


class RdmaTool:
    """The RDMA LAN models as a campaign tool (`tool = "rdma_lan"`, test `rdma_lan`): one
    ping-pong (latency, the bandwidth it implies, and both-way bandwidth) per run. With
    `placement = "machine_room"` (the default) the hosts share a switch and the
    campaign's loop only names the run; with `"loop"` the loop's round trip lies
    between the switch ports (the what-if). Runs through `sim.campaign`."""

    name = "rdma_lan"
    test = "rdma_lan"
    params = (
        Param("level", str, "user", grid=False, choices=("user", "mpi")),
        Param("placement", str, "machine_room", grid=False, choices=("machine_room", "loop")),
    )
    cc: tuple[str, ...] = ()
    cc_source = ""

    def missing(self) -> str | None:
        return runner.missing()

    def estimate_s(self, planned: Run) -> float:
        return 0.05 + int(planned.params["message_bytes"]) / 1e9

    def measure(
        self, planned: Run, circuit: CircuitRecord, testbed: Testbed, row: Row
    ) -> dict[str, Any]:
        raise ToolError("simulated runs run on the simulator: `longhaul campaign run` does so")


def rdma_point(planned: Run) -> RdmaPoint:
    """The simulator's point for one campaign run."""
    values, params = planned.test.values, planned.params
    on_loop = values["placement"] == "loop"
    return RdmaPoint(
        interconnect=str(params["interconnect"]),
        message_bytes=int(params["message_bytes"]),
        mpi=values["level"] == "mpi",
        connections=int(params["connections"]),
        reuse_pct=int(params["reuse_pct"]),
        queue_entries=int(params["queue_entries"]),
        unexpected_entries=int(params["unexpected_entries"]),
        rtt_ms=loop_spec(usn(), planned.connection.length_miles).rtt_ms if on_loop else 0.0,
    )


def rdma_row_of(run: Run, campaign: str, report: dict[str, Any]) -> Row:
    """The tidy row of one point: the ping-pong's bandwidth as throughput (10^9 bits a
    second), its round trip as rtt_ms, the rest in `extra`."""
    point = rdma_point(run)
    return Row(
        campaign=campaign,
        test=run.test.name,
        tool="rdma_lan",
        source=Source.SIMULATED,
        connection=run.connection.name if point.rtt_ms else "machine room",
        length_miles=run.connection.length_miles if point.rtt_ms else 0.0,
        repetition=run.repetition,
        started_at=datetime.now(UTC),
        message_bytes=point.message_bytes,
        variant=f"{point.interconnect} {'mpi' if point.mpi else 'user'}",
        throughput_gbps=float(report["bandwidth_mb_s"]) * 8 / 1000,
        rtt_ms=2 * float(report["latency_us"]) / 1000,
        extra={
            "interconnect": point.interconnect,
            "latency_us": report["latency_us"],
            "bandwidth_mb_s": report["bandwidth_mb_s"],
            "bothway_mb_s": report["bothway_mb_s"],
            "protocol": report["protocol"],
            "connections": point.connections,
            "reuse_pct": point.reuse_pct,
            "queue_entries": point.queue_entries,
            "unexpected_entries": point.unexpected_entries,
        },
    )


TOOL = RdmaTool()
