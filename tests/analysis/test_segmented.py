"""k-segmented regression: the DP against brute force, the fits against pwlf, and the VC
choice of k on data drawn from a known piecewise-linear function."""

from __future__ import annotations

import itertools
import math

import numpy as np
import numpy.typing as npt
import pwlf
import pytest
import ruptures as rpt
from hypothesis import given, settings
from hypothesis import strategies as st

from longhaul.analysis.segmented import (
    LINE_K,
    Fit,
    fit_anchored,
    fit_line,
    fit_segmented,
    practical_vc_bound,
    vc_bound,
    vc_dimension,
    vc_epsilon,
)
from longhaul.errors import InputError

Arrays = tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]


def brute_force(lengths_miles: npt.ArrayLike, values: npt.ArrayLike, k: int) -> float:
    """The least Ê over every choice of k interior anchors, each scored by interpolating
    the per-length means between its anchors and averaging over every measurement."""
    lengths = np.asarray(lengths_miles, dtype=np.float64)
    measured = np.asarray(values, dtype=np.float64)
    distinct = np.unique(lengths)
    means = np.array([measured[lengths == d].mean() for d in distinct])
    last = distinct.size - 1
    best = math.inf
    for interior in itertools.combinations(range(1, last), k):
        anchors = [0, *interior, last]
        estimate = np.interp(lengths, distinct[anchors], means[anchors])
        best = min(best, float(np.mean((estimate - measured) ** 2)))
    return best


def interpolation_error(fit: Fit, lengths: npt.ArrayLike, values: npt.ArrayLike) -> float:
    """Ê of a fit recomputed from its own knots, measurement by measurement."""
    estimate = np.interp(np.asarray(lengths), fit.knots_miles, fit.knot_values)
    return float(np.mean((estimate - np.asarray(values)) ** 2))


@st.composite
def measurements(draw: st.DrawFn, max_lengths: int = 7) -> Arrays:
    """Up to `max_lengths` distinct lengths, 1-5 measurements at each, in random order."""
    n = draw(st.integers(2, max_lengths))
    tenths = draw(st.lists(st.integers(0, 100_000), min_size=n, max_size=n, unique=True))
    counts = draw(st.lists(st.integers(1, 5), min_size=n, max_size=n))
    lengths = np.repeat(np.array(tenths, dtype=np.float64) / 10, counts)
    values = draw(
        st.lists(
            st.floats(-1000, 1000, allow_nan=False),
            min_size=lengths.size,
            max_size=lengths.size,
        )
    )
    order = draw(st.permutations(range(lengths.size)))
    return lengths[list(order)], np.array(values)[list(order)]


def tolerance(values: npt.ArrayLike) -> float:
    """Absolute slack for squared errors: rounding scales with the values squared."""
    return 1e-9 * max(1.0, float(np.max(np.abs(np.asarray(values)))) ** 2)


def distinct_count(lengths: npt.ArrayLike) -> int:
    return int(np.unique(np.asarray(lengths)).size)


# (a) The dynamic programme finds the brute-force minimum for every fixed k.


@settings(max_examples=300, deadline=None)
@given(measurements())
def test_dp_matches_brute_force_for_every_k(data: Arrays) -> None:
    lengths, values = data
    for k in range(distinct_count(lengths) - 1):
        fit = fit_anchored(lengths, values, k)
        assert fit.mean_squared_error == pytest.approx(
            brute_force(lengths, values, k), rel=1e-9, abs=tolerance(values)
        )
        assert len(fit.anchors_miles) == k


@settings(max_examples=200, deadline=None)
@given(measurements())
def test_reported_error_is_the_fits_own_interpolation_error(data: Arrays) -> None:
    lengths, values = data
    regression = fit_segmented(lengths, values)
    for fit in regression.fits:
        if fit.k == LINE_K:
            continue
        assert fit.mean_squared_error == pytest.approx(
            interpolation_error(fit, lengths, values), rel=1e-9, abs=tolerance(values)
        )
        # The fit passes through the mean at each of its anchors.
        for knot, value in zip(fit.knots_miles, fit.knot_values, strict=True):
            assert value == pytest.approx(values[lengths == knot].mean())


# (b) Against pwlf, free continuous piecewise-linear least squares.


def pwlf_fit(
    lengths: npt.ArrayLike, values: npt.ArrayLike, breaks: tuple[float, ...]
) -> pwlf.PiecewiseLinFit:
    model = pwlf.PiecewiseLinFit(np.asarray(lengths), np.asarray(values))
    model.fit_with_breaks(np.asarray(breaks))
    return model


@settings(max_examples=150, deadline=None)
@given(measurements())
def test_line_is_pwlf_one_segment_fit(data: Arrays) -> None:
    lengths, values = data
    line = fit_line(lengths, values)
    model = pwlf_fit(lengths, values, line.knots_miles)
    scale = max(1.0, float(np.max(np.abs(values))))
    assert line.mean_squared_error == pytest.approx(
        model.ssr / lengths.size, rel=1e-6, abs=1e-6 * scale**2
    )
    grid = np.linspace(lengths.min(), lengths.max(), 7)
    np.testing.assert_allclose(line.estimate(grid), model.predict(grid), atol=1e-6 * scale)


@settings(max_examples=150, deadline=None)
@given(measurements())
def test_pwlf_with_the_same_breaks_never_does_worse(data: Arrays) -> None:
    # Interpolating means is one member of the continuous piecewise-linear family with
    # those breaks; pwlf finds the least-squares member, so it can only be as good or
    # better.
    lengths, values = data
    for fit in fit_segmented(lengths, values).fits[1:]:
        model = pwlf_fit(lengths, values, fit.knots_miles)
        assert model.ssr / lengths.size <= fit.mean_squared_error + tolerance(values)


@settings(max_examples=150, deadline=None)
@given(measurements())
def test_pwlf_with_a_break_at_every_length_is_the_interpolation_of_means(
    data: Arrays,
) -> None:
    # With a break at every measured length each hat function touches one length only,
    # so least squares puts the fit through each mean: pwlf and L_{n−2} coincide.
    lengths, values = data
    full = fit_segmented(lengths, values).fits[-1]
    assert full.k == distinct_count(lengths) - 2
    model = pwlf_fit(lengths, values, full.knots_miles)
    scale = max(1.0, float(np.max(np.abs(values))))
    assert full.mean_squared_error == pytest.approx(
        model.ssr / lengths.size, rel=1e-6, abs=1e-6 * scale**2
    )
    np.testing.assert_allclose(
        model.predict(np.asarray(full.knots_miles)), full.knot_values, atol=1e-6 * scale
    )


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.integers(0, 100_000), min_size=2, max_size=7, unique=True),
    st.lists(st.floats(-100, 100), min_size=7, max_size=7),
)
def test_one_measurement_per_length_full_fit_is_exact_like_pwlf(
    tenths: list[int], drawn: list[float]
) -> None:
    lengths = np.array(sorted(tenths), dtype=np.float64) / 10
    values = np.array(drawn[: lengths.size])
    full = fit_anchored(lengths, values, lengths.size - 2)
    model = pwlf_fit(lengths, values, full.knots_miles)
    assert full.mean_squared_error == pytest.approx(0, abs=1e-9)
    assert model.ssr == pytest.approx(0, abs=1e-6)
    grid = np.linspace(lengths[0], lengths[-1], 11)
    np.testing.assert_allclose(full.estimate(grid), model.predict(grid), atol=1e-6)


# (c) The VC bound recovers the number of segments of a known function.

LENGTHS_MILES = np.array([0.2, 1400, 2800, 4200, 5600, 7000, 8600])
TRUE_FUNCTIONS = {
    "line": (LINE_K, (0.2, 8600.0), (9.0, 3.0)),
    "tent": (1, (0.2, 4200.0, 8600.0), (2.0, 9.0, 3.0)),
    "zigzag": (2, (0.2, 2800.0, 5600.0, 8600.0), (9.0, 1.0, 8.0, 2.0)),
}


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("shape", TRUE_FUNCTIONS)
def test_vc_choice_recovers_true_segments(shape: str, seed: int) -> None:
    # USN's seven lengths, 500 measurements at each: the truth, every time.
    true_k, knots, knot_values = TRUE_FUNCTIONS[shape]
    rng = np.random.default_rng(seed)
    lengths = np.repeat(LENGTHS_MILES, 500)
    values = np.interp(lengths, knots, knot_values) + rng.normal(0, 0.5, lengths.size)
    regression = fit_segmented(lengths, values)
    assert regression.k == true_k
    assert regression.anchors_miles == knots[1:-1]


def test_a_kink_ten_measurements_show_is_found() -> None:
    # The zigzag with 10 measurements a length and noise 1.0: the squared-range bound
    # chose the line here; the practical bound finds the two anchors.
    true_k, knots, knot_values = TRUE_FUNCTIONS["zigzag"]
    rng = np.random.default_rng(0)
    lengths = np.repeat(LENGTHS_MILES, 10)
    values = np.interp(lengths, knots, knot_values) + rng.normal(0, 1.0, lengths.size)
    regression = fit_segmented(lengths, values)
    assert regression.k == true_k
    assert regression.anchors_miles == knots[1:-1]


@pytest.mark.parametrize("seed", range(20))
def test_a_noisy_line_stays_a_line(seed: int) -> None:
    rng = np.random.default_rng(seed)
    lengths = np.repeat(GRID_MILES, 3)
    values = 9.4 - 6e-4 * lengths + rng.normal(0, 1.0, lengths.size)
    assert fit_segmented(lengths, values).k == LINE_K


# (d) Two knots on a fine grid, moderate noise, a few hundred measurements: what
# `analyze compare` must get right. The draws are fixed, so these are exact counts.

GRID_MILES = np.linspace(0, 8600, 21)
GRID_STEP_MILES = float(GRID_MILES[1])
TWO_KNOTS = ((0.0, GRID_MILES[5], GRID_MILES[14], 8600.0), (9.4, 9.0, 3.0, 2.5))
DRAWS = 100


def two_knot_draw(seed: int, noise: float, per_length: int = 15) -> Arrays:
    rng = np.random.default_rng(seed)
    lengths = np.repeat(GRID_MILES, per_length)
    values = np.interp(lengths, *TWO_KNOTS) + rng.normal(0, noise, lengths.size)
    return lengths, values


def on_the_knots(anchors: tuple[float, ...]) -> bool:
    truth = TWO_KNOTS[0][1:-1]
    return len(anchors) == len(truth) and all(
        abs(a - t) <= GRID_STEP_MILES + 1e-6 for a, t in zip(anchors, truth, strict=True)
    )


@pytest.mark.parametrize("noise", [0.3, 0.5, 0.8])
def test_two_knots_are_chosen_and_placed(noise: float) -> None:
    found = sum(
        on_the_knots(fit_segmented(*two_knot_draw(seed, noise)).anchors_miles)
        for seed in range(DRAWS)
    )
    # 86, 84 and 89 of 100 at these noises; the rest add a third anchor beside a knot.
    assert found >= 80


def test_the_squared_range_bound_chose_the_line_on_the_same_data() -> None:
    # The defect the practical bound mends: B = (max − min)² makes B·ε dominate.
    lengths, values = two_knot_draw(0, 0.5)
    spread = float(values.max() - values.min())
    assert fit_segmented(lengths, values, loss_bound=spread**2).k == LINE_K
    assert fit_segmented(lengths, values).k == 2


def cross_validated_k(lengths: npt.NDArray[np.float64], values: npt.NDArray[np.float64]) -> int:
    """k by 5-fold cross-validation over L_{−1} .. L_4 (the usual alternative)."""
    rng = np.random.default_rng(1)
    order = rng.permutation(lengths.size)
    candidates = [LINE_K, *range(5)]
    errors = np.zeros(len(candidates))
    for fold in range(5):
        held = order[fold::5]
        kept = np.setdiff1d(order, held)
        for i, k in enumerate(candidates):
            fit = (
                fit_line(lengths[kept], values[kept])
                if k == LINE_K
                else fit_anchored(lengths[kept], values[kept], k)
            )
            errors[i] += np.sum((fit.estimate(lengths[held]) - values[held]) ** 2)
    return candidates[int(np.argmin(errors))]


def test_the_bound_finds_the_truth_at_least_as_often_as_cross_validation() -> None:
    draws = [two_knot_draw(seed, 0.5) for seed in range(40)]
    by_bound = sum(fit_segmented(*draw).k == 2 for draw in draws)
    by_cross_validation = sum(cross_validated_k(*draw) == 2 for draw in draws)
    assert by_bound >= by_cross_validation


@pytest.mark.parametrize("seed", range(5))
def test_two_anchors_agree_with_ruptures_continuous_linear_change_points(seed: int) -> None:
    # ruptures' dynamic programme over continuous piecewise-linear signals, on the
    # per-length means (evenly spaced, so index is length): an independent search.
    lengths, values = two_knot_draw(seed, 0.5)
    means = np.array([values[lengths == d].mean() for d in GRID_MILES])
    ends = rpt.Dynp(model="clinear", min_size=2, jump=1).fit(means).predict(n_bkps=2)
    # ruptures ends a segment at index e (exclusive); the shared point is e - 1.
    theirs = [float(GRID_MILES[e - 1]) for e in ends[:-1]]
    ours = fit_anchored(lengths, values, 2).anchors_miles
    assert all(abs(a - b) <= GRID_STEP_MILES + 1e-6 for a, b in zip(ours, theirs, strict=True))


@pytest.mark.parametrize("seed", range(5))
def test_two_anchors_agree_with_pwlf_free_breakpoints(seed: int) -> None:
    lengths, values = two_knot_draw(seed, 0.5)
    model = pwlf.PiecewiseLinFit(lengths, values, seed=seed)
    breaks = model.fit(3)
    ours = fit_anchored(lengths, values, 2).anchors_miles
    assert all(abs(a - b) <= GRID_STEP_MILES for a, b in zip(ours, breaks[1:-1], strict=True))


# The bound itself.


def test_vc_bound_matches_the_formula() -> None:
    error, h, n, b, eta = 0.7, 4, 50, 9.0, 0.05
    epsilon = 4 * (h * (math.log(2 * n / h) + 1) - math.log(eta / 4)) / n
    expected = error + (b * epsilon / 2) * (1 + math.sqrt(1 + error / (b * epsilon)))
    assert vc_epsilon(h, n, eta) == pytest.approx(epsilon)
    assert vc_bound(error, h, n, b, eta) == pytest.approx(expected)


def test_vc_bound_is_infinite_when_dimension_reaches_sample_size() -> None:
    assert vc_epsilon(6, 6, 0.05) == math.inf
    assert vc_bound(0.0, 6, 6, 1.0) == math.inf
    assert vc_bound(0.0, 8, 6, 1.0) == math.inf
    assert math.isfinite(vc_bound(0.0, 4, 5, 1.0))
    # Even with B = 0: no bound is no bound.
    assert vc_bound(0.0, 6, 6, 0.0) == math.inf


def test_vc_bound_with_zero_loss_bound_is_the_empirical_error() -> None:
    assert vc_bound(0.25, 2, 10, 0.0) == 0.25


def test_vc_bound_grows_with_dimension_and_error() -> None:
    assert vc_bound(1.0, 2, 100, 4.0) < vc_bound(1.0, 4, 100, 4.0)
    assert vc_bound(1.0, 2, 100, 4.0) < vc_bound(2.0, 2, 100, 4.0)


def test_vc_dimension() -> None:
    assert [vc_dimension(k) for k in (LINE_K, 0, 1, 2)] == [2, 2, 4, 6]


@pytest.mark.parametrize(
    ("loss_bound", "eta"), [(-1.0, 0.05), (math.inf, 0.05), (1.0, 0.0), (1.0, 1.0)]
)
def test_bad_bound_parameters(loss_bound: float, eta: float) -> None:
    with pytest.raises(InputError):
        fit_segmented([1, 2, 3], [1, 2, 3], loss_bound=loss_bound, eta=eta)


# The regression as a whole.


def test_candidates_bounds_and_choice() -> None:
    lengths = [0.2, 0.2, 1400, 1400, 6600, 6600, 8600, 8600]
    values = [9.4, 9.2, 8.1, 8.5, 5.0, 5.6, 4.4, 4.0]
    regression = fit_segmented(lengths, values, loss_bound=30.0, eta=0.1)
    assert [fit.k for fit in regression.fits] == [-1, 0, 1, 2]
    assert regression.lengths_miles == (0.2, 1400, 6600, 8600)
    assert regression.means == pytest.approx((9.3, 8.3, 5.3, 4.2))
    assert regression.counts == (2, 2, 2, 2)
    assert regression.n_measurements == 8
    for fit, bound in zip(regression.fits, regression.vc_bounds, strict=True):
        assert bound == vc_bound(fit.mean_squared_error, fit.vc_dimension, 8, 30.0, 0.1)
    assert regression.chosen is regression.fits[int(np.argmin(regression.vc_bounds))]
    frame = regression.to_frame()
    assert list(frame.columns) == [
        "k",
        "vc_dimension",
        "anchors_miles",
        "mean_squared_error",
        "vc_bound",
        "chosen",
    ]
    assert frame["chosen"].sum() == 1


def test_no_bound_once_dimension_reaches_the_measurements() -> None:
    # Six measurements: L_2 has h = 6 = l, so it gets no bound and cannot be chosen.
    regression = fit_segmented([0, 0, 1, 2, 3, 3], [0.0, 0.2, 1.0, 0.1, 1.0, 1.2], loss_bound=1.44)
    assert [fit.vc_dimension for fit in regression.fits] == [2, 2, 4, 6]
    assert regression.vc_bounds[-1] == math.inf
    assert all(math.isfinite(bound) for bound in regression.vc_bounds[:-1])
    assert regression.k != 2


def test_practical_bound_matches_the_formula() -> None:
    error, h, n = 0.7, 4, 50
    p = h / n
    expected = error / (1 - math.sqrt(p - p * math.log(p) + math.log(n) / (2 * n)))
    assert practical_vc_bound(error, h, n) == pytest.approx(expected)
    assert practical_vc_bound(error, 6, 6) == math.inf
    assert practical_vc_bound(error, 30, 40) == math.inf  # the penalty reaches 1
    assert practical_vc_bound(1.0, 2, 100) < practical_vc_bound(1.0, 4, 100)


def test_without_a_loss_bound_none_is_recorded() -> None:
    assert fit_segmented([1, 2, 3], [4.0, 1.0, 2.5]).loss_bound is None


def test_all_bounds_infinite_falls_back_to_the_line() -> None:
    regression = fit_segmented([1.0, 2.0], [3.0, 5.0])
    assert regression.vc_bounds == (math.inf, math.inf)
    assert regression.k == LINE_K


def test_constant_measurements_fit_exactly() -> None:
    regression = fit_segmented([1, 2, 2, 3, 4] * 3, [7.0] * 15)
    assert all(fit.mean_squared_error == pytest.approx(0) for fit in regression.fits)
    assert regression.estimate(2.5) == pytest.approx(7.0)


def test_full_fit_interpolates_every_mean() -> None:
    lengths = [0, 0, 10, 20, 20, 30]
    values = [1.0, 3.0, 5.0, 0.0, 2.0, 4.0]
    full = fit_anchored(lengths, values, 2)
    assert full.knots_miles == (0, 10, 20, 30)
    assert full.knot_values == (2.0, 5.0, 1.0, 4.0)
    assert full.estimate(5.0) == pytest.approx(3.5)
    assert full.mean_squared_error == pytest.approx((1 + 1 + 1 + 1) / 6)


def test_two_lengths_line_and_l0_coincide() -> None:
    lengths, values = [0, 0, 100, 100], [1.0, 3.0, 4.0, 6.0]
    line, l0 = fit_segmented(lengths, values).fits
    np.testing.assert_allclose(line.knot_values, l0.knot_values)
    assert line.mean_squared_error == pytest.approx(l0.mean_squared_error)


def test_estimate_extrapolates_the_end_segments() -> None:
    fit = fit_anchored([0, 10, 20], [0.0, 10.0, 0.0], 1)
    assert fit.estimate(-5.0) == pytest.approx(-5.0)
    assert fit.estimate(25.0) == pytest.approx(-5.0)
    np.testing.assert_allclose(fit.estimate([0, 5, 10, 15, 20]), [0, 5, 10, 5, 0])
    line = fit_line([0, 10, 20], [0.0, 1.0, 2.0])
    assert line.estimate(100.0) == pytest.approx(10.0)
    assert isinstance(line.estimate(3.0), float)


def test_chosen_anchor_is_the_kink() -> None:
    # One measurement per length, exact tent: L_1 with the peak as anchor fits perfectly.
    fit = fit_anchored([0, 1, 2, 3, 4], [0.0, 1.0, 2.0, 1.0, 0.0], 1)
    assert fit.anchors_miles == (2.0,)
    assert fit.mean_squared_error == pytest.approx(0)


@pytest.mark.parametrize(
    ("lengths", "values", "field"),
    [
        ([1, 1, 1], [1, 2, 3], "lengths_miles"),
        ([1, 2, 3], [1, 2], "values"),
        ([1, 2, math.nan], [1, 2, 3], "lengths_miles"),
        ([1, 2, 3], [1, math.inf, 3], "values"),
        ([-1, 2, 3], [1, 2, 3], "lengths_miles"),
        ([[1, 2], [3, 4]], [1, 2, 3, 4], "lengths_miles"),
        (["a", "b"], [1, 2], "lengths_miles"),
    ],
)
def test_bad_measurements(lengths: list[object], values: list[float], field: str) -> None:
    with pytest.raises(InputError) as raised:
        fit_segmented(lengths, values)
    assert raised.value.field == field


@pytest.mark.parametrize("k", [-1, 2])
def test_fixed_k_out_of_range(k: int) -> None:
    with pytest.raises(InputError) as raised:
        fit_anchored([1, 2, 3], [1, 2, 3], k)
    assert raised.value.field == "k"
