"""k-segmented regression of a measured parameter against connection length (USN's method).

Measurements M_j(d_i) exist at a few lengths d_1 < ... < d_n, several at each. L_k
(k = 0 .. n−2) joins the per-length means M̄_i linearly between k + 2 anchors: the two
end lengths and k interior lengths, chosen by dynamic programming to minimise the
empirical error. L_{−1} is the least-squares line through every measurement. k is chosen
to minimise a Vapnik-Chervonenkis bound on the expected error of a new measurement.

With B, a known bound on one measurement's loss (f(d) − M)², the bound of the USN papers
(Vapnik's, for bounded losses):

    E(L_k) ≤ Ê + (B·ε/2)·(1 + sqrt(1 + Ê/(B·ε)))
    ε = 4·( h·(ln(2l/h) + 1) − ln(η/4) ) / l

Without one (the default), the same theory's bound for unbounded losses in its practical
form (V. Cherkassky, X. Shao, F. Mulier, V. Vapnik, "Model complexity control for
regression using VC generalization bounds", IEEE Trans. Neural Networks 10(5), 1999,
eq. 12; there a1 = a2 = c = 1 and η = 1/sqrt(l)):

    E(L_k) ≤ Ê / (1 − sqrt(p − p·ln p + ln(l)/(2l)))₊,    p = h/l

Why not B by default: no physical bound on a throughput's squared error is known, and
the only one the data give, its squared range, is so loose that the capacity term
B·ε outweighs any fit: with it the bound chose the straight line on every two-knot
curve tried, even with 10,500 measurements. The practical form needs no B, and on
synthetic two-knot curves (21 lengths, 15 measurements each, noise 0.3-0.8 Gb/s) it
chooses k = 2 with both anchors on the true knots in 84-89 of 100 draws, where 5-fold
cross-validation, the usual alternative, over-fits more often (tests/analysis).

Decisions, so that reports can say what the numbers mean:

- Ê is the **mean** squared error over all l individual measurements (the empirical
  risk), not their sum: both bounds take a risk.
- h is 2 for L_{−1} and 2(k + 1) for L_k. When h ≥ l (bounded form) or the practical
  form's denominator reaches 0, the bound is +inf: the sample says nothing about the
  error of so rich a class.
- Ties in the bound (all infinite included) go to the smaller h, L_{−1} first, because
  the simpler model is the safer guess. L_{−1} and L_0 share h = 2 and least squares is
  optimal over all lines, so L_0 is never chosen (when it fits as well, it is L_{−1}).
- Outside [d_1, d_n] nothing was measured; an estimate continues the end segments
  linearly, the way L_{−1} continues, so every fit is one continuous piecewise-linear
  function. Callers who must not extrapolate check `span_miles`.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import NamedTuple, overload

import numpy as np
import numpy.typing as npt
import pandas as pd

from longhaul.errors import InputError

FloatArray = npt.NDArray[np.float64]
IndexArray = npt.NDArray[np.intp]

DEFAULT_ETA = 0.05
LINE_K = -1
"""The k that names L_{−1}, the least-squares line."""


@dataclass(frozen=True)
class Fit:
    """One estimator L_k: a continuous piecewise-linear function through its knots.

    For k ≥ 0 the knots are the anchors (end lengths included) with the mean measured
    there; for the line (k = −1) they are its values at the two end lengths.
    """

    k: int
    knots_miles: tuple[float, ...]
    knot_values: tuple[float, ...]
    mean_squared_error: float
    n_measurements: int

    @property
    def vc_dimension(self) -> int:
        return vc_dimension(self.k)

    @property
    def span_miles(self) -> tuple[float, float]:
        return self.knots_miles[0], self.knots_miles[-1]

    @property
    def anchors_miles(self) -> tuple[float, ...]:
        """The interior anchors (k of them); none for the line."""
        return () if self.k == LINE_K else self.knots_miles[1:-1]

    @overload
    def estimate(self, length_miles: float) -> float: ...
    @overload
    def estimate(self, length_miles: npt.ArrayLike) -> FloatArray: ...
    def estimate(self, length_miles: npt.ArrayLike) -> float | FloatArray:
        """The estimate at each length; outside the measured span the end segments go on."""
        at = np.asarray(length_miles, dtype=np.float64)
        values = _piecewise_linear(np.asarray(self.knots_miles), np.asarray(self.knot_values), at)
        return float(values) if values.ndim == 0 else values


@dataclass(frozen=True)
class SegmentedRegression:
    """Every candidate L_{−1} .. L_{n−2} with its VC bound, and the one the bound picks."""

    lengths_miles: tuple[float, ...]
    means: tuple[float, ...]
    counts: tuple[int, ...]
    fits: tuple[Fit, ...]
    """L_{−1}, L_0, ..., L_{n−2}, in that order."""
    vc_bounds: tuple[float, ...]
    """The bound on E(L_k) for each fit, in the order of `fits`."""
    loss_bound: float | None
    """B when the bounded-loss form was used; None for the practical form."""
    eta: float

    @property
    def chosen(self) -> Fit:
        # argmin takes the first of equal bounds: the smallest VC dimension.
        return self.fits[int(np.argmin(self.vc_bounds))]

    @property
    def k(self) -> int:
        return self.chosen.k

    @property
    def anchors_miles(self) -> tuple[float, ...]:
        return self.chosen.anchors_miles

    @property
    def span_miles(self) -> tuple[float, float]:
        return self.lengths_miles[0], self.lengths_miles[-1]

    @property
    def knots_miles(self) -> tuple[float, ...]:
        """The chosen fit's knots."""
        return self.chosen.knots_miles

    @property
    def n_measurements(self) -> int:
        return sum(self.counts)

    @overload
    def estimate(self, length_miles: float) -> float: ...
    @overload
    def estimate(self, length_miles: npt.ArrayLike) -> FloatArray: ...
    def estimate(self, length_miles: npt.ArrayLike) -> float | FloatArray:
        """The chosen fit's estimate (see `Fit.estimate`)."""
        return self.chosen.estimate(length_miles)

    def to_frame(self) -> pd.DataFrame:
        """One row per candidate, for reports: k, h, anchors, Ê, bound, chosen."""
        chosen_k = self.k
        return pd.DataFrame(
            {
                "k": [fit.k for fit in self.fits],
                "vc_dimension": [fit.vc_dimension for fit in self.fits],
                "anchors_miles": [fit.anchors_miles for fit in self.fits],
                "mean_squared_error": [fit.mean_squared_error for fit in self.fits],
                "vc_bound": list(self.vc_bounds),
                "chosen": [fit.k == chosen_k for fit in self.fits],
            }
        )


def fit_segmented(
    lengths_miles: npt.ArrayLike,
    values: npt.ArrayLike,
    *,
    loss_bound: float | None = None,
    eta: float = DEFAULT_ETA,
) -> SegmentedRegression:
    """Fit L_{−1} .. L_{n−2} to measurements (one length and one value each) and pick k.

    `loss_bound` is B, a known bound on (f(d) − M)²: given, k is chosen by the
    bounded-loss bound with confidence parameter `eta` in (0, 1); not given, by the
    practical bound for unbounded losses (see the module's docstring).
    """
    groups = _group(lengths_miles, values)
    if loss_bound is not None:
        _check_bound_parameters(loss_bound, eta)
    best, parent = _best_errors(_segment_costs(groups))
    anchored = (_anchored(groups, best, parent, k) for k in range(groups.lengths_miles.size - 1))
    fits = (_line(groups), *anchored)
    bounds = tuple(
        practical_vc_bound(fit.mean_squared_error, fit.vc_dimension, fit.n_measurements)
        if loss_bound is None
        else vc_bound(fit.mean_squared_error, fit.vc_dimension, fit.n_measurements, loss_bound, eta)
        for fit in fits
    )
    return SegmentedRegression(
        lengths_miles=tuple(groups.lengths_miles.tolist()),
        means=tuple(groups.means.tolist()),
        counts=tuple(groups.counts.tolist()),
        fits=fits,
        vc_bounds=bounds,
        loss_bound=loss_bound,
        eta=eta,
    )


def fit_line(lengths_miles: npt.ArrayLike, values: npt.ArrayLike) -> Fit:
    """L_{−1}: the ordinary least-squares line through every measurement."""
    return _line(_group(lengths_miles, values))


def fit_anchored(lengths_miles: npt.ArrayLike, values: npt.ArrayLike, k: int) -> Fit:
    """The best L_k for a fixed k (0 ≤ k ≤ n − 2): the anchors with the least Ê."""
    groups = _group(lengths_miles, values)
    n = len(groups.lengths_miles)
    if not 0 <= k <= n - 2:
        raise InputError("k", f"must be between 0 and {n - 2} for {n} distinct lengths")
    best, parent = _best_errors(_segment_costs(groups))
    return _anchored(groups, best, parent, k)


def k_label(k: int) -> str:
    """How reports name L_k: `line` for L_{−1}, else `k = N`."""
    return "line" if k == LINE_K else f"k = {k}"


def vc_dimension(k: int) -> int:
    """h of L_k: 2 for the line (k = −1), 2(k + 1) otherwise."""
    return 2 if k == LINE_K else 2 * (k + 1)


def vc_epsilon(vc_dim: int, n_measurements: int, eta: float) -> float:
    """ε = 4·(h·(ln(2l/h) + 1) − ln(η/4))/l; +inf when h ≥ l (no bound exists)."""
    if vc_dim < 1:
        raise InputError("vc_dimension", "must be 1 or more")
    if not 0 < eta < 1:
        raise InputError("eta", "the confidence parameter must lie strictly between 0 and 1")
    if vc_dim >= n_measurements:
        return math.inf
    capacity = vc_dim * (math.log(2 * n_measurements / vc_dim) + 1) - math.log(eta / 4)
    return 4 * capacity / n_measurements


def vc_bound(
    mean_squared_error: float,
    vc_dim: int,
    n_measurements: int,
    loss_bound: float,
    eta: float = DEFAULT_ETA,
) -> float:
    """The VC bound on the expected squared error, from the empirical mean squared error."""
    _check_bound_parameters(loss_bound, eta)
    epsilon = vc_epsilon(vc_dim, n_measurements, eta)
    if math.isinf(epsilon):
        return math.inf
    scale = loss_bound * epsilon
    # (Bε/2)(1 + sqrt(1 + Ê/(Bε))) rewritten without the division, so that B = 0 (all
    # measurements equal) gives the limit Ê instead of 0/0.
    half = scale / 2
    return mean_squared_error + half + math.sqrt(half * half + scale * mean_squared_error / 4)


def practical_vc_bound(mean_squared_error: float, vc_dim: int, n_measurements: int) -> float:
    """Ê / (1 − sqrt(p − p·ln p + ln(l)/(2l)))₊ with p = h/l (Cherkassky et al. 1999);
    +inf where the denominator is not positive."""
    if vc_dim < 1:
        raise InputError("vc_dimension", "must be 1 or more")
    if vc_dim >= n_measurements:
        return math.inf
    p = vc_dim / n_measurements
    penalty = math.sqrt(p - p * math.log(p) + math.log(n_measurements) / (2 * n_measurements))
    if penalty >= 1:
        return math.inf
    return mean_squared_error / (1 - penalty)


class _Groups(NamedTuple):
    """Measurements by distinct length: all that the squared error of any L_k needs."""

    lengths_miles: FloatArray
    counts: IndexArray
    means: FloatArray
    within: FloatArray
    """Sum of squared deviations from the mean, per length."""
    lengths_all: FloatArray
    values_all: FloatArray


def _group(lengths_miles: npt.ArrayLike, values: npt.ArrayLike) -> _Groups:
    lengths = _finite_vector(lengths_miles, "lengths_miles")
    measured = _finite_vector(values, "values")
    if lengths.shape != measured.shape:
        raise InputError(
            "values", f"has {measured.size} entries but lengths_miles has {lengths.size}"
        )
    if np.any(lengths < 0):
        raise InputError("lengths_miles", "lengths are distances and cannot be negative")
    distinct, which, counts = np.unique(lengths, return_inverse=True, return_counts=True)
    if distinct.size < 2:
        raise InputError("lengths_miles", "need measurements at two or more distinct lengths")
    means = np.bincount(which, weights=measured) / counts
    # bincount with weights sums floats; its stub only knows the integer form.
    within = np.bincount(which, weights=(measured - means[which]) ** 2).astype(np.float64)
    return _Groups(distinct, counts, means, within, lengths, measured)


def _finite_vector(data: npt.ArrayLike, field: str) -> FloatArray:
    try:
        vector = np.asarray(data, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise InputError(field, "must be numbers") from error
    if vector.ndim != 1:
        raise InputError(field, "must be a one-dimensional sequence of numbers")
    if not np.all(np.isfinite(vector)):
        raise InputError(field, "must be finite: drop missing or failed measurements first")
    return vector


def _check_bound_parameters(loss_bound: float, eta: float) -> None:
    if not (math.isfinite(loss_bound) and loss_bound >= 0):
        raise InputError("loss_bound", "must be a finite number, zero or more")
    if not 0 < eta < 1:
        raise InputError("eta", "the confidence parameter must lie strictly between 0 and 1")


def _line(groups: _Groups) -> Fit:
    lengths, values = groups.lengths_all, groups.values_all
    centred = lengths - lengths.mean()
    slope = float(centred @ (values - values.mean()) / (centred @ centred))
    intercept = float(values.mean() - slope * lengths.mean())
    residuals = values - (intercept + slope * lengths)
    ends = (float(groups.lengths_miles[0]), float(groups.lengths_miles[-1]))
    return Fit(
        k=LINE_K,
        knots_miles=ends,
        knot_values=tuple(intercept + slope * end for end in ends),
        mean_squared_error=float(residuals @ residuals) / values.size,
        n_measurements=values.size,
    )


def _segment_costs(groups: _Groups) -> FloatArray:
    """cost[i, j] for i < j: the squared error, over the measurements at lengths i+1 .. j,
    of the segment joining the means at lengths i and j.

    A segment owns its right anchor's measurements but not its left one's, so segments
    that share an anchor count its measurements once; the first length's measurements,
    owned by no segment, are added once outside the search. At a length t the error is
    within[t] + count[t]·(segment(d_t) − M̄_t)², so no measurement is visited twice.
    """
    lengths, means = groups.lengths_miles, groups.means
    n = lengths.size
    cost = np.full((n, n), np.inf)
    for i, j in itertools.combinations(range(n), 2):
        owned = slice(i + 1, j + 1)
        slope = (means[j] - means[i]) / (lengths[j] - lengths[i])
        misfit = means[i] + slope * (lengths[owned] - lengths[i]) - means[owned]
        cost[i, j] = np.sum(groups.within[owned] + groups.counts[owned] * misfit**2)
    return cost


def _best_errors(cost: FloatArray) -> tuple[FloatArray, IndexArray]:
    """best[m, j]: the least error of lengths 1 .. j when j is an anchor preceded by m
    interior anchors; parent[m, j] is the anchor before j on that best path."""
    n = cost.shape[0]
    best = np.full((n - 1, n), np.inf)
    parent = np.full((n - 1, n), -1, dtype=np.intp)
    best[0, 1:] = cost[0, 1:]
    parent[0, 1:] = 0
    for m in range(1, n - 1):
        for j in range(m + 1, n):
            # The m-th interior anchor is at index m or later: m − 1 come before it.
            previous = np.arange(m, j)
            totals = best[m - 1, previous] + cost[previous, j]
            pick = int(np.argmin(totals))
            best[m, j] = totals[pick]
            parent[m, j] = previous[pick]
    return best, parent


def _anchored(groups: _Groups, best: FloatArray, parent: IndexArray, k: int) -> Fit:
    last = groups.lengths_miles.size - 1
    anchors = [last]
    for m in range(k, -1, -1):
        anchors.append(int(parent[m, anchors[-1]]))
    anchors.reverse()
    squared_error = float(groups.within[0] + best[k, last])
    return Fit(
        k=k,
        knots_miles=tuple(float(groups.lengths_miles[a]) for a in anchors),
        knot_values=tuple(float(groups.means[a]) for a in anchors),
        mean_squared_error=squared_error / groups.values_all.size,
        n_measurements=groups.values_all.size,
    )


def _piecewise_linear(knots_x: FloatArray, knots_y: FloatArray, at: FloatArray) -> FloatArray:
    """Interpolate between knots (strictly increasing, two or more), extrapolate beyond."""
    segment = np.clip(np.searchsorted(knots_x, at, side="right") - 1, 0, knots_x.size - 2)
    x0, x1 = knots_x[segment], knots_x[segment + 1]
    y0, y1 = knots_y[segment], knots_y[segment + 1]
    result: FloatArray = y0 + (y1 - y0) * (at - x0) / (x1 - x0)
    return result
