"""UDP throughput between two testbed hosts with longhaul's generator and sink
(`longhaul-wan udp-send` / `udp-sink`): what arrives when a given rate is sent, the
channel throughput profile's one point."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from longhaul.measure.tools import ToolError, WanTool
from longhaul.testbed import emulator, netns, serving

if TYPE_CHECKING:
    from longhaul.measure.campaign import Run
    from longhaul.measure.rows import Row
    from longhaul.testbed import CircuitRecord, Testbed


class UdpError(ToolError):
    """The UDP sender or sink failed; the message says what it printed."""


@dataclass(frozen=True)
class UdpTest:
    client_ns: str
    server_ns: str
    address: str
    rate_bps: int
    duration_s: float
    port: int = 9100


def run(test: UdpTest) -> tuple[dict[str, Any], dict[str, Any]]:
    """Send for `duration_s`; the sender's and the sink's reports."""
    binary = str(emulator.binary())
    target = f"{test.address}:{test.port}"
    sink_argv = [binary, "udp-sink", "--listen", target,
                 "--duration", f"{test.duration_s + 5:g}s", "--idle-timeout", "2s"]  # fmt: skip
    send_argv = [binary, "udp-send", "--to", target, "--rate", str(test.rate_bps),
                 "--duration", f"{test.duration_s:g}s"]  # fmt: skip
    ready = serving.says("listening", "the UDP sink", UdpError)
    with serving.serving(test.server_ns, sink_argv, ready) as sink:
        try:
            sent = subprocess.run(
                netns.command(test.client_ns, send_argv),
                capture_output=True,
                text=True,
                timeout=test.duration_s + 30,
                check=False,
            )
            received, errors = sink.communicate(timeout=30)
        except subprocess.TimeoutExpired as exc:
            raise UdpError("the UDP test ran over its time") from exc
    return _last_json(sent.stdout, sent.stderr), _last_json(received, errors)


def _last_json(out: str, err: str) -> dict[str, Any]:
    for line in reversed(out.strip().splitlines()):
        if line.startswith("{"):
            report: dict[str, Any] = json.loads(line)
            return report
    raise UdpError(f"no report: {err.strip()[-300:]}")


class UdpTool(WanTool):
    """udp_throughput with longhaul-wan's UDP sender and sink (the channel profile)."""

    name = "udp"
    test = "udp_throughput"

    def estimate_s(self, planned: Run) -> float:
        return float(planned.test.values["duration_s"]) + 3 + planned.connection.rtt_ms / 1000

    def measure(
        self, planned: Run, circuit: CircuitRecord, testbed: Testbed, row: Row
    ) -> dict[str, Any]:
        rate_gbps = planned.params["rate_gbps"]
        test = UdpTest(circuit.src_ns, circuit.dst_ns, circuit.dst_addr,
                       round(rate_gbps * 1e9), planned.test.values["duration_s"])  # fmt: skip
        sent, received = run(test)
        row.throughput_gbps = float(received.get("rate_bps", 0.0)) / 1e9
        row.extra.update(
            {
                "sent_gbps": float(sent.get("rate_bps", 0.0)) / 1e9,
                "offered_gbps": rate_gbps,
                "lost": received.get("lost", 0),
            }
        )
        return {"sent": sent, "received": received}


TOOL = UdpTool()
