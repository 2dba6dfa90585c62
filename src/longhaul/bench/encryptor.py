"""The encryptor half of `longhaul bench middleboxes`: one TCP stream through the link
encryptors (`testbed.encryptor`) on USN's own loops, as USN tested its 10 Gb/s encryption
devices (USN slides, "TCP Profiles: Before and after MTU Alignment" and "TCP Profiles
Comparison": 9 Gb/s on a local loop, 8 Gb/s over the 1,400-mile ORNL-Chicago loop once
the hosts' IP packets were 8,950 bytes).

Each loop is the USN topology's circuit (`circuits.loop_spec`: a 10GigE WAN-PHY line of
9.29 Gb/s, 0.28 and 26.7 ms round trips, a queue of one bandwidth-delay product). Per row
(loop, the hosts' MTU, what the encryptor does with a packet too long once sealed):
iperf3 (cubic, kernel auto-tuning) runs `repetitions` times encrypted and as many times
plain on the same circuit, alternately, so the ratio between them is measured under the
same conditions. Beside the rate: the emulator's CPU in each case, the encryptors' own
time per byte (sealing and opening, `seal_ns` and `open_ns` in `longhaul-wan stats`),
segments fragmented, and for the tamper row, frames altered on the line against frames
refused. A 9,000-byte MTU with `drop` runs once: a path-MTU black hole moves nothing.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from longhaul.measure.tools import iperf3
from longhaul.measure.tools.iperf3 import Iperf3Error
from longhaul.testbed import CircuitRecord, Testbed, emulator
from longhaul.testbed import encryptor as enc
from longhaul.topology import circuits, usn

LOCAL_MILES = 0.2
MILES = (LOCAL_MILES, 1400.0)
REPETITIONS = 3
DURATION_S = 10.0
OMIT_S = 3.0
TAMPER = 1e-4
"""The tamper row's probability that a frame is altered on the line."""
MIN_COSTED_BYTES = 1 << 20
"""Bytes sealed below which the encryptors' time per byte is not reported."""
PUBLISHED_GBPS = {LOCAL_MILES: 9.0, 1400.0: 8.0}
"""USN's slides: 9 Gb/s over a local fiber loop, 8 Gb/s over the Chicago loop."""


@dataclass(frozen=True)
class Row:
    miles: float
    mtu_bytes: int
    oversize: str = "fragment"
    tamper: float = 0.0
    with_plain: bool = True
    """Also run the circuit plain, alternately, as the peer."""
    runs: int | None = None
    """Encrypted runs (None: the bench's repetitions)."""
    duration_s: float = DURATION_S

    def repetitions(self, default: int) -> int:
        return self.runs if self.runs is not None else default

    def estimate_s(self, default: int) -> float:
        each = self.duration_s + OMIT_S + 2.0
        return self.repetitions(default) * each * (2 if self.with_plain else 1)


def plan(miles: tuple[float, ...] = MILES) -> list[Row]:
    """The aligned MTU on every loop; over the long ones also the 9,000-byte MTU (sealed
    packets fragmented, and once dropped) and the tamper fault."""
    rows = []
    for length in miles:
        rows.append(Row(length, enc.ALIGNED_MTU_BYTES))
        if length > LOCAL_MILES:
            rows += [
                Row(length, enc.LINE_MTU_BYTES),
                Row(length, enc.LINE_MTU_BYTES, oversize="drop", with_plain=False, runs=1,
                    duration_s=5.0),
                Row(length, enc.ALIGNED_MTU_BYTES, tamper=TAMPER, with_plain=False, runs=1),
            ]  # fmt: skip
    return rows


def run(
    testbed: Testbed, rows: list[Row], repetitions: int, starting: Callable[[Row], None]
) -> list[dict[str, Any]]:
    """Every row, each loop's circuit built once; `starting` is told of each row first."""
    results = []
    for miles in sorted({r.miles for r in rows}):
        spec = circuits.loop_spec(usn(), miles)
        spec = replace(spec, name=f"encryptor bench {spec.name}")
        record = testbed.add_circuit(spec, owner="bench middleboxes")
        try:
            for row in (r for r in rows if r.miles == miles):
                starting(row)
                results.append(_row(record, row, repetitions))
        finally:
            testbed.remove_circuit(record.number)
    return results


def label(row: Row) -> str:
    extra = f", tamper {row.tamper:g}" if row.tamper else ""
    return (f"encryptor, MTU {row.mtu_bytes:,} ({row.oversize}){extra}, "
            f"{circuits.miles_label(row.miles)} mi")  # fmt: skip


@dataclass
class _Run:
    gbps: float | None
    emulator_cores: float
    counters: dict[str, Any] | None = None
    error: str | None = None


def _row(record: CircuitRecord, row: Row, repetitions: int) -> dict[str, Any]:
    enc.set_host_mtu(record, row.mtu_bytes)
    encryptor = enc.Encryptor(oversize=row.oversize, tamper=row.tamper)
    secret = enc.new_secret()
    encrypted: list[_Run] = []
    plain: list[_Run] = []
    for _ in range(row.repetitions(repetitions)):
        enc.encrypt(record, encryptor, secret)
        encrypted.append(_iperf3(record, row, counted=True))
        enc.decrypt(record)
        if row.with_plain:
            plain.append(_iperf3(record, row, counted=False))
    circuit = {"rtt_ms": round(record.rtt_ms, 2), "line": record.layer,
               "rate_gbps": record.rate_bps / 1e9}  # fmt: skip
    return {**circuit, **_summary(row, encrypted, plain)}


def _iperf3(record: CircuitRecord, row: Row, counted: bool) -> _Run:
    test = iperf3.Iperf3Test(client_ns=record.src_ns, server_ns=record.dst_ns,
                             address=record.dst_addr, duration_s=row.duration_s,
                             omit_s=OMIT_S, rtt_ms=record.rtt_ms)  # fmt: skip
    cpu_before, started = emulator.cpu_seconds(record.pid), time.monotonic()
    try:
        gbps: float | None = iperf3.run(test).goodput_bps / 1e9
        error = None
    except Iperf3Error as exc:
        gbps, error = None, str(exc)
    cores = (emulator.cpu_seconds(record.pid) - cpu_before) / (time.monotonic() - started)
    return _Run(gbps, cores, enc.counters(record) if counted else None, error)


def _spread(runs: list[_Run]) -> dict[str, float | None]:
    rates = [r.gbps for r in runs if r.gbps is not None]
    if not rates:
        return {"median": None, "min": None, "max": None}
    return {"median": round(statistics.median(rates), 3), "min": round(min(rates), 3),
            "max": round(max(rates), 3)}  # fmt: skip


def _summed(runs: list[_Run], key: str) -> int:
    return sum(int((r.counters or {}).get(d, {}).get(key, 0))
               for r in runs for d in ("a_to_b", "b_to_a"))  # fmt: skip


def _summary(row: Row, encrypted: list[_Run], plain: list[_Run]) -> dict[str, Any]:
    spread, peer = _spread(encrypted), _spread(plain)
    sealed_bytes = _summed(encrypted, "sealed_bytes")
    crypto_ns = _summed(encrypted, "seal_ns") + _summed(encrypted, "open_ns")
    # Over a few packets (a black hole) the time per byte is the calls', not the bytes'.
    ns_per_byte = crypto_ns / sealed_bytes if sealed_bytes >= MIN_COSTED_BYTES else None
    tampered = _summed(encrypted, "tampered")
    refused = sum(_summed(encrypted, f"refused_{why}")
                  for why in ("forged", "replayed", "truncated"))  # fmt: skip
    ratio = (spread["median"] / peer["median"]) if spread["median"] and peer["median"] else None
    return {
        "miles": row.miles, "mtu_bytes": row.mtu_bytes,
        "oversize": row.oversize, "tamper": row.tamper,
        "gbps": spread["median"] if spread["median"] is not None else 0.0,
        "gbps_min": spread["min"], "gbps_max": spread["max"], "runs": len(encrypted),
        "plain_gbps": peer["median"], "plain_gbps_min": peer["min"],
        "plain_gbps_max": peer["max"],
        "ratio_to_plain": round(ratio, 4) if ratio else None,
        "emulator_cores": _median(r.emulator_cores for r in encrypted),
        "plain_emulator_cores": _median(r.emulator_cores for r in plain),
        "crypto_ns_per_byte": round(ns_per_byte, 4) if ns_per_byte else None,
        # Cores the sealing and opening of 1 Gb/s take (both ends): ns/byte x 1.25e8 B/s.
        "crypto_cores_per_gbps": round(ns_per_byte * 0.125, 4) if ns_per_byte else None,
        "fragmented_segments": _summed(encrypted, "fragmented_segments"),
        "oversize_dropped_frames": _summed(encrypted, "oversize_dropped_frames"),
        "tampered": tampered, "refused": refused,
        "published_gbps": PUBLISHED_GBPS.get(row.miles)
        if row.mtu_bytes == enc.ALIGNED_MTU_BYTES and not row.tamper else None,
        "errors": sorted({r.error for r in encrypted + plain if r.error}),
    }  # fmt: skip


def _median(values: Any) -> float | None:
    found = list(values)
    return round(statistics.median(found), 3) if found else None
