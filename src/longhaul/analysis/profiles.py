"""Throughput profiles of a results table, as USN drew them: distance and stability profiles,
T̄(d) over a range of stream counts, Decrease Per Mile, cross-traffic profiles.

Every function takes a pandas DataFrame with the columns of `measure.rows.COLUMNS` (a
hand-made table needs only the columns a function reads) and returns values. Rows
without a throughput are ignored: they are runs of other tests.

Decisions, so that a report can say what its numbers mean:

- A profile describes one congestion control (or connection type) from one source at
  one cross-traffic rate. Averaging cubic with reno, or measured with simulated runs,
  gives a number that describes nothing, so the single-profile functions refuse rows
  that mix them; `distance_profiles` and `throughput_against_length` split a whole
  table first.
- T̄(d) is the mean of the individual measurements at length d whose stream count lies
  in the range (every repetition of every n), and its standard deviation is the sample
  standard deviation (ddof = 1) of those same individual measurements, as USN reports
  it. It therefore holds the spread across n as well as across repetitions; it is not
  the standard error of T̄, which would shrink with the number of runs.
- DPM is in Mb/s per mile, against the shortest length measured (0.2 miles in USN).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

import numpy as np
import pandas as pd

from longhaul.analysis.intervals import Exact, Interval
from longhaul.errors import InputError

DEFAULT_STREAMS = (5, 15)
"""USN's T̄(d) averages n = 5..15 parallel streams (both ends included)."""
MBPS_PER_GBPS = 1000

THROUGHPUT = "throughput_gbps"
LENGTH = "length_miles"
MEANS_COLUMNS = (LENGTH, "mean_gbps", "std_gbps", "count")
"""The columns of `mean_over_streams`."""
_PROFILE_AXES = ("streams", "message_bytes")
_ONE_PROFILE = ("test", "cc", "source", "cross_traffic_gbps")
"""What rows of a single profile must share (where the table has the column)."""

Value = TypeVar("Value", float, Interval)


def distance_profile(rows: pd.DataFrame, over: str = "streams") -> pd.DataFrame:
    """T(d, n): mean throughput (Gb/s) over the repetitions, one row per length (index
    `length_miles`, ascending), one column per stream count (`over="message_bytes"`:
    per message size, the InfiniBand T(d, s))."""
    runs = _one_profile(rows, (LENGTH, _axis(over)))
    return _mean_table(runs, LENGTH, over)


def distance_profiles(frame: pd.DataFrame) -> dict[tuple[str, str], pd.DataFrame]:
    """T(d, n) of every (cc, source) among the TCP runs without cross-traffic."""
    tcp = tcp_rows(frame)
    return {
        (str(cc), str(source)): distance_profile(group)
        for (cc, source), group in tcp.groupby(["cc", "source"])
    }


def stability_profile(
    rows: pd.DataFrame, length_miles: float, over: str = "streams"
) -> pd.DataFrame:
    """T(d, n) at one length, repetition by repetition: one row per repetition (index
    `repetition`), one column per stream count (or message size), throughput in Gb/s."""
    runs = _one_profile(rows, (LENGTH, "repetition", _axis(over)))
    # Lengths come back from TOML and databases as floats; compare them as such.
    at_length = runs[np.isclose(runs[LENGTH].to_numpy(dtype=float), length_miles)]
    if at_length.empty:
        measured = sorted(runs[LENGTH].unique())
        raise InputError(LENGTH, f"no runs at {length_miles:g} miles; measured: {measured}")
    return _mean_table(at_length, "repetition", over)


def in_stream_range(rows: pd.DataFrame, streams: tuple[int, int]) -> pd.DataFrame:
    """The rows whose stream count is in low..high (both included)."""
    low, high = streams
    return rows[(rows["streams"] >= low) & (rows["streams"] <= high)]


def mean_over_streams(
    rows: pd.DataFrame, streams: tuple[int, int] = DEFAULT_STREAMS
) -> pd.DataFrame:
    """T̄(d) and its standard deviation at each length, over the repetitions and the
    stream counts low..high (both included): columns `MEANS_COLUMNS`, one row per
    length that has runs in the range, ascending.

    std_gbps is the sample standard deviation of the individual measurements (NaN for a
    single one): see the module's docstring."""
    low, high = streams
    if low > high:
        raise InputError("streams", f"the range {low}..{high} is empty: give low ≤ high")
    runs = _one_profile(rows, (LENGTH, "streams"))
    chosen = in_stream_range(runs, streams)
    grouped = chosen.groupby(LENGTH)[THROUGHPUT]
    means = pd.DataFrame(
        {
            "mean_gbps": grouped.mean(),
            "std_gbps": grouped.std(ddof=1),
            "count": grouped.count(),
        }
    )
    return means.rename_axis(LENGTH).reset_index().loc[:, list(MEANS_COLUMNS)]


def throughput_against_length(
    frame: pd.DataFrame, streams: tuple[int, int] = DEFAULT_STREAMS
) -> pd.DataFrame:
    """T̄(d) of every (cc, source) among the TCP runs without cross-traffic: columns cc,
    source and `MEANS_COLUMNS`."""
    tcp = tcp_rows(frame)
    parts = [
        mean_over_streams(group, streams).assign(cc=str(cc), source=str(source))
        for (cc, source), group in tcp.groupby(["cc", "source"])
    ]
    columns = ["cc", "source", *MEANS_COLUMNS]
    if not parts:
        return pd.DataFrame(columns=columns)
    return pd.concat(parts, ignore_index=True).loc[:, columns]


def dpm_mbps_per_mile(
    short_gbps: Value, long_gbps: Value, short_miles: Exact, long_miles: Exact
) -> Value:
    """Decrease Per Mile D(d_i) = (T̄(d_0) − T̄(d_i)) / (d_i − d_0), in Mb/s per mile.

    On floats for measurements, on intervals for published, rounded throughputs: one
    definition for both."""
    return (short_gbps - long_gbps) * MBPS_PER_GBPS / (long_miles - short_miles)


def decrease_per_mile(means: pd.DataFrame) -> dict[float, float]:
    """DPM of every length but the shortest, against the shortest: {length_miles: Mb/s
    per mile}. `means` has columns length_miles and mean_gbps (`mean_over_streams`);
    fewer than two lengths give no DPM."""
    ordered = means.sort_values(LENGTH)
    lengths = ordered[LENGTH].to_numpy(dtype=float)
    values = ordered["mean_gbps"].to_numpy(dtype=float)
    if len(lengths) < 2:
        return {}
    if lengths[0] == lengths[1]:
        raise InputError(LENGTH, "one row per length: average the runs first")
    short_miles, short_gbps = float(lengths[0]), float(values[0])
    return {
        float(miles): dpm_mbps_per_mile(short_gbps, float(gbps), short_miles, float(miles))
        for miles, gbps in zip(lengths[1:], values[1:], strict=True)
    }


def average_dpm(dpm: Mapping[float, float]) -> float | None:
    """The mean DPM over the lengths given (USN: 1,400, 6,600 and 8,600 miles); None when
    there are none."""
    if not dpm:
        return None
    return float(np.mean(list(dpm.values())))


def cross_traffic_profile(rows: pd.DataFrame) -> pd.DataFrame:
    """Throughput against the rate of UDP cross-traffic: one row per cc, source, length,
    stream count, message size and cross-traffic rate (Gb/s), with mean_gbps, std_gbps
    (sample, over the repetitions) and count. A missing stream count or message size
    stays missing (TCP runs have no message size, RDMA runs no stream count)."""
    keys = ["cc", "source", LENGTH, "streams", "message_bytes", "cross_traffic_gbps"]
    runs = _with_throughput(rows, tuple(keys))
    grouped = runs.groupby(keys, dropna=False)[THROUGHPUT]
    table = pd.DataFrame(
        {
            "mean_gbps": grouped.mean(),
            "std_gbps": grouped.std(ddof=1),
            "count": grouped.count(),
        }
    )
    return table.reset_index().sort_values(keys, ignore_index=True)


def tcp_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """The TCP throughput runs without cross-traffic that have a length and stream count:
    what distance and stability profiles and T̄(d) are made of. Runs through middleboxes
    (a `variant`: link encryptors, another MTU) are not: `variant_profile` has them."""
    runs = _with_throughput(frame, ("test", "cross_traffic_gbps", LENGTH, "streams"))
    plain = runs[(runs["test"] == "tcp_throughput") & (runs["cross_traffic_gbps"] == 0)]
    if "variant" in plain.columns:
        plain = plain[plain["variant"].isna()]
    return plain.dropna(subset=[LENGTH, "streams"])


VARIANT_KEYS = ("cc", "source", LENGTH, "variant", "streams")


def variant_profile(frame: pd.DataFrame) -> pd.DataFrame:
    """TCP throughput through middleboxes against the same circuits plain (the runs with
    a `variant`, e.g. `encrypted, MTU 8950` and `plain, MTU 9000`): one row per cc,
    source, length, variant and stream count, with mean_gbps, std_gbps (sample, over the
    repetitions) and count; empty if the table has none."""
    if "variant" not in frame.columns or "test" not in frame.columns:
        return pd.DataFrame(columns=[*VARIANT_KEYS, "mean_gbps", "std_gbps", "count"])
    runs = _with_throughput(frame, VARIANT_KEYS)
    runs = runs[(runs["test"] == "tcp_throughput") & runs["variant"].notna()]
    grouped = runs.groupby(list(VARIANT_KEYS))[THROUGHPUT]
    table = pd.DataFrame(
        {"mean_gbps": grouped.mean(), "std_gbps": grouped.std(ddof=1), "count": grouped.count()}
    )
    return table.reset_index().sort_values(list(VARIANT_KEYS), ignore_index=True)


def _one_profile(rows: pd.DataFrame, needed: tuple[str, ...]) -> pd.DataFrame:
    """The rows with a throughput and every `needed` value, refusing a mix of profiles."""
    runs = _with_throughput(rows, needed).dropna(subset=list(needed))
    for column in _ONE_PROFILE:
        if column not in runs.columns:
            continue
        kinds = sorted(str(value) for value in runs[column].dropna().unique())
        if len(kinds) > 1:
            raise InputError(
                column,
                f"the rows mix {', '.join(kinds)}: give one profile's rows "
                "(distance_profiles splits a table by cc and source)",
            )
    return runs


def _axis(over: str) -> str:
    if over not in _PROFILE_AXES:
        raise InputError("over", f"profiles run over one of {', '.join(_PROFILE_AXES)}")
    return over


def _with_throughput(rows: pd.DataFrame, needed: tuple[str, ...]) -> pd.DataFrame:
    missing = [c for c in (THROUGHPUT, *needed) if c not in rows.columns]
    if missing:
        raise InputError(missing[0], f"no such column; the table has {list(rows.columns)}")
    return rows.dropna(subset=[THROUGHPUT])


def _mean_table(runs: pd.DataFrame, index: str, columns: str) -> pd.DataFrame:
    """Mean throughput by (index, columns) as a table; integer column labels (stream
    counts and sizes are counts, whatever dtype the store gave them)."""
    counted = runs.assign(**{columns: runs[columns].astype("int64")})
    table = counted.groupby([index, columns])[THROUGHPUT].mean().unstack(columns)
    return table.sort_index().sort_index(axis=1)


IB_TEST = "ib_throughput"
IB_PROFILE = ("variant", "source")
"""What one InfiniBand profile shares: its service and operation (`RC write`), its source."""


def ib_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """The InfiniBand throughput runs that have a throughput, a length and a size."""
    if "test" not in frame.columns:
        return frame.iloc[0:0]
    rows = frame[frame["test"] == IB_TEST]
    return rows.dropna(subset=[THROUGHPUT, LENGTH, "message_bytes"])


def ib_size_profile(rows: pd.DataFrame) -> pd.DataFrame:
    """T_B(d, s) without cross traffic: mean and standard deviation of throughput per
    profile, length and message size (columns variant, source, length_miles,
    message_bytes, mean_gbps, std_gbps, count)."""
    ib = ib_rows(rows)
    if "cross_traffic_gbps" in ib.columns:
        ib = ib[ib["cross_traffic_gbps"].fillna(0) == 0]
    grouped = ib.groupby([*IB_PROFILE, LENGTH, "message_bytes"])[THROUGHPUT]
    table = pd.DataFrame(
        {"mean_gbps": grouped.mean(), "std_gbps": grouped.std(ddof=1), "count": grouped.count()}
    )
    return table.reset_index()


def ib_means_at_largest(rows: pd.DataFrame) -> dict[tuple[str, str, int], pd.DataFrame]:
    """Per InfiniBand profile, T_B(d) at the largest message size it measured (USN's
    profile used 8 MB): {(variant, source, size): `MEANS_COLUMNS` table}."""
    found = {}
    table = ib_size_profile(rows)
    for (variant, source), group in table.groupby(list(IB_PROFILE)):
        size = int(group["message_bytes"].max())
        at = group[group["message_bytes"] == size].sort_values(LENGTH)
        found[(str(variant), str(source), size)] = at.loc[:, list(MEANS_COLUMNS)].reset_index(
            drop=True
        )
    return found


def ib_cross_traffic_profile(rows: pd.DataFrame) -> pd.DataFrame:
    """InfiniBand's cross-traffic profile: mean throughput per profile, length, message
    size and cross-traffic rate, where some run had cross traffic (else empty)."""
    ib = ib_rows(rows)
    if "cross_traffic_gbps" not in ib.columns or not (ib["cross_traffic_gbps"] > 0).any():
        return ib.iloc[0:0]
    keys = [*IB_PROFILE, LENGTH, "message_bytes", "cross_traffic_gbps"]
    return ib.groupby(keys)[THROUGHPUT].mean().rename("mean_gbps").reset_index()
