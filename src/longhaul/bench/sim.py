"""`longhaul bench sim`'s comparison with ns-3: both simulators on one scaled case, timed
in the same run.

The bench's own cases (10 Gb/s over 163 ms) would keep ns-3 busy for hours: its
TcpTxBuffer walks the whole sent list for every segment, so its cost grows with the
square of the window. The scaled case keeps the shape (one loss-free CUBIC flow that
fills its line, a queue of one bandwidth-delay product, the window capped at 1.5) at a
tenth of the rate and a sixth of the RTT, which ns-3 runs in 20 to 30 seconds.
"""

from __future__ import annotations

import statistics
from typing import Any

from longhaul.sim import ns3, runner
from longhaul.sim.validation.against_ns3 import MSS_BYTES, ns3_scenario

SCALED_RATE_BPS = 1_000_000_000
SCALED_RTT_MS = 26.8
SCALED_SIMULATED_S = 4.0
SIM_REPETITIONS = 5
"""longhaul-sim's runs of the scaled case (a few hundredths of a second each, where a
moment of the machine's counts): its time is their median. ns-3's 20-30 s run once."""


def scaled_case() -> ns3.Case:
    bdp_bytes = round(SCALED_RATE_BPS / 8 * SCALED_RTT_MS / 1000)
    return ns3.Case(
        cc="cubic",
        streams=1,
        rate_bps=SCALED_RATE_BPS,
        rtt_ms=SCALED_RTT_MS,
        loss=0.0,
        queue_bytes=bdp_bytes,
        window_bytes=3 * bdp_bytes // 2,
        mss_bytes=MSS_BYTES,
        duration_s=SCALED_SIMULATED_S - 1.0,
        warmup_s=1.0,
    )


def against_ns3() -> dict[str, Any]:
    """The scaled case through ns-3 and longhaul-sim: each one's wall-clock seconds for
    the same simulated seconds (longhaul-sim's the median of `SIM_REPETITIONS` runs) and
    goodput, and `speedup`, how many times faster longhaul-sim ran. Raises
    ns3.Ns3UnavailableError when ns-3 is not installed."""
    case = scaled_case()
    theirs = ns3.timed(case)
    # One thread, as ns-3 has: the ratio compares the simulators, not the cores.
    runs = [runner.run_scenario(ns3_scenario(case), threads=1) for _ in range(SIM_REPETITIONS)]
    ours = runs[0]
    sim_wall_s = statistics.median(float(r["perf"]["wall_s"]) for r in runs)
    return {
        "case": {
            "cc": case.cc,
            "rate_bps": case.rate_bps,
            "rtt_ms": case.rtt_ms,
            "simulated_s": case.duration_s + case.warmup_s,
        },
        "ns3_wall_s": theirs["wall_s"],
        "sim_wall_s": round(sim_wall_s, 4),
        "ns3_goodput_bps": theirs["goodput_bps"],
        "sim_goodput_bps": ours["end"]["sum_received"]["bits_per_second"],
        "speedup": round(theirs["wall_s"] / max(sim_wall_s, 1e-6), 1),
    }
