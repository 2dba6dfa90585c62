"""The simulator as a campaign tool (`tool = "sim"`): tcp_throughput on the circuit the
testbed would build, in longhaul-sim, with the host presets and loss models only a
simulated run has. Simulated campaigns run through `sim.campaign` (side by side, on
Dask if asked), not on the testbed, so this tool never measures a circuit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from longhaul.measure.params import Param
from longhaul.measure.tools import ToolError
from longhaul.sim import runner
from longhaul.sim.scenarios import DEFAULT_HOST, HOST_PRESET_MTU_BYTES, HOST_PRESETS, SIM_CC

if TYPE_CHECKING:
    from longhaul.measure.campaign import Run
    from longhaul.measure.rows import Row
    from longhaul.testbed import CircuitRecord, Testbed

SIM_PACKETS_PER_S = 6e6
"""Data packets longhaul-sim moves per wall-clock second on one core, rounded down from
`longhaul bench sim` (8-10 million at 10 Gb/s with MTU 1500 on a 2-core VM)."""
SIM_LINE_RATE_BPS = 10e9
"""What no simulated host sends faster than (the presets' 10GigE NICs)."""


class SimTool:
    name = "sim"
    test = "tcp_throughput"
    params = (
        Param("host", str, DEFAULT_HOST, grid=False, choices=HOST_PRESETS),
        # The hosts' socket-buffer ceilings (tcp_rmem/tcp_wmem maxima); 0: the preset's.
        Param("buffer_bytes", int, 0, grid=False, low=0, high=1 << 31),
        Param("loss_per_packet", float, 0.0, grid=False, low=0, high=0.1),
        Param("loss_per_mile", float, 0.0, grid=False, low=0, high=1e-4),
    )
    cc = SIM_CC
    cc_source = "the simulator"

    def missing(self) -> str | None:
        return runner.missing()

    def estimate_s(self, planned: Run) -> float:
        values = planned.test.values
        mtu_bytes = HOST_PRESET_MTU_BYTES[str(values.get("host", DEFAULT_HOST))]
        packets = SIM_LINE_RATE_BPS / 8 / mtu_bytes * (values["duration_s"] + values["warmup_s"])
        return float(0.2 + packets / SIM_PACKETS_PER_S)

    def measure(
        self, planned: Run, circuit: CircuitRecord, testbed: Testbed, row: Row
    ) -> dict[str, Any]:
        raise ToolError("simulated runs run on the simulator: `longhaul campaign run` does so")


TOOL = SimTool()
