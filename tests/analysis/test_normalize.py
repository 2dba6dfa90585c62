"""Normalization: estimates from tables, and comparisons over a common span of lengths."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from longhaul.analysis.normalize import (
    LENGTH_COLUMN,
    TIE,
    Region,
    common_span_miles,
    compare_fits,
    compare_tables,
    estimate_at,
    fit_table,
)
from longhaul.errors import InputError


def table(lengths_miles: list[float], values: list[float]) -> pd.DataFrame:
    return pd.DataFrame({LENGTH_COLUMN: lengths_miles, "throughput_gbps": values})


# a: 10 − d/1000 measured at 0, 1000, 2000 miles, two measurements ±0.5 each, so the
# means lie on that line and every L_k (and the least-squares line) is that line.
SONET = table([0, 0, 1000, 1000, 2000, 2000], [10.5, 9.5, 9.5, 8.5, 8.5, 7.5])
# b: 9 everywhere, measured further out, to 3000 miles.
WAN_PHY = table([0, 0, 1500, 1500, 3000, 3000], [9.25, 8.75, 9.5, 8.5, 9.0, 9.0])


def test_known_example() -> None:
    comparison = compare_tables(SONET, WAN_PHY, "throughput_gbps", labels=("SONET", "WAN-PHY"))
    # Only the lengths both were measured over.
    assert comparison.span_miles == (0, 2000)
    # a − b = 1 − d/1000: a ahead by 0.5 on average up to 1000 miles, b after.
    assert comparison.regions == (
        Region(0, pytest.approx(1000), "SONET", pytest.approx(0.5)),
        Region(pytest.approx(1000), 2000, "WAN-PHY", pytest.approx(0.5)),
    )
    assert comparison.mean_difference == pytest.approx(0)
    frame = comparison.to_frame()
    assert list(frame.columns) == [LENGTH_COLUMN, "SONET", "WAN-PHY", "difference"]
    assert frame[LENGTH_COLUMN].iloc[0] == 0 and frame[LENGTH_COLUMN].iloc[-1] == 2000
    np.testing.assert_allclose(frame["SONET"], 10 - frame[LENGTH_COLUMN] / 1000)
    np.testing.assert_allclose(frame["WAN-PHY"], 9.0)
    np.testing.assert_allclose(frame["difference"], 1 - frame[LENGTH_COLUMN] / 1000, atol=1e-12)


def test_lower_is_better_swaps_the_winner() -> None:
    comparison = compare_tables(
        SONET, WAN_PHY, "throughput_gbps", labels=("SONET", "WAN-PHY"), higher_is_better=False
    )
    assert [region.better for region in comparison.regions] == ["WAN-PHY", "SONET"]


def test_mean_is_over_lengths_not_grid_points() -> None:
    # a − b = 2 on [0, 1000] and falls to 0 at 3000: the integral mean is (2000 + 2000)/3000.
    # B = 0 makes each bound its Ê, so a keeps its exact fit, the kink at 1000 miles.
    a = fit_table(table([0, 1000, 3000] * 3, [3.0, 3.0, 1.0] * 3), "throughput_gbps", loss_bound=0)
    b = fit_table(table([0, 3000], [1.0, 1.0]), "throughput_gbps")
    comparison = compare_fits(a, b, grid_points=2)
    assert a.anchors_miles == (1000,)
    assert comparison.mean_difference == pytest.approx(4 / 3)
    assert comparison.better_on_average == "a"
    assert comparison.regions == (Region(0, 3000, "a", pytest.approx(4 / 3)),)
    # The grid holds the knot at 1000 as well as the two requested points.
    assert comparison.grid_miles == (0, 1000, 3000)


def test_identical_types_tie_everywhere() -> None:
    fit = fit_table(SONET, "throughput_gbps")
    comparison = compare_fits(fit, fit)
    assert comparison.regions == (Region(0, 2000, TIE, 0.0),)
    assert comparison.better_on_average == TIE


def test_spans_touching_at_one_length() -> None:
    a = fit_table(table([0, 1000], [5.0, 4.0]), "throughput_gbps")
    b = fit_table(table([1000, 2000], [3.0, 3.0]), "throughput_gbps")
    comparison = compare_fits(a, b, labels=("near", "far"))
    assert comparison.span_miles == (1000, 1000)
    assert comparison.regions == (Region(1000, 1000, "near", pytest.approx(1.0)),)
    assert comparison.mean_difference == pytest.approx(1.0)


def test_disjoint_spans_are_refused() -> None:
    a = fit_table(table([0, 1000], [5.0, 4.0]), "throughput_gbps")
    b = fit_table(table([2000, 3000], [3.0, 3.0]), "throughput_gbps")
    with pytest.raises(InputError) as raised:
        common_span_miles(a, b)
    assert raised.value.field == LENGTH_COLUMN


def test_estimate_at_lengths() -> None:
    estimates = estimate_at(SONET, "throughput_gbps", [0, 500, 2000, 2500])
    assert list(estimates.columns) == [LENGTH_COLUMN, "throughput_gbps"]
    np.testing.assert_allclose(estimates["throughput_gbps"], [10, 9.5, 8, 7.5])


@pytest.mark.parametrize(
    ("frame", "column", "field"),
    [
        (SONET, "rtt_ms", "rtt_ms"),
        (SONET.rename(columns={LENGTH_COLUMN: "miles"}), "throughput_gbps", LENGTH_COLUMN),
        (SONET.assign(throughput_gbps="fast"), "throughput_gbps", "throughput_gbps"),
    ],
)
def test_bad_tables(frame: pd.DataFrame, column: str, field: str) -> None:
    with pytest.raises(InputError) as raised:
        fit_table(frame, column)
    assert raised.value.field == field


@pytest.mark.parametrize(
    ("labels", "grid_points"), [(("x", "x"), 11), (("x", TIE), 11), (("x", "y"), 1)]
)
def test_bad_comparison_arguments(labels: tuple[str, str], grid_points: int) -> None:
    fit = fit_table(SONET, "throughput_gbps")
    with pytest.raises(InputError):
        compare_fits(fit, fit, labels=labels, grid_points=grid_points)
