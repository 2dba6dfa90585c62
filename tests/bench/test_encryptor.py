"""`bench middleboxes`' encryptor rows: the plan, and how a row's runs are summarized
beside the plain circuit and USN's figures."""

from __future__ import annotations

from longhaul.bench import encryptor as bench

COUNTERS = {
    "sealed_bytes": 4_000_000_000, "seal_ns": 100_000_000, "open_ns": 140_000_000,
    "tampered": 3, "refused_forged": 2, "refused_replayed": 1, "refused_truncated": 0,
    "fragmented_segments": 0, "oversize_dropped_frames": 0,
}  # fmt: skip


def test_the_long_loops_also_run_unaligned_black_holed_and_tampered() -> None:
    rows = bench.plan((0.2, 1400.0))
    local = [r for r in rows if r.miles == 0.2]
    assert [(r.mtu_bytes, r.oversize) for r in local] == [(8950, "fragment")]
    far = {(r.mtu_bytes, r.oversize, r.tamper) for r in rows if r.miles == 1400.0}
    assert far == {(8950, "fragment", 0.0), (9000, "fragment", 0.0), (9000, "drop", 0.0),
                   (8950, "fragment", bench.TAMPER)}  # fmt: skip
    black_hole = next(r for r in rows if r.oversize == "drop")
    assert black_hole.repetitions(3) == 1 and not black_hole.with_plain
    assert rows[0].estimate_s(3) == 3 * (bench.DURATION_S + bench.OMIT_S + 2) * 2


def test_a_row_is_the_median_of_its_runs_beside_the_plain_ones() -> None:
    row = bench.Row(1400.0, 8950, tamper=1e-4)
    runs = [bench._Run(9.0, 0.8, {"a_to_b": COUNTERS, "b_to_a": {}}),
            bench._Run(8.0, 0.7, {"a_to_b": COUNTERS, "b_to_a": {}}),
            bench._Run(None, 0.1, None, "iperf3 exited with status 1")]  # fmt: skip
    plain = [bench._Run(9.2, 0.6), bench._Run(9.0, 0.6)]
    summary = bench._summary(row, runs, plain)
    assert summary["gbps"] == 8.5 and summary["gbps_min"] == 8.0
    assert summary["plain_gbps"] == 9.1
    assert summary["ratio_to_plain"] == round(8.5 / 9.1, 4)
    # 0.48 s of sealing and opening for 8 GB: 0.06 ns a byte, 0.0075 cores per Gb/s.
    assert summary["crypto_ns_per_byte"] == 0.06
    assert summary["crypto_cores_per_gbps"] == 0.0075
    assert summary["tampered"] == 6 and summary["refused"] == 6
    assert summary["errors"] == ["iperf3 exited with status 1"]
    # A tamper row is not USN's figure; the aligned row is.
    assert summary["published_gbps"] is None
    aligned = bench._summary(bench.Row(1400.0, 8950), runs[:1], plain)
    assert aligned["published_gbps"] == 8.0


def test_a_black_hole_reports_no_rate_and_no_cost_per_byte() -> None:
    row = bench.Row(1400.0, 9000, oversize="drop", with_plain=False, runs=1)
    counters = {**COUNTERS, "sealed_bytes": 3_000, "oversize_dropped_frames": 21}
    summary = bench._summary(row, [bench._Run(0.0, 1.0, {"a_to_b": counters})], [])
    assert summary["gbps"] == 0.0 and summary["plain_gbps"] is None
    assert summary["crypto_ns_per_byte"] is None
    assert summary["oversize_dropped_frames"] == 21
