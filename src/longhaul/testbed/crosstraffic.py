"""Real UDP cross-traffic over a circuit, from the cross-traffic host.

The cross-traffic host (its own namespace) hangs off the circuit's source host by a veth
pair; `longhaul-wan udp-send` there sends UDP (in GSO batches, so 1-4 Gb/s fit on two
cores) to a `longhaul-wan udp-sink` in the circuit's destination host, over the circuit,
where it shares the queue and the line with whatever else crosses it. Both report what
they counted, so a run says whether the rate held.
"""

from __future__ import annotations

import json
import subprocess
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

from longhaul.testbed import emulator, netns, serving
from longhaul.testbed.netns import TestbedError
from longhaul.testbed.plan import cross_host
from longhaul.testbed.state import CircuitRecord, CrossRecord

DEFAULT_PORT = 9000
DATAGRAM_BYTES = 1472
"""A 1,500-byte IP packet: 1,472 bytes of UDP payload."""


@dataclass(frozen=True)
class CrossTrafficResult:
    sent: dict[str, Any]
    """udp-send's report: datagrams, ip_bytes, rate_bps, send_errors, ..."""
    received: dict[str, Any]
    """udp-sink's report: datagrams, ip_bytes, lost, rate_bps, intervals, ..."""

    @property
    def received_rate_bps(self) -> float:
        return float(self.received.get("rate_bps", 0.0))

    @property
    def lost(self) -> int:
        return int(self.received.get("lost", 0))


class CrossTraffic:
    """One run of cross-traffic: started by `start`, ended (and reported) by `finish`."""

    def __init__(
        self,
        circuit: CircuitRecord,
        attached: CrossRecord,
        rate_bps: int,
        duration_s: float,
        port: int = DEFAULT_PORT,
        on_s: float | None = None,
        off_s: float | None = None,
    ) -> None:
        self.circuit = circuit
        self.attached = attached
        self.rate_bps = rate_bps
        self.duration_s = duration_s
        self.port = port
        self.on_off = (on_s, off_s)
        self._sink: subprocess.Popen[str] | None = None
        self._sender: subprocess.Popen[str] | None = None
        self._serving = ExitStack()

    def start(self) -> CrossTraffic:
        binary = str(emulator.binary())
        target = f"{self.circuit.dst_addr}:{self.port}"
        sink_argv = [binary, "udp-sink", "--listen", target,
                     "--duration", f"{self.duration_s + 5:g}s", "--idle-timeout", "2s"]  # fmt: skip
        ready = serving.says('"listening"', "the UDP sink", TestbedError)
        self._sink = self._serving.enter_context(
            serving.serving(self.circuit.dst_ns, sink_argv, ready)
        )
        send_argv = [binary, "udp-send", "--to", target, "--bind", self.attached.cross_addr,
                     "--rate", str(self.rate_bps), "--duration", f"{self.duration_s:g}s",
                     "--size", str(DATAGRAM_BYTES)]  # fmt: skip
        on_s, off_s = self.on_off
        if on_s is not None and off_s is not None:
            send_argv += ["--on", f"{on_s:g}s", "--off", f"{off_s:g}s"]
        self._sender = subprocess.Popen(
            netns.command(cross_host(), send_argv),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        return self

    def finish(self) -> CrossTrafficResult:
        """Wait for the sender to end and the sink to see the last datagram; both reports."""
        assert self._sink is not None and self._sender is not None
        try:
            sent_out, sent_err = self._sender.communicate(timeout=self.duration_s + 30)
            received_out, received_err = self._sink.communicate(timeout=30)
        except subprocess.TimeoutExpired as exc:
            self.stop()
            raise TestbedError("cross-traffic ran over its time") from exc
        return CrossTrafficResult(
            sent=_report("udp-send", sent_out, sent_err),
            received=_report("udp-sink", received_out, received_err),
        )

    def stop(self) -> None:
        if self._sender is not None:
            serving.stop(self._sender)
        self._serving.close()


def _report(what: str, out: str, err: str) -> dict[str, Any]:
    for line in reversed(out.strip().splitlines()):
        if line.startswith("{"):
            report: dict[str, Any] = json.loads(line)
            return report
    raise TestbedError(f"{what} printed no report: {err.strip()[-300:]}")


def run(
    circuit: CircuitRecord, attached: CrossRecord, rate_bps: int, duration_s: float
) -> CrossTrafficResult:
    """Send `rate_bps` of UDP over `circuit` for `duration_s`; what was sent and received."""
    traffic = CrossTraffic(circuit, attached, rate_bps, duration_s).start()
    try:
        return traffic.finish()
    finally:
        traffic.stop()
