"""iperf3 between two testbed hosts, in JSON mode, read robustly.

iperf3 3.12 (Debian 12) sometimes prints a JSON document twice (an error object, then
the result), writes `nan` and `-nan` where JSON has no such number, and counts the
warm-up intervals (`-O`) in its intervals but not in its totals. `parse` copes with all
of it; `run` starts the server and the client in their namespaces, with a timeout that
grows with the round-trip time and the number of streams (connection set-up and the end
of a test take round trips per stream).

A campaign row's throughput is iperf3's, held to what the emulated line delivered over
its best stretch of the measured length (`watch.held_to_line`: a receiving process that
fell behind its socket reads the backlog faster than the line when it catches up); the
row keeps both (`tool_throughput_gbps`, `line_gbps` in its extra).
"""

from __future__ import annotations

import json
import re
import shutil
import statistics
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from longhaul.measure.params import KERNEL_CC, Param
from longhaul.measure.tools import ToolError
from longhaul.testbed import crosstraffic, encryptor, netns, serving
from longhaul.testbed.watch import (
    best_window_bps,
    held_to_line,
    line_during,
    tcp_payload_share,
)

if TYPE_CHECKING:
    from longhaul.measure.campaign import Run
    from longhaul.measure.rows import Row
    from longhaul.testbed import CircuitRecord, Testbed


class Iperf3Error(ToolError):
    """iperf3 failed or is missing; the message says which and how to fix it."""


class NoResultError(Iperf3Error):
    """The text holds no iperf3 -J document at all (another tool's output, or cut short)."""


@dataclass(frozen=True)
class Iperf3Test:
    client_ns: str
    server_ns: str
    address: str
    duration_s: float = 10.0
    omit_s: float = 2.0
    """Warm-up the totals leave out (iperf3 -O)."""
    streams: int = 1
    cc: str = "cubic"
    port: int = 5201
    rtt_ms: float = 0.0
    """The path's round-trip time, for the timeout."""
    socket_buffer_bytes: int = 0
    """Pinned socket buffers at both ends (iperf3 -w: SO_SNDBUF and SO_RCVBUF, which the
    kernel doubles for its own accounting); 0 leaves the kernel's auto-tuning."""


@dataclass(frozen=True)
class Iperf3Result:
    goodput_bps: float
    """Received bits per second over the test, warm-up left out (sum_received; for UDP
    the receiver's rate)."""
    sent_bps: float
    retransmits: int
    rtt_ms: list[float] = field(default_factory=list)
    """TCP's smoothed RTT of each stream at the end of each measured interval."""
    raw: dict[str, Any] = field(default_factory=dict)
    protocol: str = "TCP"
    """TCP or UDP (iperf3 -u)."""
    lost_packets: int | None = None
    """UDP: datagrams the receiver never saw."""
    packets: int | None = None
    """UDP: datagrams sent."""
    jitter_ms: float | None = None
    """UDP: the receiver's RFC 3550 interarrival jitter."""
    interval_end_s: list[float] = field(default_factory=list)
    """When each measured interval ended, seconds from the start (warm-up left out)."""
    interval_gbps: list[float] = field(default_factory=list)
    """The sender's rate over each measured interval, all streams together."""
    stream_interval_gbps: list[list[float]] = field(default_factory=list)
    """The same per stream: one list per stream, one value per interval."""

    @property
    def rtt_mean_ms(self) -> float | None:
        return statistics.fmean(self.rtt_ms) if self.rtt_ms else None

    @property
    def rtt_std_ms(self) -> float | None:
        return statistics.pstdev(self.rtt_ms) if len(self.rtt_ms) > 1 else None

    @property
    def series(self) -> dict[str, Any]:
        """The per-interval series, as a row's `extra` keeps them."""
        return {
            "interval_end_s": self.interval_end_s,
            "interval_gbps": self.interval_gbps,
            "stream_interval_gbps": self.stream_interval_gbps,
        }

    @property
    def system_info(self) -> str | None:
        """`uname -a` of the client, as iperf3 reports it."""
        value = self.raw.get("start", {}).get("system_info")
        return value if isinstance(value, str) else None

    @property
    def version(self) -> str | None:
        value = self.raw.get("start", {}).get("version")
        return value if isinstance(value, str) else None


def timeout_s(test: Iperf3Test) -> float:
    """How long a test may take before it is stopped: its length, plus set-up and wind-down
    round trips for every stream, plus a margin."""
    round_trips = 10 + 4 * test.streams
    return test.duration_s + test.omit_s + round_trips * test.rtt_ms / 1000 + 15


_NAN = re.compile(r"(?<![\w\"])-?nan(?![\w\"])", re.IGNORECASE)


def parse(text: str) -> Iperf3Result:
    """The result in iperf3's JSON output (the last document that has one). A run that
    failed (iperf3's `error`), or output cut short, is `Iperf3Error` with iperf3's own
    message: never a measurement of 0 b/s."""
    document = _last_result(text)
    if document is None:
        raise NoResultError(
            f"no iperf3 JSON result (not iperf3 -J output, or cut short): "
            f"{text.strip()[-200:] or '(nothing)'}"
        )
    if document.get("error"):
        raise Iperf3Error(f"iperf3: {document['error']}")
    end = document.get("end") or {}
    udp = document.get("start", {}).get("test_start", {}).get("protocol") == "UDP"
    # iperf3 before 3.10 has only `sum` for UDP (the sender's, with the receiver's loss).
    received = end.get("sum_received") or (end.get("sum") if udp else None)
    sent = end.get("sum_sent") or (end.get("sum") if udp else None) or {}
    if not isinstance(received, dict) or "bits_per_second" not in received:
        raise Iperf3Error("iperf3's output has no totals: the run did not finish")
    rtts = [
        stream["rtt"] / 1000
        for interval in document.get("intervals", [])
        if not interval.get("sum", {}).get("omitted")
        for stream in interval.get("streams", [])
        if stream.get("rtt")
    ]
    sent_bps = float(sent.get("bits_per_second") or 0.0)
    measured = [i for i in document.get("intervals", []) if not i.get("sum", {}).get("omitted")]
    return Iperf3Result(
        goodput_bps=_udp_received_bps(sent_bps, received)
        if udp
        else float(received["bits_per_second"] or 0.0),
        sent_bps=sent_bps,
        retransmits=int(sent.get("retransmits") or 0),
        rtt_ms=rtts,
        raw=document,
        protocol="UDP" if udp else "TCP",
        lost_packets=_int(received.get("lost_packets")) if udp else None,
        packets=_int(received.get("packets")) if udp else None,
        jitter_ms=_float(received.get("jitter_ms")) if udp else None,
        interval_end_s=[float(i.get("sum", {}).get("end") or 0.0) for i in measured],
        interval_gbps=[_gbps(i.get("sum", {})) for i in measured],
        stream_interval_gbps=[
            [_gbps(i["streams"][k]) for i in measured if k < len(i.get("streams", []))]
            for k in range(max((len(i.get("streams", [])) for i in measured), default=0))
        ],
    )


def _gbps(summary: dict[str, Any]) -> float:
    return float(summary.get("bits_per_second") or 0.0) / 1e9


def _udp_received_bps(sent_bps: float, received: dict[str, Any]) -> float:
    """What arrived: the sending rate less the share the receiver counted lost (iperf3
    reports the receiver's bytes as those sent)."""
    lost = _float(received.get("lost_percent")) or 0.0
    return sent_bps * (1 - lost / 100)


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def _last_result(text: str) -> dict[str, Any] | None:
    cleaned = _NAN.sub("null", text)
    decoder = json.JSONDecoder()
    found: dict[str, Any] | None = None
    position = 0
    while (start := cleaned.find("{", position)) != -1:
        try:
            document, position = decoder.raw_decode(cleaned, start)
        except json.JSONDecodeError:
            position = start + 1
            continue
        if not _is_document(document):
            continue
        if "end" in document or found is None:
            found = document
    return found


def _is_document(found: Any) -> bool:
    """An iperf3 -J document, not an object inside one (an interval's `sum` has a
    `start` and an `end` too, but as numbers)."""
    return isinstance(found, dict) and (
        isinstance(found.get("start"), dict)
        or isinstance(found.get("end"), dict)
        or "error" in found
    )


def client_argv(test: Iperf3Test) -> list[str]:
    argv = ["iperf3", "-c", test.address, "-p", str(test.port), "-J",
            "-t", f"{test.duration_s:g}", "-O", f"{test.omit_s:g}",
            "-P", str(test.streams), "-C", test.cc]  # fmt: skip
    if test.socket_buffer_bytes:
        argv += ["-w", str(test.socket_buffer_bytes)]
    return argv


def run(test: Iperf3Test) -> Iperf3Result:
    """Run one test: a one-off server in the server's namespace, the client in the
    client's. Bounded by `timeout_s`."""
    if shutil.which("iperf3") is None:
        raise Iperf3Error("iperf3 is missing: apt-get install iperf3 (make setup does)")
    server_argv = ["iperf3", "-s", "-1", "-p", str(test.port)]
    ready = serving.listens(test.server_ns, test.port, "the iperf3 server", Iperf3Error)
    with serving.serving(test.server_ns, server_argv, ready, merge_output=True):
        argv = client_argv(test)
        try:
            client = subprocess.run(
                netns.command(test.client_ns, argv),
                capture_output=True,
                text=True,
                timeout=timeout_s(test),
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise Iperf3Error(f"iperf3 ran over its {timeout_s(test):.0f} s") from exc
    result = parse(client.stdout + client.stderr)  # iperf3's own message first
    if client.returncode != 0:
        raise Iperf3Error(f"iperf3 exited with status {client.returncode}: {client.stderr}")
    return result


CROSS_HELD = 0.95
"""Cross-traffic that delivered less than this share of its rate did not hold."""


class Iperf3Tool:
    """tcp_throughput with iperf3 between the circuit's hosts, with UDP cross-traffic
    from the cross-traffic host when the run asks for it."""

    name = "iperf3"
    test = "tcp_throughput"
    params: tuple[Param, ...] = (
        # Hosts as USN had them: without window scaling a host's window was 64 KB, and
        # 65536 here pins both ends' buffers so one stream crawls as it did over 1,400
        # miles. 0: the kernel's auto-tuning.
        Param("socket_buffer_bytes", int, 0, grid=False, low=0, high=1 << 30),
        # Hosts behind link encryptors (`testbed.encryptor`), as USN's host3-host4 path
        # was: none, or on with what a sealed packet too long for the line meets. The
        # hosts' interface MTU for the run (0: as the circuit has it), set back after it.
        Param("encryptor", str, "none", grid=False, choices=("none", *encryptor.OVERSIZE)),
        Param("host_mtu_bytes", int, 0, grid=False, low=0, high=65_535),
    )
    cc = KERNEL_CC
    cc_source = "the kernel"

    def missing(self) -> str | None:
        if shutil.which("iperf3") is None:
            return "iperf3 is missing: apt-get install iperf3 (make setup does)"
        return None

    def estimate_s(self, planned: Run) -> float:
        values, streams = planned.test.values, planned.params["streams"]
        round_trips_s = (10 + 4 * streams) * planned.connection.rtt_ms / 1000
        return float(values["duration_s"] + values["warmup_s"] + 2 + round_trips_s)

    def measure(
        self, planned: Run, circuit: CircuitRecord, testbed: Testbed, row: Row
    ) -> dict[str, Any]:
        values, params = planned.test.values, planned.params
        row.cc, row.streams = params["cc"], params["streams"]
        row.cross_traffic_gbps = params["cross_traffic_gbps"]
        test = Iperf3Test(
            client_ns=circuit.src_ns,
            server_ns=circuit.dst_ns,
            address=circuit.dst_addr,
            duration_s=values["duration_s"],
            omit_s=values["warmup_s"],
            streams=params["streams"],
            cc=params["cc"],
            rtt_ms=circuit.rtt_ms,
            socket_buffer_bytes=int(values.get("socket_buffer_bytes", 0)),
        )
        traffic = None
        if row.cross_traffic_gbps > 0:
            attached = testbed.attach_cross_host(circuit.number)
            length_s = values["duration_s"] + values["warmup_s"] + 1
            rate_bps = round(row.cross_traffic_gbps * 1e9)
            traffic = crosstraffic.CrossTraffic(circuit, attached, rate_bps, length_s).start()
        sealed: dict[str, Any] = {}
        try:
            with _middleboxes(circuit, values, sealed):
                payload_share = tcp_payload_share(encryptor.host_mtu(circuit))
                result, line = line_during(circuit, lambda: run(test))
            cross = traffic.finish() if traffic is not None else None
        finally:
            if traffic is not None:
                traffic.stop()
        row.variant = variant(values)
        if sealed:
            row.extra["encryptor"] = sealed
        line_bps = best_window_bps(line, test.duration_s)
        row.throughput_gbps = held_to_line(result.goodput_bps, line_bps, payload_share) / 1e9
        row.extra["tool_throughput_gbps"] = result.goodput_bps / 1e9
        row.extra["line_gbps"] = None if line_bps is None else line_bps / 1e9
        row.retransmits = result.retransmits
        row.rtt_ms = result.rtt_mean_ms
        row.rtt_std_ms = result.rtt_std_ms
        row.extra.update(result.series)
        if test.socket_buffer_bytes:
            row.extra["socket_buffer_bytes"] = test.socket_buffer_bytes
        raw: dict[str, Any] = {"iperf3": result.raw}
        if cross is not None:
            received = cross.received_rate_bps / 1e9
            row.extra.update(
                {
                    "cross_sent_gbps": cross.sent.get("rate_bps", 0) / 1e9,
                    "cross_received_gbps": received,
                    "cross_lost": cross.lost,
                    "cross_held": received >= CROSS_HELD * row.cross_traffic_gbps,
                }
            )
            raw["cross_traffic"] = {"sent": cross.sent, "received": cross.received}
        return raw


def variant(values: dict[str, Any]) -> str | None:
    """What names a run through middleboxes apart from plain TCP at the circuit's MTU
    (None: plain), e.g. `encrypted, MTU 8950` or `plain, MTU 9000`."""
    chosen, mtu = values.get("encryptor", "none"), int(values.get("host_mtu_bytes", 0))
    if chosen == "none" and not mtu:
        return None
    name = "plain" if chosen == "none" else "encrypted" if chosen == "fragment" else (
        f"encrypted ({chosen})")  # fmt: skip
    return f"{name}, MTU {mtu}" if mtu else name


@contextmanager
def _middleboxes(
    circuit: CircuitRecord, values: dict[str, Any], counters: dict[str, Any]
) -> Iterator[None]:
    """The hosts' MTU and the encryptors as the test asks, for the length of a run; the
    encryptors' counters land in `counters`."""
    mtu, chosen = int(values.get("host_mtu_bytes", 0)), values.get("encryptor", "none")
    before = encryptor.host_mtu(circuit) if mtu else 0
    try:
        if mtu:
            encryptor.set_host_mtu(circuit, mtu)
        if chosen != "none":
            setup = encryptor.Encryptor(oversize=chosen)
            encryptor.encrypt(circuit, setup, encryptor.new_secret())
        yield
        if chosen != "none":
            counters.update(encryptor.counters(circuit) or {})
    finally:
        if chosen != "none":
            encryptor.decrypt(circuit)
        if mtu:
            encryptor.set_host_mtu(circuit, before)


TOOL = Iperf3Tool()
