"""`longhaul bench wan`: what the emulated circuits deliver, and how faithfully.

Each case builds a circuit on a testbed of its own (namespaces `lhb-bench-a`, `-b`), runs
its test at least three times, and reports the median, least and most of each figure,
with the emulator's own record of every run (`longhaul-wan` `health`): how late it
released (`emulator_max_late_ms`), the line time that cost, the largest rate it delivered
over any 1 ms (`max_1ms_rate_ratio`, against the configured rate), its memory
(`emulator_rss_mib`, against what it may hold at most), and how many runs it could not
honestly produce (`degraded_runs`, `measure.health`); and the CPU time the machine's host
took meanwhile (`host_steal_s_*`).

The cases: idle pings on every loop length USN measured (0.28 to 653 ms); cubic with 1 and
8 streams at 9.6 Gb/s over 163 ms and over 653 ms (around the earth: the 650 ms target's
case); 8 streams with 1e-5 random loss; one stream beside 2 Gb/s of real UDP
cross-traffic; and one stream through HTB rate limiting over a veth pair at the same
rate with no delay, against the emulator with none, in the same run: a peer on this
machine to set the figures against.

Utilization counts each packet's TCP/IP headers: goodput x 1500 / 1448 (`tcp_payload_share`),
over the rate.
A TCP run's goodput is held to what the line delivered (`watch.held_to_line`): iperf3
counts what its receiving process read over its measured part, which can be more than the
line carried then (a process behind its socket reads the backlog faster than the line);
iperf3's own figure stays beside it (`tool_goodput_gbps`).
"""

from __future__ import annotations

import fcntl
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from longhaul.measure import health
from longhaul.measure.tools import iperf3, ping
from longhaul.testbed import CircuitRecord, Testbed, crosstraffic, netns
from longhaul.testbed.netns import TestbedError
from longhaul.testbed.watch import (
    Watch,
    best_window_bps,
    held_to_line,
    line_during,
    tcp_payload_share,
)
from longhaul.topology.circuits import CircuitSpec, queue_floor_bytes

REPETITIONS = 3
LOOP_RTTS_MS = (0.28, 26.8, 163.0, 653.0)
"""USN's loops: ORNL local, ORNL-Chicago, to Sunnyvale, four times to Sunnyvale."""


@dataclass(frozen=True)
class Case:
    """One test on one circuit, repeated."""

    rate_gbps: float
    rtt_ms: float
    test: str
    """`ping` (idle), `iperf3`, or `peer` (iperf3 through HTB over veth, then the emulator)."""
    cc: str = "cubic"
    streams: int = 1
    loss: float = 0.0
    loss_seed: int = 1
    """The emulator's loss seed: each seed is another pattern of losses."""
    cross_gbps: float = 0.0
    duration_s: float = 15.0
    omit_s: float = 5.0
    pings: int = 50
    repetitions: int = REPETITIONS

    @property
    def circuit_key(self) -> tuple[float, float, float, int]:
        return (self.rate_gbps, self.rtt_ms, self.loss, self.loss_seed)

    def estimate_s(self) -> float:
        if self.test == "ping":
            each = self.pings * 0.05 + self.rtt_ms / 1e3 + 0.5
        else:
            each = (self.duration_s + self.omit_s + 2 + 4 * self.rtt_ms / 1e3) * (
                2 if self.test == "peer" else 1
            )
        return self.repetitions * each


def suite() -> list[Case]:
    """The benchmark's cases (about 10 minutes on two cores)."""
    cases = [Case(9.6, rtt, "ping") for rtt in LOOP_RTTS_MS]
    for streams in (1, 8):
        cases.append(Case(9.6, 163.0, "iperf3", streams=streams))
        # Around the earth on USN's 34,400-mile loop, the idle case's circuit. A 653 ms
        # path takes 10 s of slow start to fill: a longer warm-up and run.
        cases.append(Case(9.6, 653.0, "iperf3", streams=streams, duration_s=20, omit_s=15))
    cases.append(Case(9.6, 26.8, "iperf3", streams=8, loss=1e-5, duration_s=10, omit_s=3))
    cases.append(Case(9.6, 26.8, "iperf3", cross_gbps=2.0, duration_s=10, omit_s=3))
    cases.append(Case(9.6, 0.0, "peer", duration_s=8, omit_s=2))
    return cases


@dataclass(frozen=True)
class Plan:
    """A grid of circuits and stream counts (what `longhaul sim validate` measures)."""

    rates_gbps: tuple[float, ...] = (1.0, 9.6)
    rtts_ms: tuple[float, ...] = (26.8, 163.0)
    streams: tuple[int, ...] = (1, 8)
    cc: str = "cubic"
    duration_s: float = 15.0
    omit_s: float = 4.0
    pings: int = 50
    loss: float = 0.0
    """Random loss per packet on the circuits."""
    loss_seeds: tuple[int, ...] = (1,)
    """The emulator's loss seeds: each iperf3 case runs once per seed, each on a circuit
    of its own (another pattern of losses); pings only on the first."""
    repetitions: int = 1

    def cases(self) -> list[Case]:
        cases = []
        for rate in self.rates_gbps:
            for rtt in self.rtts_ms:
                base = Case(rate, rtt, "ping", cc=self.cc, loss=self.loss, pings=self.pings,
                            duration_s=self.duration_s, omit_s=self.omit_s,
                            repetitions=self.repetitions, loss_seed=self.loss_seeds[0])  # fmt: skip
                cases.append(base)
                cases += [
                    replace(base, test="iperf3", streams=n, loss_seed=seed)
                    for seed in self.loss_seeds
                    for n in self.streams
                ]
        return cases


Progress = Callable[[str, float, float], None]
"""(what is running, seconds of work done, seconds of work in all)."""

TARGETS = {
    "utilization_cubic_1_stream_9.6gbps_163ms": 0.97,
    "utilization_cubic_1_stream_9.6gbps_650ms": 0.90,
    "max_1ms_rate_ratio": 1.01,
    "idle_rtt_bias_ms": 0.1,
    "idle_rtt_std_ms": 0.05,
}


def run(cases: list[Case] | Plan, progress: Progress | None = None) -> dict[str, Any]:
    if isinstance(cases, Plan):
        cases = cases.cases()
    with own_testbed() as testbed:
        return _run(testbed, cases, progress)


LOCK = Path(tempfile.gettempdir()) / "longhaul-bench-wan.lock"
"""Held while a benchmark's testbed is up: two would build the same namespaces, and the
first to finish would take down the other's circuits."""


@contextmanager
def own_testbed() -> Iterator[Testbed]:
    """A testbed with its own record and prefix, taken down at the end whatever happens."""
    saved = {k: os.environ.get(k) for k in ("LONGHAUL_TESTBED_PREFIX", "LONGHAUL_TESTBED_DIR")}
    with _only_one(), tempfile.TemporaryDirectory(prefix="longhaul-bench-wan-") as folder:
        os.environ["LONGHAUL_TESTBED_PREFIX"] = "lhb-"
        os.environ["LONGHAUL_TESTBED_DIR"] = folder
        testbed = Testbed()
        try:
            yield testbed
        finally:
            testbed.down(everything=True)
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


@contextmanager
def _only_one() -> Iterator[None]:
    with LOCK.open("a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise TestbedError(
                "another `longhaul bench wan`, `bench hurricane` or `sim validate --parts "
                "kernel` is running on the lhb- testbed; wait for it to finish"
            ) from None
        yield


def _run(testbed: Testbed, cases: list[Case], progress: Progress | None) -> dict[str, Any]:
    total = sum(c.estimate_s() for c in cases)
    done = 0.0
    results: list[dict[str, Any]] = []
    by_circuit: dict[tuple[float, float, float, int], list[Case]] = {}
    for case in cases:
        by_circuit.setdefault(case.circuit_key, []).append(case)
    # The smallest circuits first: a virtual machine hands the memory of a circuit taken
    # down back to its host over the next seconds (2.9 GB of a 653 ms one in 12 s here),
    # stopping its CPUs for up to 9 ms at a time meanwhile, which the next case would feel.
    for group in sorted(by_circuit.values(), key=lambda g: g[0].rate_gbps * g[0].rtt_ms):
        with circuit_for(testbed, group[0]) as circuit:
            for case in group:
                for repetition in range(case.repetitions):
                    if progress:
                        progress(f"{_label(case)}, run {repetition + 1}", done, total)
                    results.append(_one(testbed, circuit, case))
                    done += case.estimate_s() / case.repetitions
    if progress:
        progress("done", total, total)
    summary = [_summarize(case, [r for r in results if r["case"] is case]) for case in cases]
    return {"cases": summary, "targets": _targets(summary)}


def _label(case: Case) -> str:
    what = {"ping": "idle ping", "peer": "HTB peer against the emulator"}.get(
        case.test, f"iperf3 {case.cc} x {case.streams}"
    )
    extra = (f", loss {case.loss:g}" if case.loss else "") + (
        f", {case.cross_gbps:g} Gb/s cross-traffic" if case.cross_gbps else ""
    )
    return f"{what}, {case.rate_gbps:g} Gb/s x {case.rtt_ms:g} ms{extra}"


@contextmanager
def circuit_for(testbed: Testbed, case: Case) -> Iterator[CircuitRecord]:
    rate_bps = round(case.rate_gbps * 1e9)
    delay_ns = round(case.rtt_ms * 1e6 / 2)
    spec = CircuitSpec(
        name=f"bench {case.rate_gbps:g} Gb/s x {case.rtt_ms:g} ms",
        src_host="bench-a",
        dst_host="bench-b",
        rate_bps=rate_bps,
        delay_ns=delay_ns,
        # One bandwidth-delay product, and never less than a millisecond of the rate, as
        # the testbed's own circuits (and about what a 1,000-packet HTB queue holds).
        queue_bytes=queue_floor_bytes(rate_bps, delay_ns),
        loss=case.loss,
        loss_seed=case.loss_seed,
    )
    circuit = testbed.add_circuit(spec, owner="bench wan")
    try:
        yield circuit
    finally:
        testbed.remove_circuit(circuit.number)


def _one(testbed: Testbed, circuit: CircuitRecord, case: Case) -> dict[str, Any]:
    """One run of `case`: its figures, and the emulator's record of it."""
    if case.test == "ping":
        return _ping(circuit, case)
    if case.test == "peer":
        peer = _peer(circuit, case)
        return {**_iperf3(testbed, circuit, case), "peer": peer}
    return _iperf3(testbed, circuit, case)


def _ping(circuit: CircuitRecord, case: Case) -> dict[str, Any]:
    watch = Watch.start(circuit)
    started = time.monotonic()
    result = ping.run(circuit.src_ns, circuit.dst_addr, case.pings, interval_s=0.05)
    record = watch.finish()
    return {
        "case": case,
        "rtt_mean_ms": result.avg_ms,
        "rtt_std_ms": result.mdev_ms,
        "rtt_min_ms": result.min_ms,
        "rtt_median_ms": statistics.median(result.times_ms) if result.times_ms else None,
        "lost": result.sent - result.received,
        **_emulator(record, "rtt", time.monotonic() - started, circuit),
    }


def _iperf3(testbed: Testbed, circuit: CircuitRecord, case: Case) -> dict[str, Any]:
    test = iperf3.Iperf3Test(
        client_ns=circuit.src_ns,
        server_ns=circuit.dst_ns,
        address=circuit.dst_addr,
        duration_s=case.duration_s,
        omit_s=case.omit_s,
        streams=case.streams,
        cc=case.cc,
        rtt_ms=circuit.rtt_ms,
    )
    traffic = None
    if case.cross_gbps:
        attached = testbed.attach_cross_host(circuit.number)
        length_s = case.duration_s + case.omit_s + 1
        traffic = crosstraffic.CrossTraffic(
            circuit, attached, round(case.cross_gbps * 1e9), length_s
        ).start()
    watch = Watch.start(circuit)
    started = time.monotonic()
    try:
        result, line = line_during(circuit, lambda: iperf3.run(test))
        cross = traffic.finish() if traffic is not None else None
    finally:
        if traffic is not None:
            traffic.stop()
    record = watch.finish()
    # The emulator's own count: the most it delivered over any stretch of the measured
    # part's length (iperf3's set-up takes 9 round trips and more, so a stretch at a
    # fixed time from the start can fall in its warm-up).
    delivered_bps = best_window_bps(line, case.duration_s)
    goodput = held_to_line(result.goodput_bps, delivered_bps, tcp_payload_share())
    return {
        "case": case,
        "goodput_gbps": goodput / 1e9,
        "utilization": _utilization(goodput, circuit),
        "tool_goodput_gbps": result.goodput_bps / 1e9,
        "rtt_mean_ms": result.rtt_mean_ms,
        "rtt_std_ms": result.rtt_std_ms,
        "retransmits": result.retransmits,
        "emulator_delivered_gbps": None if delivered_bps is None else delivered_bps / 1e9,
        "cross_received_gbps": None if cross is None else cross.received_rate_bps / 1e9,
        **_emulator(record, "tcp_throughput", time.monotonic() - started, circuit),
    }


def _utilization(goodput_bps: float, circuit: CircuitRecord) -> float:
    """TCP goodput over the most a full-sized TCP packet stream carries at the circuit's
    rate (`tcp_payload_share`): the emulator's runs and the HTB peer's alike."""
    return goodput_bps / tcp_payload_share() / circuit.rate_bps


def _emulator(
    record: dict[str, Any], test: str, duration_s: float, circuit: CircuitRecord
) -> dict[str, Any]:
    """What the emulator's record of a run says, for the benchmark."""
    directions = [record.get("a_to_b") or {}, record.get("b_to_a") or {}]
    judged = health.verdict(record, test, duration_s, circuit.rate_bps, circuit.rtt_ms)
    return {
        "max_1ms_rate_ratio": max(d.get("max_1ms_rate_ratio", 0.0) for d in directions),
        "emulator_max_late_ms": max(d.get("lateness_max_ns", 0) for d in directions) / 1e6,
        "emulator_late_held_ms": health.late_held_ms(record),
        "emulator_stalls": sum(d.get("stalls", 0) for d in directions),
        "emulator_cpu_cores": record.get("cpu_cores"),
        "emulator_rss_mib": record.get("rss_bytes", 0) / 2**20,
        "host_steal_s": record.get("host_steal_s"),
        "degraded": judged.degraded,
        "reasons": list(judged.reasons),
    }


PEER_DEVICES = ("lhbpeer-a", "lhbpeer-b")
PEER_ADDRESSES = ("198.19.254.1", "198.19.254.2")


def _peer(circuit: CircuitRecord, case: Case) -> dict[str, Any]:
    """One stream through the kernel's HTB at the circuit's rate over a veth pair between
    the same two hosts (no delay): the peer the emulator is set against."""
    a, b = PEER_DEVICES
    netns.add_veth(circuit.src_ns, a, circuit.dst_ns, b)
    try:
        netns.add_address(circuit.src_ns, a, PEER_ADDRESSES[0], 30)
        netns.add_address(circuit.dst_ns, b, PEER_ADDRESSES[1], 30)
        rate = f"{circuit.rate_bps}bit"
        for argv in (
            ["tc", "qdisc", "add", "dev", a, "root", "handle", "1:", "htb", "default", "1"],
            ["tc", "class", "add", "dev", a, "parent", "1:", "classid", "1:1", "htb",
             "rate", rate, "ceil", rate],
        ):  # fmt: skip
            netns.run(circuit.src_ns, argv, timeout_s=10)
        test = iperf3.Iperf3Test(
            client_ns=circuit.src_ns,
            server_ns=circuit.dst_ns,
            address=PEER_ADDRESSES[1],
            duration_s=case.duration_s,
            omit_s=case.omit_s,
            streams=case.streams,
            cc=case.cc,
        )
        result = iperf3.run(test)
    finally:
        netns.delete_link(circuit.src_ns, a)
    goodput = result.goodput_bps
    return {
        "goodput_gbps": goodput / 1e9,
        "utilization": _utilization(goodput, circuit),
        "retransmits": result.retransmits,
    }


@dataclass
class _Spread:
    values: list[float] = field(default_factory=list)

    def of(self, name: str) -> dict[str, float | None]:
        if not self.values:
            return {f"{name}_median": None, f"{name}_min": None, f"{name}_max": None}
        return {
            f"{name}_median": round(statistics.median(self.values), 4),
            f"{name}_min": round(min(self.values), 4),
            f"{name}_max": round(max(self.values), 4),
        }


def _spread(runs: list[dict[str, Any]], key: str) -> _Spread:
    return _Spread([r[key] for r in runs if r.get(key) is not None])


def _summarize(case: Case, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """A case's figures over its runs: medians, least and most."""
    rtt = case.rtt_ms
    summary: dict[str, Any] = {
        "rate_gbps": case.rate_gbps,
        "rtt_ms": rtt,
        "loss": case.loss,
        "loss_seed": case.loss_seed,
        "cc": "ping" if case.test == "ping" else case.cc,
        "streams": 0 if case.test == "ping" else case.streams,
        "test": case.test,
        "cross_traffic_gbps": case.cross_gbps,
        "repetitions": len(runs),
        "max_1ms_rate_ratio": round(max((r["max_1ms_rate_ratio"] for r in runs), default=0), 4),
        "emulator_max_late_ms": round(max((r["emulator_max_late_ms"] for r in runs), default=0), 3),
        "emulator_late_held_ms": _spread(runs, "emulator_late_held_ms").of("x")["x_median"],
        "emulator_rss_mib": round(max((r["emulator_rss_mib"] for r in runs), default=0), 1),
        "emulator_cpu_cores": _spread(runs, "emulator_cpu_cores").of("x")["x_median"],
        **_spread(runs, "host_steal_s").of("host_steal_s"),
        "degraded_runs": sum(1 for r in runs if r["degraded"]),
        "degraded_reasons": sorted({reason for r in runs for reason in r["reasons"]}),
    }
    if case.test == "ping":
        means = _spread(runs, "rtt_mean_ms")
        summary.update(means.of("rtt_mean_ms"))
        summary.update(_spread(runs, "rtt_std_ms").of("rtt_std_ms"))
        summary["rtt_mean_ms"] = summary["rtt_mean_ms_median"]
        summary["rtt_std_ms"] = summary["rtt_std_ms_median"]
        summary["rtt_bias_ms"] = (
            None if summary["rtt_mean_ms"] is None else round(summary["rtt_mean_ms"] - rtt, 3)
        )
        summary["rtt_min_ms"] = min(
            (r["rtt_min_ms"] for r in runs if r["rtt_min_ms"]), default=None
        )
        summary["lost"] = sum(r["lost"] for r in runs)
        summary["goodput_gbps"] = summary["utilization"] = None
        return summary
    for key in ("utilization", "goodput_gbps", "tool_goodput_gbps", "retransmits",
                "emulator_delivered_gbps", "rtt_mean_ms", "rtt_std_ms",
                "cross_received_gbps"):  # fmt: skip
        summary.update(_spread(runs, key).of(key))
    summary["utilization"] = summary["utilization_median"]
    summary["goodput_gbps"] = summary["goodput_gbps_median"]
    if case.test == "peer":
        peers = [r["peer"] for r in runs]
        htb = _Spread([p["goodput_gbps"] for p in peers]).of("x")["x_median"]
        summary["peer"] = "htb over veth, no delay"
        summary["peer_goodput_gbps_median"] = htb
        summary["peer_utilization_median"] = _Spread([p["utilization"] for p in peers]).of("x")[
            "x_median"
        ]
        ratios = [r["goodput_gbps"] / p["goodput_gbps"] for r, p in zip(runs, peers, strict=True)
                  if p["goodput_gbps"]]  # fmt: skip
        summary.update(_Spread(ratios).of("ratio_to_peer"))
    return summary


def _targets(cases: list[dict[str, Any]]) -> dict[str, Any]:
    """The issue's targets, with the figure measured for each and whether it was met."""

    def utilization(rtt: float) -> float | None:
        found = [
            c["utilization_median"] for c in cases
            if c["test"] == "iperf3" and c["streams"] == 1 and c["rate_gbps"] == 9.6
            and abs(c["rtt_ms"] - rtt) < 5 and not c["loss"] and not c["cross_traffic_gbps"]
        ]  # fmt: skip
        return found[0] if found else None

    pings = [c for c in cases if c["cc"] == "ping" and c["rtt_bias_ms"] is not None]
    loaded = [c for c in cases if c["cc"] != "ping"]
    measured = {
        "utilization_cubic_1_stream_9.6gbps_163ms": utilization(163.0),
        "utilization_cubic_1_stream_9.6gbps_650ms": utilization(650.0),
        "max_1ms_rate_ratio": max((c["max_1ms_rate_ratio"] for c in loaded), default=None),
        "idle_rtt_bias_ms": max((abs(c["rtt_bias_ms"]) for c in pings), default=None),
        "idle_rtt_std_ms": max((c["rtt_std_ms"] for c in pings), default=None),
    }
    verdict: dict[str, Any] = {}
    for name, target in TARGETS.items():
        value = measured[name]
        at_least = name.startswith("utilization")
        met = None if value is None else (value >= target if at_least else value <= target)
        verdict[name] = {"target": target, "measured": value, "met": met}
    return verdict
