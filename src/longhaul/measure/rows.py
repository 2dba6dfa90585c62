"""The tidy row every measurement becomes: one run of one test, with the parameters that
produced it and where it came from. The results store keeps them, analysis reads them
(as a pandas DataFrame with these columns), reports draw them."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any


class Source(StrEnum):
    """Where a figure came from."""

    MEASURED = "measured"
    """Real traffic on real hosts (imported from iperf3 or perfSONAR, say)."""
    EMULATED = "emulated"
    """Real kernel TCP/UDP through longhaul-wan."""
    SIMULATED = "simulated"


@dataclass
class Row:
    campaign: str
    test: str
    """tcp_throughput, udp_throughput, rtt, echo_jitter."""
    tool: str
    """iperf3, ping, echo, udp, ... (how it was measured)."""
    source: Source
    connection: str
    """For people: `loop 1,400 mi`, `reservation 12`, a perfSONAR destination."""
    length_miles: float | None
    repetition: int
    started_at: datetime
    cc: str | None = None
    streams: int | None = None
    message_bytes: int | None = None
    variant: str | None = None
    """The test's mode where it has several (echo_jitter: `echo` or `size`)."""
    cross_traffic_gbps: float = 0.0
    duration_s: float | None = None
    throughput_gbps: float | None = None
    retransmits: int | None = None
    rtt_ms: float | None = None
    rtt_std_ms: float | None = None
    raw_ref: str | None = None
    """Where the tool's own output is kept (a file path)."""
    extra: dict[str, Any] = field(default_factory=dict)
    """What only some tests have: `rtt_samples_ms` (a list) for rtt and echo_jitter;
    for TCP runs the per-interval series (`interval_end_s`, `interval_gbps` and
    `stream_interval_gbps`: see `tools.iperf3.Iperf3Result`)."""
    degraded: bool = False
    """The emulator could not honestly produce this run (see `measure.health`): the
    analysis leaves it out."""
    health: dict[str, Any] | None = None
    """For an emulated run, the emulator's record of it (`measure.health.summary`), with
    `reasons` when degraded and `attempts` when it had to be run again."""
    meta: dict[str, Any] | None = None
    """How the run was made, where known: host, kernel, CPU, tool and its version,
    congestion control, MTU, socket-buffer sysctls, the emulator's configuration and
    version (`measure.meta`); for imports, what the tool's output says."""
    error: str | None = None
    """Why the run failed, in the tool's words: a failed run is kept (so a campaign
    says what went wrong, and `--resume` does not retry it silently) but carries no
    measurement, and the analysis leaves it out."""

    @property
    def failed(self) -> bool:
        return self.error is not None

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["source"] = self.source.value
        return data


COLUMNS = tuple(Row.__dataclass_fields__)
"""The columns of a results table, in order."""
