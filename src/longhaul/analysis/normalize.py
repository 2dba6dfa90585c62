"""Normalization: compare connection types measured at different lengths (USN's method).

Two connection types (SONET and WAN-PHY, two TCP variants, ...) are seldom measured at
the same lengths. Each type's parameter is estimated at any length by its k-segmented
regression (`segmented.fit_segmented`), and the two estimates are compared where both
types were measured: over the intersection of their measured spans, never by
extrapolating one of them.

Both estimates are continuous and piecewise linear, so their difference is too: it is
evaluated exactly at the union of the knots, which gives the exact crossings, the exact
regions where each type is better and exact averages over lengths (the mean of a − b
over a range is its integral divided by the range, not a mean over grid points, which
would weigh densely gridded lengths more). The grid is only for tables and plots.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
import pandas as pd

from longhaul.analysis.segmented import (
    DEFAULT_ETA,
    Fit,
    FloatArray,
    SegmentedRegression,
    fit_anchored,
    fit_segmented,
)
from longhaul.errors import InputError

LENGTH_COLUMN = "length_miles"
TIE = "neither"
"""`Region.better` where the two estimates are equal."""


@dataclass(frozen=True)
class Region:
    """A range of lengths over which one type is better throughout (or neither)."""

    start_miles: float
    end_miles: float
    better: str
    """The better type's label, or `TIE`."""
    mean_advantage: float
    """How far the better type is ahead, averaged over the region's lengths (≥ 0)."""


@dataclass(frozen=True)
class Comparison:
    """Type a against type b over the lengths both were measured at."""

    labels: tuple[str, str]
    higher_is_better: bool
    span_miles: tuple[float, float]
    regions: tuple[Region, ...]
    mean_difference: float
    """a − b averaged over the common span of lengths (value units)."""
    grid_miles: tuple[float, ...]
    estimates_a: tuple[float, ...]
    estimates_b: tuple[float, ...]

    @property
    def better_on_average(self) -> str:
        """The label ahead on average over the span, or `TIE`."""
        return _better(self.mean_difference, self.labels, self.higher_is_better)

    @property
    def differences(self) -> tuple[float, ...]:
        """a − b at each grid length."""
        return tuple(a - b for a, b in zip(self.estimates_a, self.estimates_b, strict=True))

    def to_frame(self) -> pd.DataFrame:
        """The grid as a table: length_miles, the two estimates by label, difference."""
        label_a, label_b = self.labels
        return pd.DataFrame(
            {
                LENGTH_COLUMN: list(self.grid_miles),
                label_a: list(self.estimates_a),
                label_b: list(self.estimates_b),
                "difference": list(self.differences),
            }
        )


def fit_table(
    table: pd.DataFrame,
    value_column: str,
    *,
    loss_bound: float | None = None,
    eta: float = DEFAULT_ETA,
) -> SegmentedRegression:
    """The k-segmented regression of `value_column` against `length_miles`, one row per
    measurement."""
    for column in (LENGTH_COLUMN, value_column):
        if column not in table.columns:
            raise InputError(column, f"no such column; the table has {list(table.columns)}")
    return fit_segmented(
        _column(table, LENGTH_COLUMN),
        _column(table, value_column),
        loss_bound=loss_bound,
        eta=eta,
    )


def estimate_at(
    table: pd.DataFrame,
    value_column: str,
    lengths_miles: npt.ArrayLike,
    *,
    loss_bound: float | None = None,
    eta: float = DEFAULT_ETA,
) -> pd.DataFrame:
    """The parameter estimated at the given lengths from one type's measurements, as a
    table with `length_miles` and `value_column` (see `Fit.estimate` beyond the span)."""
    fit = fit_table(table, value_column, loss_bound=loss_bound, eta=eta)
    lengths = np.asarray(lengths_miles, dtype=np.float64).ravel()
    return pd.DataFrame({LENGTH_COLUMN: lengths, value_column: fit.estimate(lengths)})


class Curve(Protocol):
    """A continuous piecewise-linear estimate over a measured span: a `SegmentedRegression`
    (its chosen fit), or one `Fit` (a published profile's means joined, say)."""

    @property
    def span_miles(self) -> tuple[float, float]: ...

    @property
    def knots_miles(self) -> tuple[float, ...]: ...

    def estimate(self, length_miles: npt.ArrayLike) -> Any: ...


def common_span_miles(a: Curve, b: Curve) -> tuple[float, float]:
    """The lengths both types were measured across: the intersection of their spans."""
    start = max(a.span_miles[0], b.span_miles[0])
    end = min(a.span_miles[1], b.span_miles[1])
    if start > end:
        raise InputError(
            LENGTH_COLUMN,
            f"the measured lengths do not overlap ({a.span_miles} and {b.span_miles} miles);"
            " measure both types over a common range",
        )
    return start, end


def compare_fits(
    a: Curve,
    b: Curve,
    *,
    labels: tuple[str, str] = ("a", "b"),
    higher_is_better: bool = True,
    grid_points: int = 101,
) -> Comparison:
    """Compare a with b over their common span.

    `higher_is_better` is True for throughput and False for delays or jitter; it only
    decides which label a region names as better. The grid holds `grid_points` evenly
    spaced lengths plus every knot of either fit inside the span.
    """
    if labels[0] == labels[1] or TIE in labels:
        raise InputError("labels", f"must be two different names, neither of them {TIE!r}")
    if grid_points < 2:
        raise InputError("grid_points", "must be 2 or more")
    span = common_span_miles(a, b)
    breaks = _breakpoints(a, b, span)
    differences = a.estimate(breaks) - b.estimate(breaks)
    grid = np.union1d(np.linspace(span[0], span[1], grid_points), breaks)
    return Comparison(
        labels=labels,
        higher_is_better=higher_is_better,
        span_miles=span,
        regions=_regions(breaks, differences, labels, higher_is_better),
        mean_difference=_mean_over_lengths(breaks, differences),
        grid_miles=tuple(grid.tolist()),
        estimates_a=tuple(a.estimate(grid).tolist()),
        estimates_b=tuple(b.estimate(grid).tolist()),
    )


def compare_tables(
    table_a: pd.DataFrame,
    table_b: pd.DataFrame,
    value_column: str,
    *,
    labels: tuple[str, str] = ("a", "b"),
    higher_is_better: bool = True,
    grid_points: int = 101,
    eta: float = DEFAULT_ETA,
) -> Comparison:
    """Fit each table (`length_miles` and `value_column`, a row per measurement) and
    compare the two. Each fit takes its own default loss bound B."""
    return compare_fits(
        fit_table(table_a, value_column, eta=eta),
        fit_table(table_b, value_column, eta=eta),
        labels=labels,
        higher_is_better=higher_is_better,
        grid_points=grid_points,
    )


BOOTSTRAP_DRAWS = 400
"""Resamples behind a confidence interval: enough for the 2.5 % and 97.5 % percentiles
to settle to a few per cent of the interval's width (Efron & Tibshirani, An Introduction
to the Bootstrap, 1993, §13.3, advise 1,000 for percentiles; the fits here are cheap
but the CLI answers while a user waits)."""


def bootstrap_mean_difference(
    table_a: pd.DataFrame,
    b: pd.DataFrame | Curve,
    value_column: str,
    *,
    level: float = 0.95,
    draws: int = BOOTSTRAP_DRAWS,
    seed: int = 0,
) -> tuple[float, float]:
    """A percentile bootstrap interval for the mean difference a − b over the common
    span: measurements are resampled with replacement within each length (so every
    length keeps its count) and the fits, k included, are made again each time. `b` is
    a second table, or a fixed curve (a published profile) that is not resampled."""
    if not 0 < level < 1:
        raise InputError("level", "a confidence level strictly between 0 and 1")
    rng = np.random.default_rng(seed)
    a_lengths, a_values = _column(table_a, LENGTH_COLUMN), _column(table_a, value_column)
    differences = np.empty(draws)
    for draw in range(draws):
        fit_a = fit_segmented(a_lengths, _resample_within_lengths(a_lengths, a_values, rng))
        fit_b = b if not isinstance(b, pd.DataFrame) else _resampled_fit(b, value_column, rng)
        differences[draw] = compare_fits(fit_a, fit_b, grid_points=2).mean_difference
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(differences, [tail, 100 - tail])
    return float(low), float(high)


def joined_means(lengths_miles: npt.ArrayLike, means: npt.ArrayLike) -> Fit:
    """A published profile as a curve: its means at their lengths, joined by straight
    lines (L_{n−2}: what a table of means says, no more)."""
    lengths = np.asarray(lengths_miles, dtype=np.float64)
    return fit_anchored(lengths, means, lengths.size - 2)


def _resampled_fit(
    table: pd.DataFrame, value_column: str, rng: np.random.Generator
) -> SegmentedRegression:
    lengths, values = _column(table, LENGTH_COLUMN), _column(table, value_column)
    return fit_segmented(lengths, _resample_within_lengths(lengths, values, rng))


def _resample_within_lengths(
    lengths: FloatArray, values: FloatArray, rng: np.random.Generator
) -> FloatArray:
    resampled = values.copy()
    for length in np.unique(lengths):
        where = np.flatnonzero(lengths == length)
        resampled[where] = values[rng.choice(where, size=where.size, replace=True)]
    return resampled


def _column(table: pd.DataFrame, column: str) -> FloatArray:
    try:
        return table[column].to_numpy(dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise InputError(column, "must hold numbers") from error


def _breakpoints(a: Curve, b: Curve, span: tuple[float, float]) -> FloatArray:
    """The span's ends and every knot inside it: a − b is linear between these."""
    knots = np.union1d(a.knots_miles, b.knots_miles)
    inside = knots[(knots > span[0]) & (knots < span[1])]
    return np.union1d(inside, span)


def _with_crossings(lengths: FloatArray, differences: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Add the lengths where a − b changes sign strictly between two breakpoints."""
    out_lengths, out_differences = [lengths[0]], [differences[0]]
    for i in range(lengths.size - 1):
        d0, d1 = differences[i], differences[i + 1]
        if d0 * d1 < 0:
            out_lengths.append(lengths[i] + (lengths[i + 1] - lengths[i]) * d0 / (d0 - d1))
            out_differences.append(0.0)
        out_lengths.append(lengths[i + 1])
        out_differences.append(d1)
    return np.asarray(out_lengths), np.asarray(out_differences)


def _regions(
    lengths: FloatArray,
    differences: FloatArray,
    labels: tuple[str, str],
    higher_is_better: bool,
) -> tuple[Region, ...]:
    if lengths.size == 1:
        # The types share a single length: the region is that point.
        only = float(differences[0])
        better = _better(only, labels, higher_is_better)
        return (Region(float(lengths[0]), float(lengths[0]), better, abs(only)),)
    lengths, differences = _with_crossings(lengths, differences)
    # Between consecutive points a − b keeps one sign, so its midpoint value names the
    # better type and consecutive pieces with the same name merge into one region.
    pieces: list[tuple[str, int, int]] = []
    for i in range(lengths.size - 1):
        better = _better((differences[i] + differences[i + 1]) / 2, labels, higher_is_better)
        if pieces and pieces[-1][0] == better:
            pieces[-1] = (better, pieces[-1][1], i + 1)
        else:
            pieces.append((better, i, i + 1))
    return tuple(
        Region(
            start_miles=float(lengths[start]),
            end_miles=float(lengths[end]),
            better=better,
            mean_advantage=abs(
                _mean_over_lengths(lengths[start : end + 1], differences[start : end + 1])
            ),
        )
        for better, start, end in pieces
    )


def _better(difference: float, labels: tuple[str, str], higher_is_better: bool) -> str:
    if difference == 0:
        return TIE
    a_higher = difference > 0
    return labels[0] if a_higher == higher_is_better else labels[1]


def _mean_over_lengths(lengths: FloatArray, values: FloatArray) -> float:
    """The average over lengths of a piecewise-linear function given at its breakpoints."""
    if lengths.size == 1:
        return float(values[0])
    return float(np.trapezoid(values, lengths) / (lengths[-1] - lengths[0]))
