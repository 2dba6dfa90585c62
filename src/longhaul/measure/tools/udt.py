"""UDT between two testbed hosts, memory to memory, through the harness in
tools/udt-harness (UDT4 4.11 from Debian's libudt-dev; scripts/setup.sh builds it).

The receiver (`udt_harness recv`) starts in the server's namespace and says
`{"listening": PORT}` once bound; the sender (`udt_harness send`) in the client's
namespace announces the length, sends it from memory and waits for the receiver's one-byte
answer. Each prints one JSON line, with the buffer sizes in force as UDT reads them back.
The goodput is the receiver's: its bytes over the time from its first data (the announced
length leads them, in their first packet) to the last byte, as Hurricane's runs from its
first datagram: the handshake's round trip before it is not UDT's to pay. UDT runs "out
of the box" (its own buffers and flow window) unless `buffer_bytes` is given ("tuned":
UDT's and UDP's buffers and the flow window hold that many bytes, meant to be the
bandwidth-delay product, never less than UDT's defaults).
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from longhaul import binaries
from longhaul.measure.tools import ToolError
from longhaul.testbed import netns, serving

RECEIVER_EXIT_S = 5.0
"""How long the receiver may take to print its result and exit after the sender did."""


class UdtError(ToolError):
    """The UDT harness failed or is not built; the message says which and how to fix it."""


@dataclass(frozen=True)
class UdtTest:
    client_ns: str
    server_ns: str
    address: str
    """The receiver's address."""
    bytes_total: int
    buffer_bytes: int = 0
    """0: UDT's defaults; otherwise UDT_SNDBUF, UDT_RCVBUF, UDP_SNDBUF and UDP_RCVBUF
    of this size and a flow window (UDT_FC) of as many packets, at both ends, never
    below UDT's defaults (12 MB buffers, 25,600 packets: smaller ones stall UDT 4.11, see
    the harness). The kernel holds the UDP buffers at net.core.wmem_max and rmem_max.
    The sizes in force are in the result's `raw`."""
    timeout_s: float = 60.0
    """For the whole transfer (the sender's run)."""
    port: int = 9000
    """UDP."""
    mss_bytes: int = 1500
    """UDT's packet size, IP and UDP headers included (UDT_MSS)."""


@dataclass(frozen=True)
class UdtResult:
    goodput_bps: float
    """The receiver's bytes over its time."""
    seconds: float
    """The receiver's: from the first data in to the last byte."""
    bytes: int
    sender_seconds: float = 0.0
    """The sender's: from the connection to the receiver's answer (one round trip more)."""
    rtt_ms: float | None = None
    """UDT's smoothed RTT at the end, as the sender saw it."""
    packets_sent: int | None = None
    packets_retransmitted: int | None = None
    raw: dict[str, Any] = field(default_factory=dict)
    """Both ends' JSON lines, under `recv` and `send`."""


def harness() -> Path:
    """The harness: `$LONGHAUL_UDT_HARNESS`, the repository's build, or one on PATH."""
    found = binaries.find("LONGHAUL_UDT_HARNESS", "target/udt-harness/udt_harness", "udt_harness")
    if found is None:
        raise UdtError(
            "the UDT harness is not built: run `make setup` (as root it installs "
            "libudt-dev and g++, and builds tools/udt-harness into target/udt-harness), or "
            "set LONGHAUL_UDT_HARNESS to the binary"
        )
    return found


def missing() -> str | None:
    try:
        harness()
    except UdtError as exc:
        return str(exc)
    return None


def parse(text: str) -> dict[str, Any]:
    """The harness's result: the last JSON line in `text` with `bytes` and `seconds`. Its
    `{"error": ...}` line is `UdtError` with the harness's message."""
    result: dict[str, Any] | None = None
    for line in text.splitlines():
        if not line.strip().startswith("{"):
            continue
        try:
            document = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(document, dict) and "error" in document:
            raise UdtError(f"udt_harness: {document['error']}")
        if isinstance(document, dict) and "bytes" in document and "seconds" in document:
            result = document
    if result is None:
        raise UdtError(
            f"no result from udt_harness (cut short, or not its output): "
            f"{text.strip()[-200:] or '(nothing)'}"
        )
    return result


def result_from(received: dict[str, Any], sent: dict[str, Any]) -> UdtResult:
    """One result from both ends' lines (the goodput is the receiver's)."""
    seconds, got = float(received["seconds"]), int(received["bytes"])
    return UdtResult(
        goodput_bps=got * 8 / seconds if seconds > 0 else 0.0,
        seconds=seconds,
        bytes=got,
        sender_seconds=float(sent["seconds"]),
        rtt_ms=_number(sent.get("rtt_ms")),
        packets_sent=_whole(sent.get("packets_sent")),
        packets_retransmitted=_whole(sent.get("packets_retransmitted")),
        raw={"recv": received, "send": sent},
    )


def _number(value: Any) -> float | None:
    return None if value is None else float(value)


def _whole(value: Any) -> int | None:
    return None if value is None else int(value)


def tuning(test: UdtTest) -> list[str]:
    """The options both ends share."""
    options = ["--port", str(test.port), "--mss", str(test.mss_bytes)]
    if test.buffer_bytes > 0:
        options += ["--buffer-bytes", str(test.buffer_bytes)]
    return options


def run(test: UdtTest) -> UdtResult:
    """One transfer: the receiver in the server's namespace, the sender in the client's,
    both gone after. Bounded by `timeout_s`."""
    binary = str(harness())
    if test.bytes_total <= 0:
        raise UdtError(f"bytes_total must be positive, not {test.bytes_total}")
    receiver_argv = [binary, "recv", *tuning(test)]
    ready = serving.says('"listening"', "the UDT receiver", UdtError)
    with serving.serving(test.server_ns, receiver_argv, ready) as receiver:
        sender_argv = [binary, "send", "--to", test.address, "--bytes", str(test.bytes_total),
                       *tuning(test)]  # fmt: skip
        try:
            sender = subprocess.run(
                netns.command(test.client_ns, sender_argv),
                capture_output=True,
                text=True,
                timeout=test.timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise UdtError(
                f"the UDT transfer ran over its {test.timeout_s:g} s (raise timeout_s for "
                "a slow circuit or a large size)"
            ) from exc
        sent = parse(sender.stdout + sender.stderr)
        try:
            receiver.wait(timeout=RECEIVER_EXIT_S)
        except subprocess.TimeoutExpired as exc:
            raise UdtError(
                f"the UDT receiver did not finish {RECEIVER_EXIT_S:g} s after the sender"
            ) from exc
        assert receiver.stdout is not None and receiver.stderr is not None
        received = parse(receiver.stdout.read() + receiver.stderr.read())
    if sender.returncode != 0:
        raise UdtError(f"udt_harness send exited with status {sender.returncode}")
    result = result_from(received, sent)
    if result.bytes != test.bytes_total:
        raise UdtError(f"the UDT receiver got {result.bytes} of {test.bytes_total} bytes")
    return result
