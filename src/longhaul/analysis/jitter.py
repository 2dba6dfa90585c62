"""Jitter statistics of round-trip-time samples, the way USN reports them:
the mean, and the range and standard deviation as percentages of the mean, so that
connections of very different lengths compare (a SONET channel's std was about 0.15-0.19 %
of its RTT, an MPLS tunnel's about 3.3 %).

The standard deviation is the sample one (ddof = 1): the samples are a sample of the
channel's delays, and the figure estimates their spread. One sample has no spread to
estimate, so its std is NaN rather than a reassuring 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from longhaul.errors import InputError

MAX_BINS = 40
"""More bars than this in a report's small histogram are noise, not shape."""


@dataclass(frozen=True)
class JitterStats:
    count: int
    mean_ms: float
    min_ms: float
    max_ms: float
    std_ms: float

    @property
    def range_ms(self) -> float:
        return self.max_ms - self.min_ms

    @property
    def range_pct(self) -> float:
        """(max − min) as a percentage of the mean."""
        return 100 * self.range_ms / self.mean_ms

    @property
    def std_pct(self) -> float:
        """The standard deviation as a percentage of the mean."""
        return 100 * self.std_ms / self.mean_ms


@dataclass(frozen=True)
class Histogram:
    edges_ms: tuple[float, ...]
    """len(counts) + 1 bin edges, ascending."""
    counts: tuple[int, ...]


def statistics(samples_ms: Sequence[float]) -> JitterStats:
    """Mean, min, max and std of RTT samples (ms); percentages are properties."""
    values = _checked(samples_ms)
    return JitterStats(
        count=len(values),
        mean_ms=float(values.mean()),
        min_ms=float(values.min()),
        max_ms=float(values.max()),
        std_ms=float(values.std(ddof=1)) if len(values) > 1 else math.nan,
    )


def bins(samples_ms: Sequence[float], max_bins: int = MAX_BINS) -> list[float]:
    """Histogram bin edges (ms) for the samples: the Freedman-Diaconis width (robust to
    the few long delays jitter samples have), at most `max_bins` bins; equal samples
    get one bin around their value."""
    if max_bins < 1:
        raise InputError("max_bins", "must be 1 or more")
    values = _checked(samples_ms)
    low, high = float(values.min()), float(values.max())
    if low == high:
        half_width = max(abs(low) * 1e-3, 1e-6)
        return [low - half_width, low + half_width]
    edges = np.histogram_bin_edges(values, bins="fd")
    if len(edges) - 1 > max_bins:
        edges = np.linspace(low, high, max_bins + 1)
    return [float(edge) for edge in edges]


def histogram(samples_ms: Sequence[float], max_bins: int = MAX_BINS) -> Histogram:
    """Counts of the samples in the bins of `bins` (the last bin includes its right edge)."""
    edges = bins(samples_ms, max_bins)
    counts, _ = np.histogram(_checked(samples_ms), bins=edges)
    return Histogram(tuple(edges), tuple(int(count) for count in counts))


def _checked(samples_ms: Sequence[float]) -> np.ndarray[tuple[int], np.dtype[np.float64]]:
    values = np.asarray(samples_ms, dtype=np.float64).reshape(-1)
    if len(values) == 0:
        raise InputError("rtt_samples_ms", "no samples: a jitter test needs RTT samples")
    if not np.isfinite(values).all():
        raise InputError("rtt_samples_ms", "samples must be finite numbers of milliseconds")
    if (values <= 0).any():
        raise InputError("rtt_samples_ms", "a round-trip time is longer than 0 ms")
    return values
