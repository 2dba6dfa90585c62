"""InfiniBand runs of longhaul-sim: one perftest-shaped test (`longhaul-sim ib`) on a
USN loop, described once and turned into the simulator's arguments."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from longhaul.measure.params import Param
from longhaul.measure.tools import ToolError
from longhaul.sim import runner
from longhaul.topology import usn
from longhaul.topology.circuits import loop_spec

if TYPE_CHECKING:
    from longhaul.measure.campaign import Run
    from longhaul.measure.rows import Row
    from longhaul.testbed import CircuitRecord, Testbed

PERFTEST_MB = 1 << 20
"""perftest prints MB/sec as bytes / 2^20 (`print_report` divides by 0x100000)."""

WAN_LAYERS = {"sonet": "oc192", "wanphy": "wanphy", "lanphy": "lanphy"}
"""USN's names for a range extender's WAN side, and the simulator's layers."""


@dataclass(frozen=True)
class IbRun:
    """One test: perftest's tool, options and the loop it runs over."""

    tool: str
    """send_bw, write_bw, read_bw, rdma_bw, send_lat, write_lat, read_lat."""
    size_bytes: int
    length_miles: float
    service: str = "RC"
    wan: str = "sonet"
    iters: int | None = None
    """None: the tool's own default (rdma_bw 1000, write_bw 5000, send_bw 1000, ...)."""
    qps: int = 1
    bidirectional: bool = False
    connection: str = "cm"
    outstanding_reads: int = 4
    hca: str = "sdr"
    cross_traffic_gbps: float = 0.0
    """UDP onto the WAN line beside the extenders' frames (USN: 1-4 Gb/s)."""
    side_ports_gbps: float = 0.0
    """Through the extenders' two 1GigE side ports onto the same line (at most 2)."""
    side_tcp_streams: int = 0
    """CUBIC streams between hosts on the extenders' side ports, beside the IB traffic."""

    def args(self) -> list[str]:
        args = [
            self.tool,
            "-s",
            str(self.size_bytes),
            "-c",
            self.service,
            "-q",
            str(self.qps),
            "-o",
            str(self.outstanding_reads),
            "--connection",
            self.connection,
            "--rtt-ms",
            f"{loop_rtt_ms(self.length_miles):.6g}",
            "--wan",
            WAN_LAYERS.get(self.wan, self.wan),
            "--hca",
            self.hca,
        ]
        if self.iters is not None:
            args += ["-n", str(self.iters)]
        if self.cross_traffic_gbps:
            args += ["--cross-gbps", f"{self.cross_traffic_gbps:g}"]
        if self.side_ports_gbps:
            args += ["--side-ports-gbps", f"{self.side_ports_gbps:g}"]
        if self.side_tcp_streams:
            args += ["--side-tcp-streams", str(self.side_tcp_streams)]
        if self.bidirectional:
            args.append("-b")
        return args


def loop_rtt_ms(length_miles: float) -> float:
    """The round trip of USN's loop of about `length_miles` (its published RTT)."""
    return loop_spec(usn(), length_miles).rtt_ms


def run(test: IbRun) -> dict[str, Any]:
    """The simulator's report of one test."""
    return runner.run_ib(test.args())


IB_PACKETS_PER_S = 5e6
"""Packets longhaul-sim moves per wall-clock second in an IB run, rounded down from
`longhaul-sim ib` (about 5 million 2 KB packets a second, RDMA write at 8 Gb/s, a 2-core
VM): what the campaign's estimate divides by."""


class IbTool:
    """The simulator's InfiniBand as a campaign tool (`tool = "ib_rdma"`, test
    `ib_throughput`): one perftest bandwidth run per message size, on the loop's round
    trip, between range extenders. Runs through `sim.campaign`, never on the testbed."""

    name = "ib_rdma"
    test = "ib_throughput"
    params = (
        Param("operation", str, "write", grid=False, choices=("write", "send", "read")),
        Param("service", str, "RC", grid=False, choices=("RC", "UC", "UD")),
        Param("wan", str, "sonet", grid=False, choices=tuple(WAN_LAYERS)),
        # perftest's `-n`: 1000 is rdma_bw.c's default (the USN RDMA profile's tool).
        Param("iters", int, 1000, grid=False, low=2, high=1_000_000),
        Param("qps", int, 1, grid=False, low=1, high=64),
        Param("connection_setup", str, "cm", grid=False, choices=("cm", "socket")),
        Param("hca", str, "sdr", grid=False, choices=("sdr", "ddr")),
        Param("side_ports_gbps", float, 0.0, grid=False, low=0, high=2),
        Param("side_tcp_streams", int, 0, grid=False, low=0, high=64),
    )
    cc: tuple[str, ...] = ()
    cc_source = ""

    def missing(self) -> str | None:
        return runner.missing()

    def estimate_s(self, planned: Run) -> float:
        values, size = planned.test.values, int(planned.params["message_bytes"])
        packets = int(values["iters"]) * int(values["qps"]) * max(1, size // 2048)
        return 0.1 + packets / IB_PACKETS_PER_S

    def measure(
        self, planned: Run, circuit: CircuitRecord, testbed: Testbed, row: Row
    ) -> dict[str, Any]:
        raise ToolError("simulated runs run on the simulator: `longhaul campaign run` does so")


def ib_run(planned: Run) -> IbRun:
    """The simulator's test for one campaign run."""
    values = planned.test.values
    tool = {"write": "rdma_bw", "send": "send_bw", "read": "read_bw"}[values["operation"]]
    return IbRun(
        tool,
        int(planned.params["message_bytes"]),
        planned.connection.length_miles,
        service=values["service"],
        wan=values["wan"],
        iters=values["iters"],
        qps=values["qps"],
        connection=values["connection_setup"],
        hca=values["hca"],
        cross_traffic_gbps=float(planned.params["cross_traffic_gbps"]),
        side_ports_gbps=float(values["side_ports_gbps"]),
        side_tcp_streams=int(values["side_tcp_streams"]),
    )


TOOL = IbTool()
