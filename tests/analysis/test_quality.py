"""What the analysis leaves out, and what it says about it."""

from __future__ import annotations

import pandas as pd

from longhaul.analysis.quality import reasons, usable


def frame(**columns: list[object]) -> pd.DataFrame:
    base: dict[str, list[object]] = {
        "test": ["tcp_throughput"] * 4,
        "length_miles": [1400.0, 1400.0, None, 1400.0],
        "cc": ["cubic", "cubic", "cubic", None],
        "throughput_gbps": [9.0, None, 8.0, 7.0],
        "degraded": [False, False, False, True],
        "health": [None, None, None, {"reasons": ["late 12 ms"]}],
        "error": [None, "iperf3: the server is busy", None, None],
    }
    base.update(columns)
    return pd.DataFrame(base)


def test_failed_and_degraded_runs_are_left_out_with_their_reasons():
    split = usable(frame())
    assert split.rows["throughput_gbps"].tolist() == [9.0, 8.0]
    assert [reasons(r) for _, r in split.left_out.iterrows()] == [
        "failed: iperf3: the server is busy",
        "late 12 ms",
    ]
    note = split.note() or ""
    assert "1 run(s) left out: their tool failed" in note
    assert "1 run(s) left out: the emulator could not keep up" in note


def test_rows_a_profile_cannot_place_are_counted_not_silently_dropped():
    note = usable(frame(cc=["cubic", "cubic", None, None])).note() or ""
    assert "1 TCP run(s) have no length" in note and "--length-miles" in note
    assert "1 TCP run(s) have no congestion control" in note and "--cc" in note


def test_a_clean_frame_says_nothing():
    clean = frame(length_miles=[1.0] * 4, cc=["reno"] * 4, degraded=[False] * 4, error=[None] * 4)
    split = usable(clean)
    assert len(split.rows) == 4 and split.note() is None


def test_frames_without_the_columns_pass_through():
    bare = pd.DataFrame({"test": ["rtt"], "throughput_gbps": [None]})
    assert len(usable(bare).rows) == 1
