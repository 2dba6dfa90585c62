"""`longhaul bench hurricane`: Hurricane against the transports a site could use
instead, on the same emulated circuits in the same run, and under injected faults.

The circuits: 1 Gb/s over 26.8 and 163 ms, 9.6 Gb/s over 163 and 650 ms, and 9.6 Gb/s
over 163 ms with 1e-4 random loss (USN's ORNL-Chicago and ORNL-Sunnyvale loops and the
34,400-mile loop around the earth). On each: Hurricane memory to memory with no
hand-set parameter (its defaults: W_c 64, T_s 0, k 1, blocks filling the path MTU),
and the peers: iperf3 TCP (cubic with 1 and 8 streams, bbr with 1), GridFTP
(globus-url-copy, 8 streams, buffers of the bandwidth-delay product) and UDT (UDT4, out
of the box); on the two 163 ms circuits without loss, Hurricane also disk to disk, on
tmpfs (/dev/shm) and on the root file system. Every run is repeated (3 by default), the
runs on a circuit taking turns (each tool and mode once, then again): median, least and
most; each circuit first carries one unmeasured Hurricane transfer (`WARM_UP`).

Utilization is goodput over the reserved rate's payload ceiling: what the rate carries
of the tool's own payload in 1,500-byte IP packets (Hurricane 1,427 of 1,500 bytes, TCP
1,448 with timestamps, UDT 1,456 after its 16-byte header). Hurricane's and UDT's
goodput is the receiver's (first datagram to last byte in; Hurricane's without the
bytes of its first receive, which came in before its clock started); iperf3's leaves out its
warm-up (-O) and is held to what the line delivered over as long a stretch
(`_within_the_line`); GridFTP's runs from the client's first data callback to
`operation complete`, without that callback's bytes, and is held to the line over that
time too. Every run keeps the length its goodput was timed over (`timed_s`).

Faults: `hurricane faults` sends real files in virtual time under loss (random and
bursty), reordering, duplication, corruption, a link down for 2 s, kills of either side,
forged datagram storms and a disk too small; on the emulated 1 Gb/s circuit, receivers
are killed mid-transfer and started again, and a file is offered to a disk too small for
it (a 16 MB tmpfs). `faults` counts transfers, files corrupted (a wrong file under its
name: must be 0), transfers resumed from verified chunks, and transfers refused with a
reason.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import signal
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from longhaul.bench import wan
from longhaul.measure import health
from longhaul.measure.tools import ToolError, gridftp, iperf3, udt
from longhaul.measure.tools import hurricane as tool
from longhaul.testbed import CircuitRecord, emulator, netns, serving
from longhaul.testbed.watch import (
    TCP_IP_HEADER_BYTES,
    Watch,
    best_window_bps,
    held_to_line,
    line_during,
    tcp_payload_share,
)

REPETITIONS = 3
PACKET_BYTES = 1500
PAYLOAD_BYTES = {"hurricane": 1427, "tcp": PACKET_BYTES - TCP_IP_HEADER_BYTES, "udt": 1456}
"""What a 1,500-byte IP packet carries of each tool's payload."""
DISK_FILE_BYTES = {1.0: 1 << 30, 9.6: 4 << 30}
"""By rate: the file sent disk to disk (about 8.6 and 3.6 s), and on those circuits the
memory-to-memory transfer it is compared with (the same size)."""
DISK_BASES = {"disk-tmpfs": "/dev/shm", "disk-fs": "/var/tmp"}
"""Where each disk mode's files are made: tmpfs, and the root file system."""
FAULT_TRANSFERS = 200
EMULATED_KILLS = 3
SENDER_NOTICES_S = 5.0
"""How long a sender may take to stop after its receiver was killed: it looks at the
control connection every 200 ms (`hurricane`'s `CONTROL_LOOK`)."""


@dataclass(frozen=True)
class Circuit:
    rate_gbps: float
    rtt_ms: float
    loss: float = 0.0

    @property
    def key(self) -> tuple[float, float, float]:
        return (self.rate_gbps, self.rtt_ms, self.loss)

    def seconds_of(self, nbytes: int) -> float:
        return nbytes * 8 / (self.rate_gbps * 1e9)


CIRCUITS = (
    Circuit(1.0, 26.8),
    Circuit(1.0, 163.0),
    Circuit(9.6, 163.0),
    Circuit(9.6, 650.0),
    Circuit(9.6, 163.0, 1e-4),
)
DISK_CIRCUITS = {(1.0, 163.0, 0.0), (9.6, 163.0, 0.0)}


@dataclass(frozen=True)
class Run:
    """One tool in one mode on one circuit."""

    tool: str
    mode: str = "memory"

    def estimate_s(self, circuit: Circuit) -> float:
        rtt_s = circuit.rtt_ms / 1e3
        if self.tool == "hurricane":
            return 4 + _hurricane_bytes(circuit, self.mode) * 8 / (circuit.rate_gbps * 1e9) * 1.3
        if self.tool.startswith("iperf3"):
            omit, duration = _iperf3_times(circuit)
            return omit + duration + 3 + 10 * rtt_s
        if self.tool.startswith("gridftp"):
            return 5 + 10 * rtt_s + circuit.seconds_of(_gridftp_bytes(circuit)) * 1.5
        return 5 + 10 * rtt_s + _udt_bytes(circuit) * 8 / 0.4e9

    def measured_part(self, circuit: Circuit) -> tuple[float, float] | None:
        """For a tool whose figure covers only the end of its run (iperf3, after its
        connections and its warm-up, -O): how long that part is, and how long the run
        goes on after it (its last data cross the line half a round trip after the
        sender stops, and the ends exchange their results; measured: the run returned
        0.08 s after the line fell quiet at 163 ms, 0.33 s at 650 ms). None: every other
        tool's figure covers its whole run."""
        if not self.tool.startswith("iperf3"):
            return None
        _, duration = _iperf3_times(circuit)
        return duration, circuit.rtt_ms / 2e3 + 0.15

    @property
    def data_direction(self) -> str:
        """Where the data flow: from the source host (`a_to_b`), but GridFTP's client, in
        the source host, downloads from the server (`b_to_a`)."""
        return "b_to_a" if self.tool.startswith("gridftp") else "a_to_b"

    @property
    def over_tcp(self) -> bool:
        """iperf3 and GridFTP: TCP tools whose figure is held to what the line carried
        (`_within_the_line`)."""
        return self.tool.startswith(("iperf3", "gridftp"))


def _hurricane_bytes(circuit: Circuit, mode: str) -> int:
    del mode  # memory to memory moves what disk to disk does, where both run
    if circuit.key in DISK_CIRCUITS:
        return DISK_FILE_BYTES[circuit.rate_gbps]
    # About 6 s of the rate (10 around the earth, where a round trip is 0.65 s).
    seconds = 10 if circuit.rtt_ms > 500 else 6
    return int(circuit.rate_gbps * 1e9 / 8 * seconds)


def _iperf3_times(circuit: Circuit) -> tuple[float, float]:
    """(warm-up left out, measured): longer where slow start takes longer."""
    if circuit.rtt_ms > 500:
        return 10.0, 10.0
    if circuit.rtt_ms > 100:
        return 4.0, 8.0
    return 2.0, 6.0


def _gridftp_bytes(circuit: Circuit) -> int:
    return int(circuit.rate_gbps * 1e9 / 8 * 5)


def _udt_bytes(circuit: Circuit) -> int:
    # UDT4 out of the box moved 0.3-0.6 Gb/s over these circuits: about 5 s of that.
    del circuit
    return 250_000_000


TOOLS = ("hurricane", "iperf3-cubic-1", "iperf3-cubic-8", "iperf3-bbr-1", "gridftp-8", "udt")
"""Every tool the benchmark runs, Hurricane and its peers."""


def runs_for(circuit: Circuit, tools: tuple[str, ...] = TOOLS) -> list[Run]:
    """Each of `tools` on `circuit`, memory to memory; Hurricane also disk to disk where
    the circuit is one of `DISK_CIRCUITS`."""
    runs = []
    for name in tools:
        runs.append(Run(name))
        if name == "hurricane" and circuit.key in DISK_CIRCUITS:
            runs += [Run("hurricane", "disk-tmpfs"), Run("hurricane", "disk-fs")]
    return runs


def parse_circuit(text: str) -> Circuit:
    """A circuit written `RATExRTT[xLOSS]`, Gb/s and ms: `9.6x163`, `9.6x163x1e-4`."""
    parts = text.lower().split("x")
    try:
        numbers = [float(p) for p in parts]
    except ValueError:
        numbers = []
    if len(numbers) not in (2, 3):
        raise ValueError(
            f"{text!r} is not a circuit: write RATExRTT[xLOSS] in Gb/s and ms, e.g. 9.6x163 "
            "or 9.6x163x1e-4"
        )
    rate, rtt, loss = (*numbers, 0.0)[:3]
    if not (all(map(math.isfinite, numbers)) and rate > 0 and rtt > 0 and 0 <= loss < 1):
        raise ValueError(f"{text!r}: the rate and RTT must be positive, the loss in [0, 1)")
    return Circuit(rate, rtt, loss)


WARM_UP = Run("hurricane")
"""What each circuit carries once, unmeasured, before its first measured run, as iperf3
leaves out its own warm-up in every run (-O). Without it the first run on a fresh circuit
(always Hurricane's) carried whatever the circuit's start costs: at 1 Gb/s x 163 ms the
least of three runs was 0.980 and 0.984 in two bench runs, and in a third, which kept
the order, the first run 0.987 against 0.997 and 0.9995 after it (late 28 ms, no
resends)."""

Progress = Callable[[str, float, float], None]


def estimate_s(repetitions: int, circuits: tuple[Circuit, ...] = CIRCUITS,
               tools: tuple[str, ...] = TOOLS, faults: bool = True) -> float:  # fmt: skip
    """About how long `run` takes with these arguments (the faults about a minute)."""
    plan = [(c, r) for c in circuits for r in runs_for(c, tools)]
    total = sum(r.estimate_s(c) * repetitions for c, r in plan) + (60 if faults else 0)
    return total + sum(WARM_UP.estimate_s(c) for c in circuits)


def run(repetitions: int = REPETITIONS, progress: Progress | None = None,
        circuits: tuple[Circuit, ...] = CIRCUITS, fault_transfers: int = FAULT_TRANSFERS,
        tools: tuple[str, ...] = TOOLS) -> dict[str, Any]:  # fmt: skip
    """Every run of `tools` on `circuits`, `repetitions` times each, and
    `fault_transfers` transfers under faults in virtual time plus the emulated ones on the
    first circuit (none of either with 0: `faults` is then None)."""
    total = estimate_s(repetitions, circuits, tools, faults=fault_transfers > 0)
    done = 0.0
    results: list[dict[str, Any]] = []
    emulated: dict[str, int] = {}
    virtual: dict[str, Any] = {}
    sizes = {DISK_FILE_BYTES[c.rate_gbps] for c in circuits
             if c.key in DISK_CIRCUITS and "hurricane" in tools}  # fmt: skip
    with wan.own_testbed() as testbed, _disk_files(sizes) as files:
        # The smallest circuits first (a taken-down circuit's memory goes back slowly).
        for circuit in sorted(circuits, key=lambda c: c.rate_gbps * c.rtt_ms):
            spec = wan.Case(circuit.rate_gbps, circuit.rtt_ms, "iperf3", loss=circuit.loss)
            with wan.circuit_for(testbed, spec) as record:
                if progress:
                    progress(f"warm-up, {_label(circuit, WARM_UP)}", done, total)
                _one(record, circuit, WARM_UP, files)
                done += WARM_UP.estimate_s(circuit)
                plan = runs_for(circuit, tools)
                outcomes: list[list[dict[str, Any]]] = [[] for _ in plan]
                # The runs take turns, so a slow minute of the machine falls on every
                # tool and mode alike, not on one tool's repetitions.
                for repetition in range(repetitions):
                    for one, its_outcomes in zip(plan, outcomes, strict=True):
                        if progress:
                            progress(f"{_label(circuit, one)}, run {repetition + 1}", done, total)
                        its_outcomes.append(_one(record, circuit, one, files))
                        done += one.estimate_s(circuit)
                results += [
                    _summarize(circuit, one, o) for one, o in zip(plan, outcomes, strict=True)
                ]
                if fault_transfers and not emulated:
                    if progress:
                        progress("faults on the emulated circuit", done, total)
                    emulated = _emulated_faults(record)
        if fault_transfers:
            if progress:
                progress(f"{fault_transfers} fault transfers in virtual time", done, total)
            virtual = _virtual_faults(fault_transfers)
    if progress:
        progress("done", total, total)
    faults = _faults(virtual, emulated) if fault_transfers else None
    return {"cases": results, "faults": faults, "machine": _machine()}


def _label(circuit: Circuit, one: Run) -> str:
    loss = f", loss {circuit.loss:g}" if circuit.loss else ""
    mode = "" if one.mode == "memory" else f" {one.mode}"
    return f"{one.tool}{mode}, {circuit.rate_gbps:g} Gb/s x {circuit.rtt_ms:g} ms{loss}"


@contextmanager
def _disk_files(sizes: set[int]) -> Iterator[dict[str, Path]]:
    """A file of random bytes of each size, on tmpfs and on the root file system
    (`source-SIZE.bin`), and room beside them for what arrives; removed after. No sizes,
    no folders (and no `sync`)."""
    made: dict[str, Path] = {}
    if not sizes:
        yield made
        return
    try:
        for mode, base in DISK_BASES.items():
            folder = Path(tempfile.mkdtemp(prefix="longhaul-bench-hurricane-", dir=base))
            made[mode] = folder
            rng = np.random.default_rng(1)
            for size in sorted(sizes):
                with (folder / f"source-{size}.bin").open("wb") as out:
                    for _ in range(size // (64 << 20)):
                        out.write(rng.bytes(64 << 20))
        # Written back now, not by the kernel's flusher during the first circuits' runs:
        # in a bench run the 1 Gb/s x 163 ms sender there lost 0-30 ms to late wake-ups
        # (`late_ms`), and none in four runs of the same transfer alone.
        os.sync()
        yield made
    finally:
        for folder in made.values():
            subprocess.run(["rm", "-rf", str(folder)], check=False)


def _ceiling_bps(circuit: Circuit, payload: str) -> float:
    return circuit.rate_gbps * 1e9 * PAYLOAD_BYTES[payload] / PACKET_BYTES


def _one(record: CircuitRecord, circuit: Circuit, one: Run,
         files: dict[str, Path]) -> dict[str, Any]:  # fmt: skip
    """One run from a quiet circuit: goodput, utilization and CPU, with what the machine
    did over the part its figure covers (`_conditions`), or the error that ended it."""
    watch = Watch.start(record)
    part = one.measured_part(circuit)
    try:
        if one.over_tcp:
            measure = partial(_measure, record, circuit, one, files)
            outcome, line = line_during(record, measure, one.data_direction)
        else:
            outcome = _measure(record, circuit, one, files)
    except ToolError as exc:
        return {"error": str(exc)}
    if "error" in outcome:
        return outcome
    outcome.update(_conditions(watch.finish(last_s=None if part is None else sum(part))))
    if one.over_tcp:
        line_bps = best_window_bps(line, float(outcome["timed_s"]))
        outcome.update(_within_the_line(outcome, circuit, line_bps))
    return outcome


def _within_the_line(outcome: dict[str, Any], circuit: Circuit,
                     line_bps: float | None) -> dict[str, Any]:  # fmt: skip
    """A TCP tool's figures, held to what the line carried (`held_to_line`): the run's
    `utilization` is the lesser of the tool's (`tool_utilization`) and the line's best
    stretch of the length the tool timed (`line_utilization`: its IP bytes over the
    rate, so the payload share cancels, TCP's resent segments included). iperf3 can count
    more than the line carried (a receiving process behind its socket), and so can
    GridFTP's clock, which starts at its first data callback while the other streams'
    first data are already in (at 1 Gb/s x 26.8 ms one run came to 1.0001)."""
    if line_bps is None:
        return {}
    ceiling_bps = _ceiling_bps(circuit, "tcp")
    tool_bps = float(outcome["goodput_gbps"]) * 1e9
    held_bps = held_to_line(tool_bps, line_bps, tcp_payload_share(PACKET_BYTES))
    return {
        "tool_utilization": tool_bps / ceiling_bps,
        "line_utilization": line_bps / (circuit.rate_gbps * 1e9),
        "utilization": held_bps / ceiling_bps,
        "goodput_gbps": held_bps / 1e9,
    }


def _conditions(record: dict[str, Any]) -> dict[str, Any]:
    """What the emulator's record of a run (`Watch.finish`) says about the conditions the
    tool had, none of which a tool can make up: line time the emulated line lost to its
    own late releases (`line_late_ms`, both directions: never made up while the line stays
    busy; a line with gaps catches up in them), frames its TUN queues and its memory
    dropped outside the link's own queue and loss (`dropped_outside_link`), and the CPU
    time the machine's host took (`host_steal_s`)."""
    return {
        "line_late_ms": health.late_held_ms(record),
        "dropped_outside_link": int(record["tun_tx_dropped"]) + int(record["arena_full_frames"]),
        "host_steal_s": float(record["host_steal_s"]),
    }


def _measure(record: CircuitRecord, circuit: Circuit, one: Run,
             files: dict[str, Path]) -> dict[str, Any]:  # fmt: skip
    if one.tool == "hurricane":
        return _hurricane(record, circuit, one.mode, files)
    if one.tool.startswith("iperf3"):
        return _iperf3(record, circuit, one.tool)
    if one.tool.startswith("gridftp"):
        return _gridftp(record, circuit)
    return _udt(record, circuit)


def _hurricane(record: CircuitRecord, circuit: Circuit, mode: str,
               files: dict[str, Path]) -> dict[str, Any]:  # fmt: skip
    test = tool.HurricaneTest(
        client_ns=record.src_ns, server_ns=record.dst_ns, address=record.dst_addr,
        rate_bps=record.rate_bps, rtt_ms=circuit.rtt_ms,
        bytes_total=_hurricane_bytes(circuit, mode),
    )  # fmt: skip
    if mode != "memory":
        folder = files[mode]
        dest = folder / "in"
        subprocess.run(["rm", "-rf", str(dest)], check=False)
        source = folder / f"source-{test.bytes_total}.bin"
        test = replace(test, path=str(source), dest_dir=str(dest))
    result = tool.run(test)
    if mode != "memory":
        landed = Path(test.dest_dir or "") / source.name
        intact = landed.stat().st_size == test.bytes_total
        subprocess.run(["rm", "-rf", str(test.dest_dir)], check=False)
        if not intact:
            return {"error": "the file did not land whole"}
    elif result.corrupted_bytes:
        return {"error": f"{result.corrupted_bytes} bytes arrived wrong"}
    row: dict[str, Any] = {
        "goodput_gbps": result.goodput_bps / 1e9,
        "utilization": result.goodput_bps / _ceiling_bps(circuit, "hurricane"),
        "cpu_cores": result.sender_cpu_cores + result.receiver_cpu_cores,
        "sender_cpu_cores": result.sender_cpu_cores,
        "receiver_cpu_cores": result.receiver_cpu_cores,
        "check_cpu_cores": result.check_cpu_cores,
        "resent_share": result.blocks_resent / max(result.datagrams_sent, 1),
        "blocks_resent": result.blocks_resent,
        "late_ms": float(result.sent.get("late_ms", 0.0)),
        # The least share of the ceiling the sender's governor came down to.
        "lowest_rate_scale": float(result.sent.get("lowest_rate_scale", 1.0)),
        "timed_s": result.seconds,
    }
    if mode != "memory":
        # How the receiver wrote the file: through a mapping, or with O_DIRECT.
        row["write_mode"] = result.received.get("write_mode")
        row["spilled_chunks"] = int(result.received.get("spilled_chunks", 0))
    return row


def _iperf3(record: CircuitRecord, circuit: Circuit, name: str) -> dict[str, Any]:
    _, cc, streams = name.split("-")
    omit, duration = _iperf3_times(circuit)
    test = iperf3.Iperf3Test(client_ns=record.src_ns, server_ns=record.dst_ns,
                             address=record.dst_addr, duration_s=duration, omit_s=omit,
                             streams=int(streams), cc=cc, rtt_ms=circuit.rtt_ms)  # fmt: skip
    result = iperf3.run(test)
    return {"goodput_gbps": result.goodput_bps / 1e9,
            "utilization": result.goodput_bps / _ceiling_bps(circuit, "tcp"),
            "cpu_cores": _iperf3_cpu(result.raw), "timed_s": duration}  # fmt: skip


def _iperf3_cpu(raw: dict[str, Any]) -> float | None:
    """Both ends' CPU in cores: iperf3's `host_total` and `remote_total` are each the
    process's user and system time over the test's length, in percent of one core."""
    cpu = raw.get("end", {}).get("cpu_utilization_percent") or {}
    local, remote = cpu.get("host_total"), cpu.get("remote_total")
    if local is None or remote is None:
        return None
    return (float(local) + float(remote)) / 100


def _gridftp(record: CircuitRecord, circuit: Circuit) -> dict[str, Any]:
    test = gridftp.GridftpTest(client_ns=record.src_ns, server_ns=record.dst_ns,
                               address=record.dst_addr, bytes_total=_gridftp_bytes(circuit),
                               streams=8, rtt_ms=circuit.rtt_ms,
                               rate_bps=circuit.rate_gbps * 1e9)  # fmt: skip
    result = gridftp.run(test)
    return {"goodput_gbps": result.goodput_bps / 1e9,
            "utilization": result.goodput_bps / _ceiling_bps(circuit, "tcp"),
            "cpu_cores": None, "timed_s": result.timed_seconds}  # fmt: skip


def _udt(record: CircuitRecord, circuit: Circuit) -> dict[str, Any]:
    size = _udt_bytes(circuit)
    test = udt.UdtTest(client_ns=record.src_ns, server_ns=record.dst_ns,
                       address=record.dst_addr, bytes_total=size,
                       timeout_s=30 + size * 8 / 0.1e9 + 20 * circuit.rtt_ms / 1e3)  # fmt: skip
    result = udt.run(test)
    return {"goodput_gbps": result.goodput_bps / 1e9,
            "utilization": result.goodput_bps / _ceiling_bps(circuit, "udt"),
            "cpu_cores": None, "timed_s": result.seconds}  # fmt: skip


FIGURE_DECIMALS = 4
"""Decimals a figure keeps in the JSON, in a case's spread and in its runs alike."""
CONDITIONS = ("line_late_ms", "dropped_outside_link", "host_steal_s")
"""Every run's conditions (`_conditions`), kept with their spread in every row."""


def _spread(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    return {"median": round(statistics.median(values), FIGURE_DECIMALS),
            "min": round(min(values), FIGURE_DECIMALS),
            "max": round(max(values), FIGURE_DECIMALS)}  # fmt: skip


def _run_row(outcome: dict[str, Any]) -> dict[str, Any]:
    """One repetition as the JSON keeps it: its figures rounded, or its error."""
    return {key: round(value, FIGURE_DECIMALS) if isinstance(value, float) else value
            for key, value in outcome.items()}  # fmt: skip


def _summarize(circuit: Circuit, one: Run, outcomes: list[dict[str, Any]]) -> dict[str, Any]:
    """A case's spread over its repetitions, and the repetitions themselves in the order
    they ran (which one fell short, and why: a median hides it)."""
    good = [o for o in outcomes if "error" not in o]
    cpu = [o["cpu_cores"] for o in good if o.get("cpu_cores") is not None]
    summary: dict[str, Any] = {
        "tool": one.tool, "rate_gbps": circuit.rate_gbps, "rtt_ms": circuit.rtt_ms,
        "loss": circuit.loss, "mode": one.mode, "repetitions": len(outcomes),
        "goodput_gbps": _spread([o["goodput_gbps"] for o in good]),
        "utilization": _spread([o["utilization"] for o in good]),
        "cpu_cores": _spread(cpu),
        **{key: _spread([o[key] for o in good]) for key in CONDITIONS},
        "failed_runs": len(outcomes) - len(good),
        "errors": sorted({o["error"] for o in outcomes if "error" in o}),
        "runs": [_run_row(o) for o in outcomes],
    }  # fmt: skip
    if one.tool == "hurricane":
        for key in ("sender_cpu_cores", "receiver_cpu_cores", "check_cpu_cores",
                    "resent_share", "late_ms", "lowest_rate_scale"):  # fmt: skip
            summary[key] = _spread([o[key] for o in good])
    return summary


def _virtual_faults(transfers: int) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(prefix="longhaul-hurricane-faults-", dir="/dev/shm"))
    try:
        done = subprocess.run(
            [str(tool.binary()), "faults", "--transfers", str(transfers), "--dir",
             str(folder / "work")],
            capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
    finally:
        subprocess.run(["rm", "-rf", str(folder)], check=False)
    if done.returncode != 0:
        raise tool.HurricaneError(f"hurricane faults: {done.stderr.strip()[-300:]}")
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def _emulated_faults(record: CircuitRecord) -> dict[str, int]:
    """On the circuit: receivers killed (SIGKILL) mid-transfer and started again, and a
    file offered to a disk too small for it."""
    tally: dict[str, int] = {"transfers": 0, "whole": 0, "corrupted": 0, "resumed": 0,
                             "refused": 0, "failed": 0}  # fmt: skip
    folder = Path(tempfile.mkdtemp(prefix="longhaul-hurricane-kill-", dir="/dev/shm"))
    try:
        source = folder / "source.bin"
        source.write_bytes(np.random.default_rng(2).bytes(256 << 20))
        for attempt in range(EMULATED_KILLS):
            tally["transfers"] += 1
            tally[_killed_and_resumed(record, source, folder / f"in{attempt}")] += 1
        tally["transfers"] += 1
        tally[_too_small(record, source, folder / "small")] += 1
    finally:
        small = folder / "small"
        if small.is_dir():
            subprocess.run(["umount", str(small)], check=False)
        subprocess.run(["rm", "-rf", str(folder)], check=False)
    return tally


def _killed_and_resumed(record: CircuitRecord, source: Path, dest: Path) -> str:
    """Send `source`; kill the receiver after a second; send again. "resumed" if the
    second run began from chunks the first verified and the file landed whole;
    "corrupted" if a wrong file ever stood under its name; "failed" if the sender did
    not stop by itself, within `SENDER_NOTICES_S`, saying its receiver went away."""
    test = tool.HurricaneTest(client_ns=record.src_ns, server_ns=record.dst_ns,
                              address=record.dst_addr, rate_bps=record.rate_bps,
                              rtt_ms=record.rtt_ms, path=str(source), dest_dir=str(dest),
                              timeout_s=30)  # fmt: skip
    ready = serving.says("listening", "hurricane recv", tool.HurricaneError)
    with serving.serving(record.dst_ns, tool.receiver_argv(test), ready) as receiver:
        sender = subprocess.Popen(netns.command(record.src_ns, tool.sender_argv(test)),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  text=True)  # fmt: skip
        time.sleep(1.0)
        receiver.send_signal(signal.SIGKILL)
        receiver.wait(timeout=5)
        try:
            _, said = sender.communicate(timeout=SENDER_NOTICES_S)
        except subprocess.TimeoutExpired:
            sender.terminate()
            sender.communicate(timeout=10)
            said = ""
    if sender.returncode == 0 or "closed the control connection" not in said:
        return "failed"
    landed = dest / source.name
    if landed.exists() and landed.read_bytes() != source.read_bytes():
        return "corrupted"
    result = tool.run(test)
    if landed.read_bytes() != source.read_bytes():
        return "corrupted"
    return "resumed" if result.resumed_bytes > 0 else "whole"


def _too_small(record: CircuitRecord, source: Path, dest: Path) -> str:
    """Offer a 256 MB file to a 16 MB tmpfs: refused, with nothing left on it."""
    dest.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(dest)], check=True)
    test = tool.HurricaneTest(client_ns=record.src_ns, server_ns=record.dst_ns,
                              address=record.dst_addr, rate_bps=record.rate_bps,
                              rtt_ms=record.rtt_ms, path=str(source), dest_dir=str(dest),
                              timeout_s=30)  # fmt: skip
    try:
        tool.run(test)
    except tool.HurricaneError as exc:
        refused = "refused" in str(exc) and "no room" in str(exc)
        return "refused" if refused and not any(dest.iterdir()) else "failed"
    return "failed"


def _faults(virtual: dict[str, Any], emulated: dict[str, int]) -> dict[str, Any]:
    keys = ("transfers", "corrupted", "resumed", "refused")
    total = {k: int(virtual.get(k, 0)) + int(emulated.get(k, 0)) for k in keys}
    return {**total, "virtual_time": virtual, "emulated": emulated}


def _machine() -> dict[str, Any]:
    """Where the figures were measured, and with which builds of the emulator and of
    Hurricane (`LONGHAUL_WAN`, `HURRICANE` may name others than the workspace's)."""
    builds = {"longhaul-wan": emulator.binary(), "hurricane": tool.binary()}
    return {"cpus": os.cpu_count(), "kernel": os.uname().release,
            "builds": {name: build_identity(path) for name, path in builds.items()}}  # fmt: skip


def build_identity(path: Path) -> dict[str, str]:
    """A binary's path and the SHA-256 of its bytes: two runs of the same digest ran the
    same build, wherever it lay."""
    return {"path": str(path), "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
