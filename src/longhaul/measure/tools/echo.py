"""longhaul's echo tool for the jitter suite (`longhaul-wan tcp-echo`): a server in one
testbed host, a probe in the other, per-sample round-trip times of TCP exchanges in
either of USN's variants: the message echoed back (`echo`), or a size asked for and that
many bytes sent back (`size`)."""

from __future__ import annotations

import json
import statistics
import subprocess
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from longhaul.measure.tools import ToolError, WanTool
from longhaul.testbed import emulator, netns, serving

if TYPE_CHECKING:
    from longhaul.measure.campaign import Run
    from longhaul.measure.rows import Row
    from longhaul.testbed import CircuitRecord, Testbed


class EchoError(ToolError):
    """The echo tool failed; the message says what it printed."""


@dataclass(frozen=True)
class EchoTest:
    client_ns: str
    server_ns: str
    address: str
    variant: str
    message_bytes: int
    samples: int
    interval_s: float = 0.01
    port: int = 7007
    rtt_ms: float = 0.0


@dataclass(frozen=True)
class EchoResult:
    samples_ms: list[float]
    raw: dict[str, Any] = field(default_factory=dict)


def run(test: EchoTest) -> EchoResult:
    """A server for the test's length, then the probe; bounded in time."""
    binary = str(emulator.binary())
    budget_s = (test.samples + 3) * max(test.interval_s, 2 * test.rtt_ms / 1000) + 30
    serve = [binary, "tcp-echo", "serve", "--listen", f"{test.address}:{test.port}",
             "--duration", f"{budget_s:g}s"]  # fmt: skip
    ready = serving.says("listening", "the echo server", EchoError)
    with serving.serving(test.server_ns, serve, ready):
        interval = f"{test.interval_s * 1000:g}ms"
        probe = [binary, "tcp-echo", "probe", "--to", f"{test.address}:{test.port}",
                 "--mode", test.variant, "--size", str(test.message_bytes),
                 "--count", str(test.samples), "--interval", interval]  # fmt: skip
        try:
            done = subprocess.run(
                netns.command(test.client_ns, probe),
                capture_output=True,
                text=True,
                timeout=budget_s,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise EchoError(f"the echo probe ran over {budget_s:.0f} s") from exc
        if done.returncode != 0:
            raise EchoError(f"the echo probe failed: {done.stderr.strip()[-300:]}")
        report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        return EchoResult([float(s) for s in report["samples_ms"]], report)


class EchoTool(WanTool):
    """echo_jitter with longhaul-wan's TCP echo server and probe (USN's jitter suite)."""

    name = "echo"
    test = "echo_jitter"

    def estimate_s(self, planned: Run) -> float:
        values = planned.test.values
        rtt_s = planned.connection.rtt_ms / 1000
        return float((values["samples"] + 3) * max(values["interval_s"], 2 * rtt_s) + 1)

    def measure(
        self, planned: Run, circuit: CircuitRecord, testbed: Testbed, row: Row
    ) -> dict[str, Any]:
        values, params = planned.test.values, planned.params
        row.variant, row.message_bytes = params["variant"], params["message_bytes"]
        result = run(
            EchoTest(
                circuit.src_ns,
                circuit.dst_ns,
                circuit.dst_addr,
                params["variant"],
                params["message_bytes"],
                values["samples"],
                values["interval_s"],
                rtt_ms=circuit.rtt_ms,
            )
        )
        samples = result.samples_ms
        row.rtt_ms = statistics.fmean(samples) if samples else None
        row.rtt_std_ms = statistics.pstdev(samples) if len(samples) > 1 else None
        row.extra["rtt_samples_ms"] = samples
        return {"echo": result.raw}


TOOL = EchoTool()
