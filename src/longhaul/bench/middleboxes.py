"""`longhaul bench middleboxes`: the WAN accelerator on USN's 1GigE loops, as USN tested
Cisco's WAAS boxes (USN slides, "WAN accelerator tests", Table II: HDF files over
1,400- and 2,800-mile loops, 1-20 streams, mean of 10 repetitions).

Each loop is an emulated circuit of 1 Gb/s with the loop's delay (USN's topology: 26.7
and 53.1 ms round trips) and a queue of one bandwidth-delay product. The hosts' windows
are pinned to 64 KB (65,535 bytes, `longhaul-accel sink --window-bytes`), which is what
makes one plain stream crawl: one window per round trip. Per cell (loop, streams,
features, data): without the accelerator the client sends straight to the sink; with
it, through `longhaul-accel near` and `far` (`measure.tools.accelerator`), each reached
over a 1 Gb/s LAN (`LAN_GBPS`) as USN's hosts reached their WAEs, restarted for
each cell (caches empty at the cell's first repetition and kept across its repetitions,
as a WAE's are). Each stream sends its own slice of the file (no redundancy between
streams); a repetition sends the same slices again. Reported: the mean over the
repetitions (as USN reported), median, least and most, and whether every byte arrived.

Then the link encryptor on USN's 10 Gb/s loops (`bench.encryptor`): `encryptor` in the
JSON, one entry per loop, MTU and oversize policy.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from longhaul.bench import encryptor, wan
from longhaul.measure import payloads
from longhaul.measure.tools import ToolError
from longhaul.measure.tools import accelerator as accel
from longhaul.testbed import CircuitRecord, netns
from longhaul.testbed.watch import tcp_payload_share
from longhaul.topology import circuits, usn

RATE_GBPS = 1.0
"""USN's accelerator tests ran over 1GigE connections."""
LAN_GBPS = 1.0
"""The hosts reached their accelerators over 1GigE too: each namespace's loopback, which
carries the client's connection to the near accelerator and the far one's to the sink,
is shaped to this rate (a TBF qdisc) while the circuit stands."""
MILES = (1400, 2800)
STREAMS = (1, 2, 20)
REPETITIONS = 3
SECONDS = {"none": 5.0, "accelerated": 3.0}
"""About how long one repetition moves data: the bytes sent are this much of what the
cell is expected to carry (a pinned window per round trip per stream without the
accelerator, the line with it)."""

PUBLISHED_MBPS: dict[tuple[int, int, str], float] = {
    (1400, 1, "none"): 18.9, (1400, 1, "tfo"): 802.7, (1400, 1, "tfo+dre"): 891.9,
    (1400, 1, "tfo+dre+lz"): 961.9,
    (1400, 2, "none"): 37.8, (1400, 2, "tfo"): 1017.6, (1400, 2, "tfo+dre"): 959.7,
    (1400, 2, "tfo+dre+lz"): 888.6,
    (1400, 20, "none"): 379.8, (1400, 20, "tfo"): 1011.8, (1400, 20, "tfo+dre"): 1011.7,
    (1400, 20, "tfo+dre+lz"): 1009.3,
    (2800, 1, "none"): 9.4, (2800, 1, "tfo"): 697.5, (2800, 1, "tfo+dre"): 818.1,
    (2800, 1, "tfo+dre+lz"): 773.0,
    (2800, 2, "none"): 18.8, (2800, 2, "tfo"): 978.1, (2800, 2, "tfo+dre"): 988.0,
    (2800, 2, "tfo+dre+lz"): 896.2,
    (2800, 20, "none"): 189.0, (2800, 20, "tfo"): 1020.6, (2800, 20, "tfo+dre"): 1009.0,
    (2800, 20, "tfo+dre+lz"): 1015.0,
}  # fmt: skip
"""USN's Table II (HDF files, Mb/s, mean of 10 repetitions); its DRE and LZ columns are
TFO with DRE, then with LZ added, as the slides' titles have them."""


@dataclass(frozen=True)
class Cell:
    miles: int
    streams: int
    features: str
    data: str

    @property
    def accelerated(self) -> bool:
        return self.features != "none"

    @property
    def seconds(self) -> float:
        return SECONDS["accelerated" if self.accelerated else "none"]

    def expected_bps(self, rtt_ms: float) -> float:
        line = RATE_GBPS * 1e9 * tcp_payload_share()
        if self.accelerated:
            return line
        return min(line, self.streams * accel.PINNED_WINDOW_BYTES * 8 / (rtt_ms / 1e3))

    def bytes_per_stream(self, rtt_ms: float) -> int:
        return int(self.expected_bps(rtt_ms) / 8 * self.seconds / self.streams)

    def estimate_s(self, repetitions: int) -> float:
        return repetitions * (self.seconds + 1.5) + (1.0 if self.accelerated else 0.0)


def plan(miles: tuple[int, ...] = MILES, streams: tuple[int, ...] = STREAMS,
         data: tuple[str, ...] = payloads.KINDS) -> list[Cell]:  # fmt: skip
    """HDF files at every stream count (USN's table); the other kinds at one stream."""
    cells = []
    for length in miles:
        for kind in data:
            for count in streams if kind == "hdf" else streams[:1]:
                cells += [Cell(length, count, f, kind) for f in accel.FEATURES]
    return cells


def loop_rtt_ms(miles: int) -> float:
    """The round trip of USN's loop of about `miles` (its topology's delay per mile)."""
    return 2 * circuits.loop_spec(usn(), miles).delay_ns / 1e6


Progress = Callable[[str, float, float], None]


def run(cells: list[Cell], repetitions: int = REPETITIONS,
        progress: Progress | None = None,
        encryptor_rows: list[encryptor.Row] | None = None) -> dict[str, Any]:  # fmt: skip
    rows = encryptor.plan() if encryptor_rows is None else encryptor_rows
    total = (sum(c.estimate_s(repetitions) for c in cells)
             + sum(r.estimate_s(repetitions) for r in rows) + 30)  # fmt: skip
    done = 0.0
    results = []
    rtts_ms = {miles: loop_rtt_ms(miles) for miles in sorted({c.miles for c in cells})}
    with wan.own_testbed() as testbed:
        with _payloads(cells, rtts_ms) as files:
            for miles, rtt_ms in rtts_ms.items():
                spec = wan.Case(RATE_GBPS, rtt_ms, "accelerator")
                with wan.circuit_for(testbed, spec) as record, _lan(record):
                    for cell in (c for c in cells if c.miles == miles):
                        if progress:
                            progress(_label(cell), done, total)
                        results.append(_cell(record, cell, rtt_ms, files[cell.data], repetitions))
                        done += cell.estimate_s(repetitions)

        def starting(row: encryptor.Row) -> None:
            nonlocal done
            if progress:
                progress(encryptor.label(row), done, total)
            done += row.estimate_s(repetitions)

        sealed = encryptor.run(testbed, rows, repetitions, starting)
    if progress:
        progress("done", total, total)
    return {"accelerator": results, "encryptor": sealed,
            "rate_gbps": RATE_GBPS, "window_bytes": accel.PINNED_WINDOW_BYTES,
            "repetitions": repetitions, "machine": {"cpus": os.cpu_count(),
                                                    "kernel": os.uname().release}}  # fmt: skip


def _label(cell: Cell) -> str:
    return f"{cell.features}, {cell.data}, {cell.streams} stream(s), {cell.miles:,} mi"


@contextmanager
def _lan(record: CircuitRecord) -> Iterator[None]:
    namespaces = (record.src_ns, record.dst_ns)
    shape = ["tc", "qdisc", "replace", "dev", "lo", "root", "tbf", "rate",
             f"{LAN_GBPS * 1000:g}mbit", "burst", "1mb", "latency", "10ms"]  # fmt: skip
    try:
        for namespace in namespaces:
            subprocess.run(netns.command(namespace, shape), check=True, capture_output=True)
        yield
    finally:
        for namespace in namespaces:
            subprocess.run(netns.command(namespace, ["tc", "qdisc", "del", "dev", "lo", "root"]),
                           check=False, capture_output=True)  # fmt: skip


@contextmanager
def _payloads(cells: list[Cell], rtts_ms: dict[int, float]) -> Iterator[dict[str, Path]]:
    """One file of each kind the cells use, large enough for any of them, on tmpfs."""
    most = max((c.bytes_per_stream(rtts_ms[c.miles]) * c.streams for c in cells), default=0)
    with tempfile.TemporaryDirectory(prefix="longhaul-bench-middleboxes-", dir="/dev/shm") as d:
        yield {kind: payloads.write(kind, Path(d) / kind, most + (1 << 20))
               for kind in sorted({c.data for c in cells})}  # fmt: skip


def _cell(record: CircuitRecord, cell: Cell, rtt_ms: float, file: Path,
          repetitions: int) -> dict[str, Any]:  # fmt: skip
    per_stream = cell.bytes_per_stream(rtt_ms)
    timeout_s = 30 + 4 * per_stream * cell.streams * 8 / cell.expected_bps(rtt_ms)
    outcomes: list[accel.Transfer | str] = []
    reports: dict[str, Any] = {}

    def once(connect_to: str | None) -> None:
        try:
            outcomes.append(accel.transfer(record.src_ns, record.dst_ns, record.dst_addr, file,
                                           cell.streams, per_stream, connect_to=connect_to,
                                           timeout_s=timeout_s))  # fmt: skip
        except ToolError as exc:
            outcomes.append(str(exc))

    if not cell.accelerated:
        for _ in range(repetitions):
            once(None)
    else:
        buffers = accel.wan_buffer_bytes(record.rate_bps, rtt_ms, record.queue_bytes or 0)
        try:
            with accel.Pair(record.src_ns, record.dst_ns, record.dst_addr, cell.features,
                            buffers) as pair:  # fmt: skip
                for _ in range(repetitions):
                    once(pair.address)
            reports = pair.reports
        except ToolError as exc:
            outcomes.append(str(exc))
    return _summary(cell, rtt_ms, per_stream, outcomes, reports)


def _summary(cell: Cell, rtt_ms: float, per_stream: int, outcomes: list[accel.Transfer | str],
             reports: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
    good = [o for o in outcomes if isinstance(o, accel.Transfer) and o.intact]
    rates = [o.mbps for o in good]
    sent = reports.get("near", {}).get("sent", {})
    summary: dict[str, Any] = {
        "miles": cell.miles, "rtt_ms": round(rtt_ms, 2), "streams": cell.streams,
        "features": cell.features, "data": cell.data, "bytes_per_stream": per_stream,
        "mbps": round(statistics.fmean(rates), 1) if rates else None,
        "mbps_median": round(statistics.median(rates), 1) if rates else None,
        "mbps_min": round(min(rates), 1) if rates else None,
        "mbps_max": round(max(rates), 1) if rates else None,
        "runs": len(outcomes), "intact_runs": len(good),
        "corrupted_runs": sum(1 for o in outcomes if isinstance(o, accel.Transfer)
                              and not o.intact),
        "errors": sorted({o for o in outcomes if isinstance(o, str)}),
        "published_mbps": PUBLISHED_MBPS.get((cell.miles, cell.streams, cell.features))
        if cell.data == "hdf" else None,
    }  # fmt: skip
    if sent:
        summary["wire_ratio"] = round(sent["wire_bytes"] / max(sent["app_bytes"], 1), 4)
        summary["cache_hit_bytes"] = sent["cache_hit_bytes"]
        summary["lz_output_bytes"] = sent["lz_output_bytes"]
        summary["streams_reset"] = reports["near"].get("streams_reset", 0)
    return summary
