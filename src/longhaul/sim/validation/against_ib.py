"""The simulator's InfiniBand against USN's published IB results over range extenders,
with one parameter set for every case (`longhaul.sim.ib.IbRun` defaults, the HCA and
Longbow of `crates/sim/src/ib/run.rs`, each constant cited there).

- RDMA write throughput (`ib_rdma.csv`): ib_rdma_bw with RDMA CM, 8 MB messages, over
  SONET and WAN-PHY loops of 0.2 to 8,600 miles: each within 2 %, and each connection's
  average decrease per mile between 0.008 and 0.03 Mb/s per mile (the shape).
- Transport services (`ib_transport.csv`): RC/UC/UD send, RDMA write with 4 QPs, RDMA
  read, latency, at 1,400 and 8,600 miles: each number within 15 %, and the qualitative
  findings (RDMA read low at 8,600 miles; UC's peak the same at both lengths).

Units: perftest prints MB/sec as 2^20 bytes a second (`print_report` in its sources);
the figures compared are perftest's. The papers' Gb/s are perftest's MB/sec x 8 / 1000:
RC's 935 MB/sec at 1,400 miles (transport study) is the 7.47-7.48 Gb/s of the RDMA
profile on the same loop, and UC's 941 is the 4X SDR link's payload limit in 2^20 bytes
(8 Gb/s x 2048 / 2074 = 941.7). That reading is declared here, once, for every case.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from longhaul.analysis import reference
from longhaul.sim import runner
from longhaul.sim.ib import IbRun, run
from longhaul.sim.validation.common import Progress

RDMA_TOLERANCE = 0.02
TRANSPORT_TOLERANCE = 0.15
DPM_RANGE = (0.008, 0.03)
"""Mb/s per mile: the published averages are 0.015-0.018."""
GBPS_PER_PERFTEST_MB = 8 / 1000
"""How the papers turned perftest's MB/sec into Gb/s (see the module's text)."""
MESSAGE = 8 << 20
"""8 MB: the profile's message, and the largest perftest's -a runs."""
PEAK_SIZES = tuple(1 << k for k in range(20, 24))
"""A peak over message sizes is the best of 1-8 MB (the text: 'with messages of 1 MB or
more')."""
RDMA_ITERS = 1000
"""rdma_bw.c's default. The text describing the RDMA profile says 5,000 operations, which
would give a throughput that falls 0.4 % from 0.2 to 8,600 miles; with the default the
last ACK's round trip is 1.9 % of the run at 8,600 miles, as published. The default is
taken, and this note is why."""
BIDIRECTIONAL_LENGTHS = (1400.0, 8600.0)


def _gbps(report: dict[str, Any]) -> float:
    return float(report["bw_average_mb_s"]) * GBPS_PER_PERFTEST_MB


def _case(
    what: str, table: str, sim: float, published: float, tolerance: float, unit: str
) -> dict[str, Any]:
    error = (sim - published) / published
    return {
        "what": what,
        "table": table,
        "sim": round(sim, 4),
        "published": published,
        "unit": unit,
        "error": round(error, 4),
        "tolerance": tolerance,
        "within": abs(error) <= tolerance,
    }


def _range_case(what: str, table: str, sim: float, low: float, high: float) -> dict[str, Any]:
    return {
        "what": what,
        "table": table,
        "sim": round(sim, 4),
        "published": [low, high],
        "unit": "Mb/s per mile",
        "error": None,
        "tolerance": None,
        "within": low <= sim <= high,
    }


def _finding(what: str, holds: bool, evidence: dict[str, float]) -> dict[str, Any]:
    return {
        "what": what,
        "table": "ib_transport.csv",
        "sim": {k: round(v, 3) for k, v in evidence.items()},
        "published": "qualitative",
        "unit": None,
        "error": None,
        "tolerance": None,
        "within": holds,
    }


class _Runs:
    """Every run the validation needs, run once each, side by side."""

    def __init__(self, workers: int | None, progress: Progress | None) -> None:
        self.workers = workers
        self.progress = progress
        self.results: dict[IbRun, dict[str, Any]] = {}

    def all(self, runs: Sequence[IbRun]) -> None:
        todo = [r for r in dict.fromkeys(runs) if r not in self.results]
        for done, (index, report) in enumerate(
            runner.side_by_side(run, todo, self.workers), start=1
        ):
            test = todo[index]
            self.results[test] = report
            if self.progress:
                what = f"IB: {test.tool} {test.service} at {test.length_miles:g} mi"
                self.progress(what, done, len(todo))

    def __getitem__(self, test: IbRun) -> dict[str, Any]:
        return self.results[test]


def _rdma(wan: str, miles: float) -> IbRun:
    return IbRun("rdma_bw", MESSAGE, miles, wan=wan, iters=RDMA_ITERS)


def _send(service: str, miles: float, size: int = MESSAGE, both: bool = False) -> IbRun:
    return IbRun("send_bw", size, miles, service=service, bidirectional=both, connection="socket")


def _write_4qp(both: bool) -> IbRun:
    return IbRun(
        "write_bw",
        MESSAGE,
        8600.0,
        qps=4,
        iters=RDMA_ITERS,
        bidirectional=both,
        connection="socket",
    )


def _lat(tool: str, miles: float) -> IbRun:
    return IbRun(tool, 2, miles, connection="socket")


def _read_bw() -> IbRun:
    return IbRun("read_bw", MESSAGE, 8600.0, connection="socket")


def _transport_runs() -> list[IbRun]:
    runs = [
        _send(s, m, size) for s in ("RC", "UC") for m in (1400.0, 8600.0) for size in PEAK_SIZES
    ]
    runs += [_send(s, m, both=True) for s in ("RC", "UC") for m in BIDIRECTIONAL_LENGTHS]
    runs += [_send("UD", m, 2048, both=True) for m in BIDIRECTIONAL_LENGTHS]
    runs += [_write_4qp(False), _write_4qp(True), _read_bw()]
    runs += [_lat(t, m) for t in ("send_lat", "write_lat", "read_lat") for m in (1400.0, 8600.0)]
    return runs


def _rdma_checks(runs: _Runs) -> list[dict[str, Any]]:
    table = reference.load_table(reference.IB_RDMA).rows
    checks = []
    by_connection: dict[str, dict[float, float]] = {}
    for _, row in table.iterrows():
        wan, miles = str(row["connection"]), float(row["miles"])
        sim = _gbps(runs[_rdma(wan, miles)])
        by_connection.setdefault(wan, {})[miles] = sim
        what = f"RDMA write {wan} {miles:g} mi (Gb/s)"
        checks.append(
            _case(what, "ib_rdma.csv", sim, float(row["avg_gbps"]), RDMA_TOLERANCE, "Gb/s")
        )
    for wan, means in by_connection.items():
        base = min(means)
        dpm = statistics.fmean(
            (means[base] - t) * 1000 / (miles - base) for miles, t in means.items() if miles != base
        )
        checks.append(_range_case(f"RDMA write {wan} average DPM", "ib_rdma.csv", dpm, *DPM_RANGE))
    return checks


def _peak(runs: _Runs, service: str, miles: float) -> float:
    return max(float(runs[_send(service, miles, size)]["bw_average_mb_s"]) for size in PEAK_SIZES)


def _latency_ms(runs: _Runs, tool: str, miles: float) -> float:
    return float(runs[_lat(tool, miles)]["latency"]["typical_us"]) / 1000


def _transport_value(runs: _Runs, row: Any) -> list[tuple[str, float]]:
    """(label, simulated value) for one numeric row of ib_transport.csv."""
    metric, service, op = str(row["metric"]), str(row["transport"]), str(row["operation"])
    miles_text = str(row["miles"])
    if metric == "latency" and op == "send_recv":
        miles = float(miles_text)
        return [(f"send latency {miles:g} mi (ms)", _latency_ms(runs, "send_lat", miles))]
    if metric == "latency" and op == "rdma_read":
        return [
            (
                f"read latency / write latency {m:g} mi",
                _latency_ms(runs, "read_lat", m) / _latency_ms(runs, "write_lat", m),
            )
            for m in (1400.0, 8600.0)
        ]
    if metric == "bandwidth_peak" and op == "send_recv":
        miles = float(miles_text)
        return [
            (
                f"{service.upper()} send peak {miles:g} mi (MB/s)",
                _peak(runs, service.upper(), miles),
            )
        ]
    if metric == "bidir_bandwidth_peak" and op == "send_recv":
        size = 2048 if service == "ud" else MESSAGE
        return [
            (
                f"{service.upper()} send both ways {m:g} mi (MB/s)",
                float(runs[_send(service.upper(), m, size, both=True)]["bw_average_mb_s"]),
            )
            for m in BIDIRECTIONAL_LENGTHS
        ]
    if op == "rdma_write_4qp":
        both = metric.startswith("bidir")
        label = "both ways " if both else ""
        return [
            (
                f"RC RDMA write, 4 QPs, {label}8600 mi (MB/s)",
                float(runs[_write_4qp(both)]["bw_average_mb_s"]),
            )
        ]
    raise ValueError(f"ib_transport.csv: no simulation for {metric}/{service}/{op}")


def _transport_checks(runs: _Runs) -> list[dict[str, Any]]:
    table = reference.load_table("ib_transport.csv").rows
    checks = []
    for _, row in table.iterrows():
        try:
            published = float(row["value"])
        except ValueError:
            continue  # qualitative: the findings below
        for what, sim in _transport_value(runs, row):
            checks.append(
                _case(
                    what, "ib_transport.csv", sim, published, TRANSPORT_TOLERANCE, str(row["unit"])
                )
            )
    read = float(runs[_read_bw()]["bw_average_mb_s"])
    write = float(runs[_rdma("sonet", 8600.0)]["bw_average_mb_s"])
    uc = {m: _peak(runs, "UC", m) for m in (1400.0, 8600.0)}
    checks.append(
        _finding(
            "RDMA read is low at 8,600 miles (below half of RDMA write; 4 reads outstanding)",
            read < write / 2,
            {"read_mb_s": read, "write_mb_s": write},
        )
    )
    checks.append(
        _finding(
            "UC's peak is the same at 1,400 and 8,600 miles (within 1 %)",
            abs(uc[8600.0] - uc[1400.0]) <= 0.01 * uc[1400.0],
            {"uc_1400_mb_s": uc[1400.0], "uc_8600_mb_s": uc[8600.0]},
        )
    )
    return checks


def validate_ib(workers: int | None = None, progress: Progress | None = None) -> dict[str, Any]:
    """Every case, with a summary of how many are within their tolerance."""
    runs = _Runs(workers, progress)
    rdma_rows = reference.load_table(reference.IB_RDMA).rows
    planned = [_rdma(str(r["connection"]), float(r["miles"])) for _, r in rdma_rows.iterrows()]
    runs.all([*planned, *_transport_runs()])
    cases = [*_rdma_checks(runs), *_transport_checks(runs)]
    return {
        "units": "perftest MB/s = 2^20 bytes/s; papers' Gb/s = perftest MB/s x 8 / 1000",
        "parameters": runs[planned[0]]["test"],
        "cases": cases,
        "summary": {"cases": len(cases), "within": sum(bool(c["within"]) for c in cases)},
    }
