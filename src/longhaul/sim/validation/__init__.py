"""`longhaul sim validate`: longhaul-sim held against three yardsticks.

- ns-3 (`ns3`, `against_ns3`): shared scenarios in groups — at line rate, with random
  loss, with a small queue — every variant ns-3 has, 1 and 8 streams through 1 Gb/s:
  mean goodput within 10 %, or the miss explained by a traced difference of models.
- the kernel (`kernel`, `against_kernel`): reno and cubic through the emulated testbed against the
  simulator on the same circuit (needs root), within 10 %.
- InfiniBand (`ib`, `against_ib`): the published RDMA profile over range extenders and the
  RC/UC/UD transport study, from one HCA and extender model: RDMA write within 2 % and its
  decrease per mile in range, transport figures within 15 %, the qualitative findings.
- RDMA on a LAN (`rdma-lan`, `against_rdma_lan`): iWARP, InfiniBand and Myri-10G against
  Rashti and Afsahi's comparison, one parameter set per interconnect: every latency and
  bandwidth within 10 %, every eager/rendezvous switch point within a power of two; the
  latencies the per-message times are fitted to are marked as such.
- USN (`usn`, `against_usn`): the published distance profile of BIC and HTCP on host types I/II
  (`reference/tcp_profiles.csv`, `tcp_points.csv`), from one choice of path and host
  parameters (`USN_MODEL`, no fitting per cell): T̄ and average DPM within 25 %, and the
  qualitative findings.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from longhaul.sim import ns3, runner
from longhaul.sim.validation.against_ib import validate_ib
from longhaul.sim.validation.against_kernel import validate_kernel
from longhaul.sim.validation.against_ns3 import validate_ns3
from longhaul.sim.validation.against_rdma_lan import validate_rdma_lan
from longhaul.sim.validation.against_usn import USN_MODEL, validate_usn
from longhaul.sim.validation.common import Progress

PARTS = ("ns3", "kernel", "usn", "ib", "rdma-lan")
DEFAULT_PARTS = ("ns3", "kernel", "usn")
"""What `validate` runs unless told: the TCP yardsticks (the IB and RDMA LAN suites are
asked for by name)."""


def validate(
    parts: Sequence[str] = DEFAULT_PARTS,
    workers: int | None = None,
    progress: Progress | None = None,
    rerun_ns3: bool = False,
) -> dict[str, Any]:
    """Every part asked for; a part that cannot run here says why instead of a figure."""
    found: dict[str, Any] = {}
    for part in parts:
        try:
            if part == "ns3":
                found[part] = validate_ns3(workers, progress, rerun_ns3)
            elif part == "kernel":
                found[part] = validate_kernel(progress)
            elif part == "ib":
                found[part] = validate_ib(workers, progress)
            elif part == "rdma-lan":
                found[part] = validate_rdma_lan(progress)
            else:
                found[part] = validate_usn(USN_MODEL, workers, progress)
        except (ns3.Ns3UnavailableError, runner.SimUnavailableError) as exc:
            found[part] = {"skipped": str(exc)}
        except RuntimeError as exc:  # the testbed's errors: no root, no namespaces
            found[part] = {"skipped": str(exc)}
    summaries = [r["summary"] for r in found.values() if "summary" in r]
    if summaries:
        found["summary"] = {
            "cases": sum(s["cases"] for s in summaries),
            "within": sum(s["within"] for s in summaries),
        }
    return found
