"""The verdict on a run from the emulator's record of it."""

from __future__ import annotations

from longhaul.measure import health


def record(**directions):
    quiet = {"late_held_ns": 0, "lateness_max_ns": 0, "max_1ms_rate_ratio": 0.99}
    return {
        "a_to_b": {**quiet, **directions.get("a_to_b", {})},
        "b_to_a": {**quiet, **directions.get("b_to_a", {})},
        "tun_tx_dropped": directions.get("tun_tx_dropped", 0),
        "arena_full_frames": directions.get("arena_full_frames", 0),
    }


def test_a_clean_run_is_not_degraded():
    judged = health.verdict(record(), "tcp_throughput", 10.0)
    assert judged == health.Verdict(False, ())


def test_line_time_lost_beyond_five_percent_degrades_a_throughput():
    # 0.45 s of 10 s is below 5 %; 0.6 s is not.
    quiet = record(a_to_b={"late_held_ns": 450_000_000})
    assert not health.verdict(quiet, "tcp_throughput", 10).degraded
    judged = health.verdict(record(a_to_b={"late_held_ns": 600_000_000}), "tcp_throughput", 10)
    assert judged.degraded and "6.0% of the run" in judged.reasons[0]


def test_one_late_reply_degrades_a_round_trip_run_but_not_a_throughput():
    late = record(b_to_a={"lateness_max_ns": 3_000_000})
    assert health.verdict(late, "rtt", 1.0).degraded
    assert health.verdict(late, "echo_jitter", 1.0).degraded
    assert not health.verdict(late, "tcp_throughput", 10.0).degraded


def test_drops_outside_the_link_and_bursts_degrade_any_run():
    for bad, says in (
        (record(tun_tx_dropped=3), "TUN"),
        (record(arena_full_frames=1), "memory"),
        (record(a_to_b={"max_1ms_rate_ratio": 1.3}), "times the rate"),
    ):
        judged = health.verdict(bad, "rtt", 1.0)
        assert judged.degraded and says in judged.reasons[0], judged


def test_the_summary_keeps_what_a_row_needs():
    kept = health.summary({**record(), "cpu_cores": 0.4, "rss_bytes": 10, "host_steal_s": 0.2})
    assert kept["a_to_b"]["late_held_ns"] == 0 and kept["cpu_cores"] == 0.4
    assert kept["host_steal_s"] == 0.2


def test_the_return_path_is_judged_by_how_late_not_by_line_time():
    # 9.6 Gb/s for 10 s one way, acknowledgements (a few per cent of it) the other: the
    # acknowledgements' line never runs short of time, so its late releases count as
    # the delay they add to a 26.8 ms round trip.
    loaded = {"late_held_ns": 0, "tx_bytes": 12_000_000_000}
    late_but_short = {"late_held_ns": 800_000_000, "lateness_p99_ns": 200_000, "tx_bytes": 3e8}
    quiet = record(a_to_b=loaded, b_to_a=late_but_short)
    assert not health.verdict(quiet, "tcp_throughput", 10, 9.6e9, 26.8).degraded
    # Without the line's rate and RTT the old rule holds: line time lost.
    assert health.verdict(quiet, "tcp_throughput", 10).degraded
    long_late = {**late_but_short, "lateness_p99_ns": 2_000_000}
    judged = health.verdict(
        record(a_to_b=loaded, b_to_a=long_late), "tcp_throughput", 10, 9.6e9, 26.8
    )
    assert judged.reasons == (
        "b_to_a: the return path's releases came 2.00 ms late (p99), above 5% of the 26.8 ms RTT",
    )
    # The loaded direction is still judged by the line time it lost.
    lost = {**loaded, "late_held_ns": 600_000_000}
    assert health.verdict(record(a_to_b=lost), "tcp_throughput", 10, 9.6e9, 26.8).degraded


def test_on_a_short_loop_return_path_lateness_under_the_timing_floor_is_not_judged():
    loaded = {"tx_bytes": 12_000_000_000}
    ack = {"late_held_ns": 900_000_000, "lateness_p99_ns": 60_000, "tx_bytes": 3e8}
    judged = health.verdict(record(a_to_b=loaded, b_to_a=ack), "tcp_throughput", 10, 9.6e9, 0.28)
    assert not judged.degraded
