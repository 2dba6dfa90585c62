"""iperf3 between two testbed hosts, in JSON mode, read robustly.

iperf3 3.12 (Debian 12) sometimes prints a JSON document twice (an error object, then
the result), writes `nan` and `-nan` where JSON has no such number, and counts the
warm-up intervals (`-O`) in its intervals but not in its totals. `parse` copes with all
of it; `run` starts the server and the client in their namespaces, with a timeout that
grows with the round-trip time and the number of streams (connection set-up and the end
of a test take round trips per stream).
"""

from __future__ import annotations

import json
import re
import shutil
import statistics
import subprocess
import time
from dataclasses import dataclass, field
from typing import Any

from longhaul.testbed import netns


class Iperf3Error(RuntimeError):
    """iperf3 failed or is missing; the message says which and how to fix it."""


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


@dataclass(frozen=True)
class Iperf3Result:
    goodput_bps: float
    """Received bits per second over the test, warm-up left out (sum_received)."""
    sent_bps: float
    retransmits: int
    rtt_ms: list[float] = field(default_factory=list)
    """TCP's smoothed RTT of each stream at the end of each measured interval."""
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def rtt_mean_ms(self) -> float | None:
        return statistics.fmean(self.rtt_ms) if self.rtt_ms else None

    @property
    def rtt_std_ms(self) -> float | None:
        return statistics.pstdev(self.rtt_ms) if len(self.rtt_ms) > 1 else None


def timeout_s(test: Iperf3Test) -> float:
    """How long a test may take before it is stopped: its length, plus set-up and wind-down
    round trips for every stream, plus a margin."""
    round_trips = 10 + 4 * test.streams
    return test.duration_s + test.omit_s + round_trips * test.rtt_ms / 1000 + 15


_NAN = re.compile(r"(?<![\w\"])-?nan(?![\w\"])", re.IGNORECASE)


def parse(text: str) -> Iperf3Result:
    """The result in iperf3's JSON output (the last document that has one)."""
    document = _last_result(text)
    if document is None:
        raise Iperf3Error(f"iperf3 printed no result: {text.strip()[-300:] or '(nothing)'}")
    if document.get("error") and "end" not in document:
        raise Iperf3Error(f"iperf3: {document['error']}")
    end = document["end"]
    received = end.get("sum_received") or end.get("sum") or {}
    sent = end.get("sum_sent") or {}
    rtts = [
        stream["rtt"] / 1000
        for interval in document.get("intervals", [])
        if not interval.get("sum", {}).get("omitted")
        for stream in interval.get("streams", [])
        if stream.get("rtt")
    ]
    return Iperf3Result(
        goodput_bps=float(received.get("bits_per_second") or 0.0),
        sent_bps=float(sent.get("bits_per_second") or 0.0),
        retransmits=int(sent.get("retransmits") or 0),
        rtt_ms=rtts,
        raw=document,
    )


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
        if isinstance(document, dict) and ("end" in document or found is None):
            found = document
    return found


def run(test: Iperf3Test) -> Iperf3Result:
    """Run one test: a one-off server in the server's namespace, the client in the
    client's. Bounded by `timeout_s`."""
    if shutil.which("iperf3") is None:
        raise Iperf3Error("iperf3 is missing: apt-get install iperf3 (make setup does)")
    server = subprocess.Popen(
        netns.command(test.server_ns, ["iperf3", "-s", "-1", "-p", str(test.port)]),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        _wait_listening(test)
        argv = ["iperf3", "-c", test.address, "-p", str(test.port), "-J",
                "-t", f"{test.duration_s:g}", "-O", f"{test.omit_s:g}",
                "-P", str(test.streams), "-C", test.cc]  # fmt: skip
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
        return parse(client.stdout + client.stderr)
    finally:
        if server.poll() is None:
            server.terminate()
        try:
            server.wait(timeout=5)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=5)


def _wait_listening(test: Iperf3Test) -> None:
    """Until the server's port is open (iperf3 prints nothing we can wait on reliably)."""
    deadline = time.monotonic() + 5
    probe = ["sh", "-c", f"ss -Hltn 'sport = :{test.port}' | grep -q LISTEN"]
    while time.monotonic() < deadline:
        found = subprocess.run(
            netns.command(test.server_ns, probe), capture_output=True, check=False, timeout=5
        )
        if found.returncode == 0:
            return
        time.sleep(0.05)
    raise Iperf3Error(f"the iperf3 server in {test.server_ns} did not start listening")
