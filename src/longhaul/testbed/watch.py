"""Watching a circuit over a run: what its emulator and its TUN devices went through
between the run's start and its end, and the CPU time the machine's hypervisor took from
it meanwhile, for the run's `health`.

A run starts on a quiet circuit: `Watch.start` first waits until the frames of the run
before have left the emulator's queue and line. Without that, a run that follows a bulk
transfer on the same circuit begins behind up to a queue's worth of the last one's data
(its socket keeps sending after iperf3 exits, until the far end's reset comes back):
its first round trips are inflated, and cubic's HyStart, seeing the delay grow, ended
slow start at 41 segments on a 9.6 Gb/s, 163 ms loop (2 % of the line for 20 s, where
the same test on a quiet circuit filled it).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from concurrent import futures
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from longhaul.testbed import emulator, netns
from longhaul.testbed.state import CircuitRecord


@dataclass(frozen=True)
class Watch:
    circuit: CircuitRecord
    since_ns: int
    """The monotonic clock at the start (the emulator's clock too)."""
    tun_dropped: int
    arena_full: int
    steal_s: float
    """The machine's stolen CPU time at the start (`host_steal_s`)."""

    settled_s: float = 0.0
    """How long the start waited for the circuit to go quiet."""

    @classmethod
    def start(cls, circuit: CircuitRecord) -> Watch:
        settled_s, stats = settle(circuit)
        arena_full = _arena_full_in(stats)
        return cls(circuit, time.monotonic_ns(), _tun_dropped(circuit), arena_full,
                   host_steal_s(), settled_s)  # fmt: skip

    def finish(self, last_s: float | None = None) -> dict[str, Any]:
        """The emulator's record of the run (`longhaul-wan` `health`), or of its last
        `last_s` seconds (a tool whose figure covers only the end of its run), with the
        frames the TUN devices' queues and the emulator's memory dropped, and the CPU
        time the hypervisor took, over the whole run."""
        control = Path(self.circuit.control)
        since_ns = self.since_ns
        if last_s is not None:
            since_ns = max(since_ns, time.monotonic_ns() - round(last_s * 1e9))
        answer = emulator.request(control, {"op": "health", "since_ns": since_ns})
        answer.pop("ok", None)
        answer["tun_tx_dropped"] = _tun_dropped(self.circuit) - self.tun_dropped
        answer["arena_full_frames"] = _arena_full(self.circuit) - self.arena_full
        answer["host_steal_s"] = round(host_steal_s() - self.steal_s, 3)
        # The notes the answer comes from are 100 ms apart: it covers from the last one
        # before the start.
        answer["covers_s"] = round((answer["to_ns"] - answer["from_ns"]) / 1e9, 3)
        answer["settled_s"] = round(self.settled_s, 3)
        return answer


T = TypeVar("T")

LINE_SAMPLE_S = 0.1
"""How often `line_during` reads what the line has delivered."""


def line_during(
    circuit: CircuitRecord, run: Callable[[], T], direction: str = "a_to_b"
) -> tuple[T, list[tuple[float, int]]]:
    """`run()`, reading meanwhile what the circuit's line has delivered in `direction`
    (`a_to_b`, from the source host, or `b_to_a`):
    (monotonic seconds, IP bytes so far) every `LINE_SAMPLE_S`: a `stats` request to
    the emulator's control socket each, whose round trip took 0.08 ms (median of 200 on
    an idle 9.6 Gb/s circuit), under 0.1 % of a core at ten a second. An exception of
    `run` comes out as it is."""
    control = Path(circuit.control)
    line: list[tuple[float, int]] = []
    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(run)
        while not futures.wait([running], timeout=LINE_SAMPLE_S).done:
            stats = emulator.request(control, {"op": "stats"})
            line.append((time.monotonic(), int(stats[direction]["tx_bytes"])))
        return running.result(), line


def best_window_bps(line: list[tuple[float, int]], window_s: float) -> float | None:
    """The most the line delivered over any stretch of about `window_s` (short of it by
    half the samples' spacing at most) in `line`'s samples of (seconds, cumulative
    bytes): bits per second, or None if the samples span less."""
    best = None
    slack_s = LINE_SAMPLE_S / 2
    j = 0
    for i, (t0, b0) in enumerate(line):
        j = max(j, i + 1)
        while j < len(line) and line[j][0] - t0 < window_s - slack_s:
            j += 1
        if j == len(line):
            break
        t1, b1 = line[j]
        rate = 8 * (b1 - b0) / (t1 - t0)
        best = rate if best is None else max(best, rate)
    return best


TCP_IP_HEADER_BYTES = 52
"""IPv4 20 and TCP 20 bytes, and the 12 of the timestamp option Linux sends by default
(`net.ipv4.tcp_timestamps` = 1, ip-sysctl.rst)."""


def tcp_payload_share(mtu_bytes: int = 1500) -> float:
    """The most TCP payload a full-sized packet carries per IP byte at `mtu_bytes` (1,448
    of 1,500): an upper bound on any run's share (smaller segments carry less; an
    encryptor's trailer, or cross-traffic, adds line bytes that carry none of the run's
    payload)."""
    return (mtu_bytes - TCP_IP_HEADER_BYTES) / mtu_bytes


def held_to_line(tool_bps: float, line_bps: float | None, payload_share: float) -> float:
    """What a tool counted (payload bits per second over its measured part), held to what
    the line delivered over its best stretch of that length (`line_bps`, IP bits per
    second, from `best_window_bps`) at `payload_share` payload bytes per IP byte at most:
    the most a receiver can have been given. A tool that counts what its receiving
    process read can count more: a process that fell behind its socket (the kernel holding
    up to a window for it) reads that backlog faster than the line when it catches up.
    Measured: eight cubic streams' 8 s at 9.6 Gb/s x 163 ms came to 1.028 of the payload
    ceiling in iperf3's count where the line delivered at most 0.993 over any 8 s. None
    for `line_bps` (no stretch that long was sampled) leaves the tool's figure."""
    if line_bps is None:
        return tool_bps
    return min(tool_bps, line_bps * payload_share)


QUIET_BYTES = 64 * 1024
"""A direction holding less than this (queued and on the line) is quiet: an odd
acknowledgement or reset may still be on its way."""
SETTLE_POLL_S = 0.05


def settle(circuit: CircuitRecord, extra_s: float = 2.0) -> tuple[float, dict[str, Any]]:
    """Wait until both directions of `circuit` are quiet on two polls in a row, at most
    long enough for a full queue and the line to drain (plus `extra_s`): the seconds
    waited, and the emulator's last `stats`."""
    control = Path(circuit.control)
    started = time.monotonic()
    # With no queue given the emulator holds one bandwidth-delay product: a delay's worth.
    if circuit.queue_bytes:
        queue_s = 8 * circuit.queue_bytes / circuit.rate_bps
    else:
        queue_s = circuit.delay_ns / 1e9
    drain_s = 3 * circuit.rtt_ms / 1e3 + queue_s
    quiet_polls = 0
    stats = emulator.request(control, {"op": "stats"})
    while True:
        held = max(stats[d]["in_flight_bytes"] for d in ("a_to_b", "b_to_a"))
        quiet_polls = quiet_polls + 1 if held < QUIET_BYTES else 0
        if quiet_polls == 2 or time.monotonic() - started >= drain_s + extra_s:
            return time.monotonic() - started, stats
        time.sleep(SETTLE_POLL_S)
        stats = emulator.request(control, {"op": "stats"})


def host_steal_s(stat: Path = Path("/proc/stat")) -> float:
    """CPU time the hypervisor has taken from this machine's CPUs since boot, summed over
    them (`steal` in /proc/stat, proc(5)): a virtual machine's CPUs given to others while
    it had work. A run's share of it says how much of its lateness was the host's. 0 on
    bare metal, and where /proc/stat cannot be read."""
    try:
        first = stat.read_text().split("\n", 1)[0].split()
    except OSError:
        return 0.0
    # cpu user nice system idle iowait irq softirq steal ...
    if len(first) < 9 or first[0] != "cpu":
        return 0.0
    return int(first[8]) / os.sysconf("SC_CLK_TCK")


def _tun_dropped(circuit: CircuitRecord) -> int:
    return sum(
        netns.device_counters(ns, dev).get("tx_dropped", 0)
        for ns, dev in ((circuit.src_ns, circuit.src_dev), (circuit.dst_ns, circuit.dst_dev))
    )


def _arena_full(circuit: CircuitRecord) -> int:
    return _arena_full_in(emulator.request(Path(circuit.control), {"op": "stats"}))


def _arena_full_in(stats: dict[str, Any]) -> int:
    return int(stats.get("engine", {}).get("arena_full_frames", 0))
