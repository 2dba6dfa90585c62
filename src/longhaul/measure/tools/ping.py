"""ping between two testbed hosts: every reply's time, and the summary's precise figures.

ping prints each reply's time with three significant digits (`time=163 ms`), but its
summary to the microsecond; `parse` keeps both.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from longhaul.measure.params import Param
from longhaul.measure.tools import ToolError
from longhaul.testbed import netns

if TYPE_CHECKING:
    from longhaul.measure.campaign import Run
    from longhaul.measure.rows import Row
    from longhaul.testbed import CircuitRecord, Testbed


class PingError(ToolError):
    """ping failed: no output of its own, no reply at all, or it ran over its time."""


@dataclass(frozen=True)
class PingResult:
    sent: int
    received: int
    min_ms: float | None
    avg_ms: float | None
    max_ms: float | None
    mdev_ms: float | None
    times_ms: list[float] = field(default_factory=list)

    @property
    def loss(self) -> float:
        return 1 - self.received / self.sent if self.sent else 0.0


_COUNTS = re.compile(r"(\d+) packets transmitted, (\d+) received")
_SUMMARY = re.compile(r"= ([\d.]+)/([\d.]+)/([\d.]+)/([\d.]+) ms")
_TIME = re.compile(r"time=([\d.]+) ms")


def parse(text: str) -> PingResult:
    counts = _COUNTS.search(text)
    if counts is None:
        raise PingError(f"not ping's output: {text.strip()[-200:] or '(nothing)'}")
    summary = _SUMMARY.search(text)
    low, avg, high, mdev = (float(x) for x in summary.groups()) if summary else (None,) * 4
    return PingResult(
        sent=int(counts.group(1)),
        received=int(counts.group(2)),
        min_ms=low,
        avg_ms=avg,
        max_ms=high,
        mdev_ms=mdev,
        times_ms=[float(t) for t in _TIME.findall(text)],
    )


def run(namespace: str, address: str, count: int, interval_s: float = 0.05) -> PingResult:
    """ping `address` from inside `namespace`, `count` times (bounded in time)."""
    argv = ["ping", "-n", "-c", str(count), "-i", f"{interval_s:g}", "-W", "2", address]
    limit_s = count * interval_s + 30
    try:
        out = subprocess.run(
            netns.command(namespace, argv),
            capture_output=True,
            text=True,
            timeout=limit_s,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise PingError(f"ping ran over its {limit_s:.0f} s") from exc
    result = parse(out.stdout + out.stderr)
    if result.received == 0:
        raise PingError(f"no reply to any of {result.sent} pings of {address}")
    return result


class PingTool:
    """rtt with ping from the circuit's source host to its destination."""

    name = "ping"
    test = "rtt"
    params: tuple[Param, ...] = ()
    cc: tuple[str, ...] = ()
    cc_source = ""

    def missing(self) -> str | None:
        if shutil.which("ping") is None:
            return "ping is missing: apt-get install iputils-ping"
        return None

    def estimate_s(self, planned: Run) -> float:
        values, rtt_s = planned.test.values, planned.connection.rtt_ms / 1000
        return float(values["samples"] * max(values["interval_s"], rtt_s) + 1)

    def measure(
        self, planned: Run, circuit: CircuitRecord, testbed: Testbed, row: Row
    ) -> dict[str, Any]:
        values = planned.test.values
        result = run(circuit.src_ns, circuit.dst_addr, values["samples"], values["interval_s"])
        row.rtt_ms = result.avg_ms
        row.rtt_std_ms = result.mdev_ms
        row.extra.update(
            {
                "rtt_samples_ms": result.times_ms,
                "lost": result.sent - result.received,
                "rtt_min_ms": result.min_ms,
                "rtt_max_ms": result.max_ms,
            }
        )
        return {"ping": result.__dict__}


TOOL = PingTool()
