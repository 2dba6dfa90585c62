"""Distance and stability profiles, T̄ over a stream range, DPM, cross-traffic profiles,
on tables whose answers are known by construction."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from longhaul.analysis import profiles
from longhaul.errors import InputError

LENGTHS = (0.2, 1400.0, 6600.0)


def throughput(miles: float, streams: int, repetition: int) -> float:
    """Falls 1 Gb/s per 1,000 miles, rises 0.1 Gb/s per stream, repetitions ±0.05."""
    return 9.0 - miles / 1000 + 0.1 * streams + (0.05 if repetition % 2 else -0.05)


def table(cc: str = "cubic", source: str = "emulated", cross: float = 0.0) -> pd.DataFrame:
    rows = [
        {
            "test": "tcp_throughput",
            "cc": cc,
            "source": source,
            "cross_traffic_gbps": cross,
            "length_miles": miles,
            "streams": n,
            "message_bytes": None,
            "repetition": rep,
            "throughput_gbps": throughput(miles, n, rep),
        }
        for miles in LENGTHS
        for n in (1, 5, 10, 15, 20)
        for rep in (0, 1)
    ]
    return pd.DataFrame(rows)


def test_distance_profile_is_the_mean_over_repetitions():
    profile = profiles.distance_profile(table())
    assert list(profile.index) == list(LENGTHS)
    assert list(profile.columns) == [1, 5, 10, 15, 20]
    assert profile.loc[1400.0, 10] == pytest.approx(9.0 - 1.4 + 1.0)


def test_stability_profile_keeps_each_repetition():
    profile = profiles.stability_profile(table(), 1400)
    assert list(profile.index) == [0, 1]
    assert profile.loc[1, 5] - profile.loc[0, 5] == pytest.approx(0.1)
    with pytest.raises(InputError, match="no runs at 8600 miles"):
        profiles.stability_profile(table(), 8600)


def test_mean_over_streams_uses_every_run_in_the_range():
    means = profiles.mean_over_streams(table(), (5, 15))
    row = means[means["length_miles"] == 6600.0].iloc[0]
    # n = 5, 10, 15 average to 10 streams; repetitions cancel.
    assert row["mean_gbps"] == pytest.approx(9.0 - 6.6 + 1.0)
    runs = [throughput(6600, n, rep) for n in (5, 10, 15) for rep in (0, 1)]
    assert row["std_gbps"] == pytest.approx(np.std(runs, ddof=1))
    assert row["count"] == 6


def test_dpm_is_against_the_shortest_length():
    dpm = profiles.decrease_per_mile(profiles.mean_over_streams(table()))
    # 1 Gb/s per 1,000 miles is 1 Mb/s per mile, whatever the shortest length.
    assert dpm[1400.0] == pytest.approx(1.0)
    assert set(dpm) == {1400.0, 6600.0}
    assert profiles.average_dpm(dpm) == pytest.approx(np.mean(list(dpm.values())))
    assert profiles.average_dpm({}) is None
    assert (
        profiles.decrease_per_mile(pd.DataFrame({"length_miles": [1.0], "mean_gbps": [2.0]})) == {}
    )


def test_one_profile_refuses_mixed_congestion_controls():
    mixed = pd.concat([table("cubic"), table("reno")])
    with pytest.raises(InputError, match="mix cubic, reno"):
        profiles.distance_profile(mixed)
    split = profiles.distance_profiles(mixed)
    assert set(split) == {("cubic", "emulated"), ("reno", "emulated")}


def test_throughput_against_length_leaves_out_cross_traffic_runs():
    frame = pd.concat([table(), table(cross=2.0)])
    means = profiles.throughput_against_length(frame)
    assert len(means) == len(LENGTHS)
    assert set(means["cc"]) == {"cubic"}


def test_cross_traffic_profile_groups_by_rate():
    frame = pd.concat(
        [table(), table(cross=2.0).assign(throughput_gbps=lambda t: t.throughput_gbps - 2)]
    )
    found = profiles.cross_traffic_profile(frame)
    at = found[(found["length_miles"] == 1400.0) & (found["streams"] == 5)]
    assert list(at["cross_traffic_gbps"]) == [0.0, 2.0]
    drop = at["mean_gbps"].iloc[0] - at["mean_gbps"].iloc[1]
    assert drop == pytest.approx(2.0)
    assert math.isnan(at["message_bytes"].iloc[0])


def test_bad_input_names_the_field():
    with pytest.raises(InputError, match=r"streams: the range 9\.\.3 is empty"):
        profiles.mean_over_streams(table(), (9, 3))
    with pytest.raises(InputError, match="throughput_gbps: no such column"):
        profiles.distance_profile(pd.DataFrame({"length_miles": [1.0]}))
    with pytest.raises(InputError, match="over"):
        profiles.distance_profile(table(), over="cc")


def test_infiniband_profiles_are_per_service_and_source_at_their_largest_size():
    rows = pd.DataFrame(
        [
            {
                "test": "ib_throughput",
                "variant": variant,
                "source": "simulated",
                "length_miles": miles,
                "message_bytes": size,
                "throughput_gbps": size / 1e6 - miles / 10_000,
            }
            for variant in ("RC write", "UC send")
            for miles in (0.2, 8600.0)
            for size in (1 << 20, 8 << 20)
        ]
        + [{"test": "tcp_throughput", "length_miles": 0.2, "throughput_gbps": 9.0}]
    )
    table = profiles.ib_size_profile(rows)
    assert len(table) == 8
    at = profiles.ib_means_at_largest(rows)
    assert set(at) == {("RC write", "simulated", 8 << 20), ("UC send", "simulated", 8 << 20)}
    dpm = profiles.decrease_per_mile(at["RC write", "simulated", 8 << 20])
    assert dpm[8600.0] == pytest.approx(0.1, rel=1e-3)


def test_runs_through_middleboxes_are_kept_out_of_the_profiles_and_compared_apart():
    plain = table().assign(variant=None)
    encrypted = table().assign(variant="encrypted, MTU 8950",
                               throughput_gbps=lambda t: t["throughput_gbps"] - 0.5)  # fmt: skip
    both = pd.concat([plain, encrypted], ignore_index=True)
    # The profiles are the plain runs' only, as if the encrypted ones were not there.
    assert len(profiles.tcp_rows(both)) == len(plain)
    pd.testing.assert_frame_equal(profiles.distance_profile(profiles.tcp_rows(both)),
                                  profiles.distance_profile(table()))  # fmt: skip
    compared = profiles.variant_profile(both)
    assert set(compared["variant"]) == {"encrypted, MTU 8950"}
    at = compared[(compared["length_miles"] == 1400.0) & (compared["streams"] == 5)].iloc[0]
    assert at["mean_gbps"] == pytest.approx(throughput(1400.0, 5, 0) + 0.05 - 0.5)
    assert at["count"] == 2
    assert profiles.variant_profile(table()).empty
