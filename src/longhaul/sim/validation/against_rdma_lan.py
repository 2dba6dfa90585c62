"""The simulator's RDMA LAN models against Rashti and Afsahi's comparison of iWARP,
InfiniBand and Myri-10G ("10-Gigabit iWARP Ethernet: comparative performance analysis
with InfiniBand and Myrinet-10G", CAC 2007; `reference/rdma_lan.csv`), one parameter set
per interconnect (`crates/sim/src/rdma/interconnect.rs`).

Each case says what it rests on (`basis`):
- `fitted`: the short-message latencies, user level and MPI. Each adapter's and each MPI
  library's own time per message is fitted to them (`longhaul-sim rdma fit`), so they
  agree by construction; they are listed so the table is whole, and counted apart.
- `specification`: the NE010e's internal PCI-X peak, the bus model's own raw rate.
- `predicted`: everything else — bandwidths, utilisations, both-way figures and the
  eager/rendezvous switch points — from the buses', lines' and libraries' published
  parameters and the fitted per-message times.

Tolerance: 10 % for a number; for a bound ("does not exceed 75 %", "after 32 KB") the
model may not pass it by more than 10 %; a switch point within one power of two. The
study's bandwidths are MB/s of 10^6 bytes computed from ping-pong (bytes over half the
round trip); its "2 GB/s" both ways and "available bandwidth" of Myri-10G are 1 GB/s a
direction; the iWARP card's is its PCI-X bus, 1,064 MB/s (§6.2). Where the text does not
tell MX over Myrinet from MX over Ethernet, both models are compared.
"""

from __future__ import annotations

from typing import Any

from longhaul.analysis import reference
from longhaul.sim import rdma
from longhaul.sim.validation.common import Progress

TABLE = "rdma_lan.csv"
TOLERANCE = 0.10

_INTERCONNECTS = {
    "NetEffect iWARP (NE010e)": ("iwarp",),
    "Mellanox InfiniBand (MHEA28-XT)": ("ib",),
    "Myri-10G (MXoM: MX-10G over Myrinet)": ("mxom",),
    "Myri-10G (MXoE: MX-10G over Ethernet)": ("mxoe",),
    "Myrinet/Myri-10G (MXoM vs MXoE not distinguished in text)": ("mxom", "mxoe"),
}

AVAILABLE_MB_S = {"iwarp": 1064.0, "ib": 1000.0, "mxom": 1000.0, "mxoe": 1000.0}
"""What the study divides by for a one-way utilisation (see the module's text)."""
BOTH_WAYS_MB_S = 2000.0

_FITTED = {"latency_pingpong_short_msg", "mpi_latency_pingpong_short_msg"}

_SUMMARY_KEY = {
    "latency_pingpong_short_msg": "user_latency_us",
    "mpi_latency_pingpong_short_msg": "mpi_latency_us",
    "bandwidth_oneway_peak": "user_peak_mb_s",
    "mpi_bandwidth_bidirectional_peak": "mpi_peak_mb_s",
    "mpi_bandwidth_bothway": "mpi_bothway_1mb_mb_s",
    "internal_pcix_bus_max_bandwidth": "bus_raw_mb_s",
}


def _simulated(metric: str, summary: dict[str, Any], name: str) -> float:
    """The model's figure for one row's metric, in the row's unit."""
    if metric in _SUMMARY_KEY:
        return float(summary[_SUMMARY_KEY[metric]])
    if metric == "bandwidth_oneway_utilization":
        return 100 * float(summary["user_peak_mb_s"]) / AVAILABLE_MB_S[name]
    if metric == "bandwidth_saturation_abstract":
        # §7: "87 % of the internal PCI-X available bandwidth": the both-way figure.
        return 100 * float(summary["mpi_bothway_1mb_mb_s"]) / AVAILABLE_MB_S[name]
    if metric == "mpi_bandwidth_bothway_utilization":
        return 100 * float(summary["mpi_bothway_peak_mb_s"]) / BOTH_WAYS_MB_S
    if metric == "eager_rendezvous_switch_point":
        return float(summary["switch_point_bytes"]) / 1024
    raise ValueError(f"{TABLE}: no simulation for {metric!r}")


def _basis(metric: str) -> str:
    if metric in _FITTED:
        return "fitted"
    if metric == "internal_pcix_bus_max_bandwidth":
        return "specification"
    return "predicted"


def _judge(metric: str, note: str, sim: float, published: float) -> tuple[bool, str]:
    """Whether `sim` agrees with the published value, and the rule applied."""
    if metric == "eager_rendezvous_switch_point":
        return published / 2 <= sim <= published * 2, "within one power of two"
    if "[upper bound]" in note:
        return sim <= published * (1 + TOLERANCE), "at most the bound + 10 %"
    if "[lower bound]" in note:
        return sim >= published * (1 - TOLERANCE), "at least the bound - 10 %"
    return abs(sim - published) <= TOLERANCE * published, "within 10 %"


def _cases(row: Any, summaries: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    metric, note = str(row["metric"]), str(row["note"])
    published = float(row["value"])
    cases = []
    for name in _INTERCONNECTS[str(row["interconnect"])]:
        sim = _simulated(metric, summaries[name], name)
        within, rule = _judge(metric, note, sim, published)
        param = str(row["param"])
        # The parameter tells rows apart only where it names a range end or a size.
        telling = param and "not stated" not in param and param not in ("peak", "n/a")
        cases.append(
            {
                "what": f"{rdma.LABELS[name]}: {metric}" + (f" ({param})" if telling else ""),
                "param": param,
                "table": TABLE,
                "interconnect": name,
                "level": str(row["level"]),
                "sim": round(sim, 3),
                "published": published,
                "unit": str(row["unit"]),
                "error": round((sim - published) / published, 4),
                "rule": rule,
                "basis": _basis(metric),
                "within": within,
            }
        )
    return cases


def validate_rdma_lan(
    progress: Progress | None = None, profiles: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Every row of rdma_lan.csv against the models (`profiles`: the models' profiles
    when already run), with a summary."""
    if profiles is None:
        profiles = rdma.run("profile")
    if progress:
        progress("RDMA LAN: the four interconnects' profiles", 1, 1)
    summaries = {name: profile["summary"] for name, profile in profiles.items()}
    table = reference.load_table(TABLE).rows
    cases = [c for _, row in table.iterrows() for c in _cases(row, summaries)]
    predicted = [c for c in cases if c["basis"] != "fitted"]
    return {
        "units": "MB/s = 10^6 bytes/s; µs; KB = 1,024 bytes; % as in the study",
        "fitted": rdma.run("fit"),
        "cases": cases,
        "summary": {
            "cases": len(cases),
            "within": sum(bool(c["within"]) for c in cases),
            "fitted": len(cases) - len(predicted),
            "predicted": len(predicted),
            "predicted_within": sum(bool(c["within"]) for c in predicted),
        },
    }
