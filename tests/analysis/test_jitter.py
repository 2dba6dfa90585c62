"""Jitter statistics as USN reports them: mean, range and std as % of the mean."""

from __future__ import annotations

import math

import numpy as np
import pytest

from longhaul.analysis import jitter
from longhaul.errors import InputError


def test_statistics_as_percentages_of_the_mean():
    stats = jitter.statistics([9.0, 10.0, 11.0])
    assert stats.mean_ms == 10.0
    assert stats.range_pct == pytest.approx(20.0)
    assert stats.std_pct == pytest.approx(10.0)  # sample std of 9, 10, 11 is 1


def test_one_sample_has_no_spread_to_report():
    assert math.isnan(jitter.statistics([5.0]).std_ms)


def test_histogram_counts_every_sample_in_few_bins():
    samples = np.random.default_rng(7).normal(163.0, 0.2, 5000)
    found = jitter.histogram(samples)
    assert sum(found.counts) == 5000
    assert len(found.edges_ms) == len(found.counts) + 1 <= jitter.MAX_BINS + 1
    assert found.edges_ms[0] == samples.min() and found.edges_ms[-1] == samples.max()


def test_equal_samples_get_one_bin_around_them():
    edges = jitter.bins([2.0, 2.0, 2.0])
    assert len(edges) == 2 and edges[0] < 2.0 < edges[1]


@pytest.mark.parametrize(
    ("samples", "message"),
    [([], "no samples"), ([1.0, math.nan], "finite"), ([1.0, 0.0], "longer than 0")],
)
def test_bad_samples_are_refused(samples, message):
    with pytest.raises(InputError, match=message):
        jitter.statistics(samples)
