"""`bench middleboxes`: its plan, the bytes each cell sends, and how a cell's runs are
summarized beside USN's figures."""

from __future__ import annotations

import pytest

from longhaul.bench import middleboxes as bench
from longhaul.measure.tools.accelerator import Transfer


def test_hdf_runs_at_every_stream_count_and_the_other_payloads_at_the_first() -> None:
    cells = bench.plan((1400,), (1, 20), ("hdf", "random"))
    assert {(c.streams, c.data) for c in cells} == {(1, "hdf"), (20, "hdf"), (1, "random")}
    assert {c.features for c in cells} == {"none", "tfo", "tfo+dre", "tfo+dre+lz"}
    assert len(cells) == 12


def test_the_loops_are_usns() -> None:
    assert bench.loop_rtt_ms(1400) == pytest.approx(26.7, abs=0.1)
    assert bench.loop_rtt_ms(2800) == pytest.approx(53.1, abs=0.1)


def test_a_cell_sends_about_its_seconds_of_what_it_should_carry() -> None:
    plain = bench.Cell(1400, 1, "none", "hdf")
    # One 64 KB window per 26.7 ms round trip: 19.6 Mb/s, for five seconds.
    assert plain.expected_bps(26.7) == pytest.approx(65535 * 8 / 0.0267)
    assert plain.bytes_per_stream(26.7) == pytest.approx(65535 / 0.0267 * 5, rel=1e-6)
    accelerated = bench.Cell(1400, 20, "tfo", "hdf")
    assert accelerated.bytes_per_stream(26.7) * 20 == pytest.approx(1e9 * 1448 / 1500 / 8 * 3,
                                                                    rel=1e-6)  # fmt: skip


def test_a_cell_is_the_mean_of_its_intact_runs_beside_the_published_figure() -> None:
    cell = bench.Cell(2800, 1, "tfo", "hdf")
    runs: list[Transfer | str] = [Transfer(900.0, 10, 1.0, True), Transfer(700.0, 10, 1.0, True),
                                  Transfer(990.0, 10, 1.0, False), "longhaul-accel send: reset"]  # fmt: skip
    reports = {"near": {"sent": {"app_bytes": 100, "wire_bytes": 50, "cache_hit_bytes": 0,
                                 "lz_output_bytes": 0}, "streams_reset": 0}}  # fmt: skip
    summary = bench._summary(cell, 53.1, 10, runs, reports)
    assert summary["mbps"] == 800.0 and summary["mbps_min"] == 700.0
    assert summary["intact_runs"] == 2 and summary["corrupted_runs"] == 1
    assert summary["errors"] == ["longhaul-accel send: reset"]
    assert summary["published_mbps"] == 697.5
    assert summary["wire_ratio"] == 0.5
    other = bench._summary(bench.Cell(2800, 1, "tfo", "random"), 53.1, 10, runs, {})
    assert other["published_mbps"] is None and "wire_ratio" not in other
