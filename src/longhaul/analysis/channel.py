"""USN's channel throughput profile: Hurricane's goodput (and the share of datagrams it
sent again) over a grid of W_c (datagrams per burst) and T_s (idle after each burst), on
one channel. Its authors chose T_s from it by hand; here the analysis finds the maximum,
and for each W_c the T_s that gives the most (the ridge), and says whether goodput rises
to that T_s and falls after it (unimodal, within the spread of the runs): what makes a
one-dimensional search such as Hurricane's tuner find it.

Input: a results table (`measure.rows.COLUMNS`) holding `udp_channel_profile` rows, with
`burst_datagrams`, `idle_us` and `resent_share` in `extra`.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, cast

import pandas as pd

TEST = "udp_channel_profile"


def profile_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """One line per run of the profile: length, W_c, T_s, goodput, resent share."""
    rows = frame[(frame["test"] == TEST) & frame["throughput_gbps"].notna()]
    records = []
    for _, row in rows.iterrows():
        extra: dict[str, Any] = row["extra"] or {}
        records.append(
            {
                "length_miles": float(row["length_miles"] or 0.0),
                "burst_datagrams": int(extra["burst_datagrams"]),
                "idle_us": float(extra["idle_us"]),
                "goodput_gbps": float(row["throughput_gbps"]),
                "resent_share": float(extra.get("resent_share", 0.0)),
            }
        )
    columns = ["length_miles", "burst_datagrams", "idle_us", "goodput_gbps", "resent_share"]
    return pd.DataFrame.from_records(records, columns=columns)


def surface(runs: pd.DataFrame, value: str = "goodput_gbps") -> pd.DataFrame:
    """Mean `value` of the runs of one length: T_s down the rows, W_c across."""
    return runs.pivot_table(index="idle_us", columns="burst_datagrams", values=value,
                            aggfunc="mean").sort_index()  # fmt: skip


@dataclass(frozen=True)
class Ridge:
    """For one W_c: the T_s with the most goodput, and whether goodput is unimodal in T_s."""

    burst_datagrams: int
    best_idle_us: float
    goodput_gbps: float
    unimodal: bool


def ridge(runs: pd.DataFrame) -> list[Ridge]:
    """The best T_s of each W_c (runs of one length). Unimodal: the means rise (or hold,
    within the noise) up to the best T_s and fall (or hold) after it; the noise is the
    largest standard deviation among the settings' repetitions (0 with one run each)."""
    means = surface(runs)
    spread = runs.groupby(["burst_datagrams", "idle_us"])["goodput_gbps"].std().fillna(0.0)
    noise = float(spread.max()) if len(spread) else 0.0
    found = []
    for burst in means.columns:
        column = means[burst].dropna()
        if column.empty:
            continue
        best = float(cast(float, column.idxmax()))
        values = column.to_list()
        peak = values.index(column.max())
        rising = all(b >= a - noise for a, b in itertools.pairwise(values[: peak + 1]))
        falling = all(b <= a + noise for a, b in itertools.pairwise(values[peak:]))
        found.append(Ridge(int(burst), best, float(column.max()), rising and falling))
    return found


def best(runs: pd.DataFrame) -> dict[str, float]:
    """The setting with the most goodput (means over repetitions), of runs of one length."""
    means = runs.groupby(["burst_datagrams", "idle_us"])["goodput_gbps"].mean()
    burst, idle = cast(tuple[int, float], means.idxmax())
    return {
        "burst_datagrams": int(burst),
        "idle_us": float(idle),
        "goodput_gbps": float(means.max()),
    }
