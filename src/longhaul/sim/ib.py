"""InfiniBand runs of longhaul-sim: one perftest-shaped test (`longhaul-sim ib`) on a
USN loop, described once and turned into the simulator's arguments."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from longhaul.sim import runner
from longhaul.topology import usn
from longhaul.topology.circuits import loop_spec

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
        if self.bidirectional:
            args.append("-b")
        return args


def loop_rtt_ms(length_miles: float) -> float:
    """The round trip of USN's loop of about `length_miles` (its published RTT)."""
    return loop_spec(usn(), length_miles).rtt_ms


def run(test: IbRun) -> dict[str, Any]:
    """The simulator's report of one test."""
    return runner.run_ib(test.args())
