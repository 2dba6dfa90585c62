"""Whether the emulator could honestly produce a run: its own record of the run (how late
its releases came, what line time that cost, what it dropped and why, the fastest it
delivered over 1 ms, its CPU), the TUN devices' drops, and the verdict.

A run is `degraded` when the emulator fell short of the link it emulates by more than
the thresholds below; campaigns run it again, and the analysis leaves it out. The
thresholds are the one place this policy lives.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

LATE_SHARE = 0.05
"""Line time lost to late releases, as a share of the run: above 5 % a throughput is
biased down by more than 5 % by the emulator, not the link. (A quiet two-core virtual
machine carrying 9.6 Gb/s loses 1-4 % to the host's own interruptions, which no guest
can avoid; a busy one loses tens of percent, which is what this is for.)"""
LATE_MS_RTT = 1.0
"""For round-trip and jitter runs: a reply released more than 1 ms late is a sample off
by that much, more than the jitter of any layer USN measured (MPLS: 0.3 ms std)."""
RATE_RATIO = 1.01
"""The most delivered in any 1 ms window over what the rate allows (the link holds it
below 1.005 by construction; above 1.01 something is wrong)."""
LOADED_SHARE = 0.5
"""A direction that carried less than half its line's rate over a throughput run is the
return path (TCP's acknowledgements): the line never ran short of time there, so a late
release costs delay, not capacity, and is judged by how late it came (`LATE_SHARE` of the
RTT: acknowledgements held that long slow a window-limited sender by that share)."""
RETURN_PATH_FLOOR_MS = 0.1
"""On short loops 5 % of the RTT is less than the emulator's own timing claim (idle RTT
within 0.1 ms of the configured one); return-path lateness under it is not judged."""
THROUGHPUT_TESTS = ("tcp_throughput", "udp_throughput")


@dataclass(frozen=True)
class Verdict:
    degraded: bool
    reasons: tuple[str, ...]


def verdict(
    health: dict[str, Any],
    test: str,
    duration_s: float,
    rate_bps: float | None = None,
    rtt_ms: float | None = None,
) -> Verdict:
    """The verdict on a run of `test` lasting `duration_s`, from its `health` record
    (`emulator.health_of_run`), on a line of `rate_bps` and a path of `rtt_ms` (both
    needed to tell a throughput run's return path from its loaded direction)."""
    reasons = []
    span_s = max(duration_s, 1e-3)
    for name in ("a_to_b", "b_to_a"):
        d = health.get(name) or {}
        if test in THROUGHPUT_TESTS and _return_path(d, span_s, rate_bps) and rtt_ms:
            late_ms = d.get("lateness_p99_ns", 0) / 1e6
            if late_ms > max(LATE_SHARE * rtt_ms, RETURN_PATH_FLOOR_MS):
                reasons.append(
                    f"{name}: the return path's releases came {late_ms:.2f} ms late (p99), "
                    f"above {LATE_SHARE:.0%} of the {rtt_ms:g} ms RTT"
                )
        else:
            held_s = d.get("late_held_ns", 0) / 1e9
            if held_s > LATE_SHARE * span_s:
                reasons.append(
                    f"{name}: {held_s * 1e3:.0f} ms of line time lost to late releases "
                    f"({held_s / span_s:.1%} of the run, above {LATE_SHARE:.0%})"
                )
        late_ms = d.get("lateness_max_ns", 0) / 1e6
        if test not in THROUGHPUT_TESTS and late_ms > LATE_MS_RTT:
            reasons.append(f"{name}: a release came {late_ms:.2f} ms late (above {LATE_MS_RTT} ms)")
        ratio = d.get("max_1ms_rate_ratio", 0.0)
        if ratio > RATE_RATIO:
            reasons.append(f"{name}: {ratio:.3f} times the rate over 1 ms (above {RATE_RATIO})")
    tun_drops = health.get("tun_tx_dropped", 0)
    if tun_drops:
        reasons.append(f"{tun_drops} frames dropped by the TUN devices' queues, outside the link")
    arena = health.get("arena_full_frames", 0)
    if arena:
        reasons.append(f"{arena} frames dropped for want of emulator memory")
    return Verdict(bool(reasons), tuple(reasons))


def _return_path(direction: dict[str, Any], span_s: float, rate_bps: float | None) -> bool:
    if not rate_bps:
        return False
    carried_bps = float(direction.get("tx_bytes", 0)) * 8 / span_s
    return carried_bps < LOADED_SHARE * rate_bps


def late_held_ms(health: dict[str, Any]) -> float:
    """Line time the emulated line lost to its own late releases over the run, both
    directions, in ms: never made up while the line stays busy (a line with gaps in its
    traffic catches up in them, so there part of it was not lost)."""
    directions = (health.get("a_to_b") or {}, health.get("b_to_a") or {})
    return float(sum(d.get("late_held_ns", 0) for d in directions)) / 1e6


def summary(health: dict[str, Any]) -> dict[str, Any]:
    """The figures a row keeps: per direction lateness, line time lost, drops by cause,
    the largest 1 ms rate; the emulator's CPU and memory; the CPU time the host took."""
    kept: dict[str, Any] = {}
    for name in ("a_to_b", "b_to_a"):
        d = health.get(name) or {}
        kept[name] = {
            key: d.get(key)
            for key in (
                "lateness_max_ns",
                "lateness_p99_ns",
                "late_held_ns",
                "stalls",
                "dropped_queue_segments",
                "lost_segments",
                "max_1ms_rate_ratio",
                "tx_bytes",
            )
        }
    for key in ("cpu_cores", "rss_bytes", "tun_tx_dropped", "arena_full_frames", "covers_s",
                "host_steal_s"):  # fmt: skip
        kept[key] = health.get(key)
    return kept
