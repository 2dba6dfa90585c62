"""What a run's watch reads from the machine itself (the circuit's side of `Watch` needs
root and an emulator: `test_testbed.py`)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from longhaul.testbed import watch
from longhaul.testbed.watch import host_steal_s

FIXTURES = Path(__file__).parent / "fixtures"


def test_steal_is_the_eighth_figure_of_the_cpu_line_in_seconds() -> None:
    # /proc/stat of a two-CPU virtual machine (its interrupt lines left out).
    ticks = 11_448
    assert host_steal_s(FIXTURES / "proc-stat.txt") == pytest.approx(
        ticks / os.sysconf("SC_CLK_TCK")
    )


def test_no_steal_where_the_machine_says_nothing(tmp_path: Path) -> None:
    assert host_steal_s(tmp_path / "missing") == 0.0
    old_kernel = tmp_path / "stat"
    old_kernel.write_text("cpu  5655675 2933 1099583 5710343\n")
    assert host_steal_s(old_kernel) == 0.0


def test_this_machines_steal_only_grows() -> None:
    first = host_steal_s()
    assert first >= 0.0 and host_steal_s() >= first


def test_the_lines_best_stretch_is_over_the_windows_of_the_length_asked() -> None:
    # 1 GB/s for 3 s, then 2 GB/s for 1 s: the best 2-second stretch ends at 4 s.
    line = [(t / 10, round(1e8 * t)) for t in range(31)]
    line += [(3 + t / 10, round(3e9 + 2e8 * t)) for t in range(1, 11)]
    assert watch.best_window_bps(line, 2.0) == pytest.approx(8 * 3e9 / 2)
    assert watch.best_window_bps(line, 5.0) is None, "the samples span 4 s"
    assert watch.best_window_bps([], 1.0) is None


def test_a_tool_is_credited_with_no_more_payload_than_the_line_delivered() -> None:
    share = 1448 / 1500
    # iperf3 read 1.028 of the payload ceiling; the line delivered 0.993 of 9.6 Gb/s.
    assert watch.held_to_line(1.028 * 9.6e9 * share, 0.993 * 9.6e9, share) == pytest.approx(
        0.993 * 9.6e9 * share
    )
    assert watch.held_to_line(9.1e9, 9.5e9, share) == 9.1e9, "within the line: as counted"
    assert watch.held_to_line(9.9e9, None, share) == 9.9e9, "no stretch that long sampled"


def test_the_payload_a_packet_can_carry_bounds_the_line_from_above() -> None:
    assert watch.tcp_payload_share() == pytest.approx(1448 / 1500)
    assert watch.tcp_payload_share(9000) == pytest.approx(8948 / 9000)
