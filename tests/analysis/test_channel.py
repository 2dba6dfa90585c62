"""The channel throughput profile: the surface, its maximum, the ridge and its shape."""

from __future__ import annotations

import pandas as pd

from longhaul.analysis import channel


def _frame(points: list[tuple[int, float, float]], length: float = 1400.0) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "test": "udp_channel_profile",
            "length_miles": length,
            "throughput_gbps": [g for _, _, g in points],
            "extra": [{"burst_datagrams": b, "idle_us": t, "resent_share": 0.01}
                      for b, t, _ in points],
        }
    )  # fmt: skip


def test_the_maximum_and_the_ridge_of_a_unimodal_profile() -> None:
    # W_c 32 peaks at T_s 50; W_c 128 at T_s 100 (a slow receiver wants the idle).
    points = [(32, 0, 0.70), (32, 50, 0.90), (32, 100, 0.80),
              (128, 0, 0.40), (128, 50, 0.75), (128, 100, 0.93)]  # fmt: skip
    runs = channel.profile_rows(_frame(points))
    assert channel.best(runs) == {"burst_datagrams": 128, "idle_us": 100.0, "goodput_gbps": 0.93}
    ridge = {r.burst_datagrams: r for r in channel.ridge(runs)}
    assert ridge[32].best_idle_us == 50.0 and ridge[32].unimodal
    assert ridge[128].best_idle_us == 100.0 and ridge[128].unimodal
    surface = channel.surface(runs)
    assert list(surface.index) == [0.0, 50.0, 100.0] and list(surface.columns) == [32, 128]


def test_two_peaks_beyond_the_noise_are_not_unimodal() -> None:
    points = [(32, 0, 0.9), (32, 50, 0.5), (32, 100, 0.85), (32, 200, 0.3)]
    [ridge] = channel.ridge(channel.profile_rows(_frame(points)))
    assert not ridge.unimodal


def test_a_dip_within_the_repetitions_spread_is_still_unimodal() -> None:
    # T_s 50 dips 0.03 below T_s 0, whose two runs differ by 0.10.
    points = [(32, 0, 0.80), (32, 0, 0.90), (32, 50, 0.81), (32, 50, 0.83), (32, 100, 0.95),
              (32, 100, 0.95)]  # fmt: skip
    [ridge] = channel.ridge(channel.profile_rows(_frame(points)))
    assert ridge.best_idle_us == 100.0 and ridge.unimodal


def test_other_tests_rows_are_left_out() -> None:
    frame = pd.concat([_frame([(32, 0, 0.9)]),
                       pd.DataFrame({"test": ["rtt"], "length_miles": [0.2],
                                     "throughput_gbps": [None], "extra": [{}]})])  # fmt: skip
    assert len(channel.profile_rows(frame)) == 1
