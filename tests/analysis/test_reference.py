"""The published USN tables recomputed from their own inputs within rounding."""

from __future__ import annotations

import pytest

from longhaul.analysis import reference
from longhaul.analysis.intervals import exact, rounded
from longhaul.analysis.profiles import dpm_mbps_per_mile

MISSES = {
    # Each one is explained in reference._NOTES; none is reachable by any reading tried.
    ("tcp_profiles.csv", "htcp", "dpm_mbps_per_mile", "8600"),
    ("ib_rdma.csv", "wanphy", "dpm_mbps_per_mile", "1400"),
    ("ib_rdma.csv", "sonet", "average_gbps", ""),
    ("ib_rdma.csv", "sonet", "average_std_mbps", ""),
    ("ib_rdma.csv", "wanphy", "average_std_mbps", ""),
}


def _by_key() -> dict[tuple[str, str, str, str], reference.Check]:
    return {(c.table, c.subject, c.figure, c.at_miles): c for c in reference.checks()}


def test_every_derived_figure_is_checked():
    checks = _by_key()
    # 6 DPMs and 2 average DPMs in tcp_profiles; 6 DPMs and 2 × 3 averages in ib_rdma.
    assert len(checks) == 20
    assert sum(key[0] == "tcp_profiles.csv" for key in checks) == 8


def test_all_but_the_known_misprints_are_within_rounding():
    missed = {key for key, check in _by_key().items() if not check.within_rounding}
    assert missed == MISSES
    for key in MISSES:
        assert _by_key()[key].note, f"{key} needs a note saying why it misses"


def test_average_dpm_of_the_tcp_profiles_is_reproduced():
    checks = _by_key()
    bic = checks[("tcp_profiles.csv", "bic", "average_dpm_mbps_per_mile", "")]
    htcp = checks[("tcp_profiles.csv", "htcp", "average_dpm_mbps_per_mile", "")]
    assert (bic.published, htcp.published) == ("1.34", "1.29")
    assert bic.within_rounding and htcp.within_rounding


def test_the_ib_1400_mile_dpm_is_reachable_only_through_intervals():
    point = dpm_mbps_per_mile(7.48, 7.47, 0.2, 1400)
    assert not rounded("0.012").contains(exact(f"{point:.6f}"))
    check = _by_key()[("ib_rdma.csv", "sonet", "dpm_mbps_per_mile", "1400")]
    assert check.within_rounding
    assert check.recomputed.as_floats() == pytest.approx((0.0, 0.02 * 1000 / 1399.8))


def test_the_comparison_as_json_has_a_top_level_verdict():
    found = reference.compare_reference()
    assert found["all_within_rounding"] is False
    assert set(found["tables"]) == {"tcp_profiles.csv", "ib_rdma.csv"}
    figure = found["tables"]["tcp_profiles.csv"]["figures"][0]
    assert set(figure) >= {"published", "published_interval", "recomputed", "within_rounding"}


def test_tcp_profiles_load_as_numbers():
    table = reference.tcp_profiles()
    assert list(table.columns) == ["cc", "miles", "avg_gbps", "std_mbps", "dpm_mbps_per_mile"]
    assert table.loc[(table["cc"] == "bic") & (table["miles"] == 1400), "avg_gbps"].item() == 6.69


def test_malformed_tables_are_refused():
    with pytest.raises(ValueError, match="data line 1 has 2 fields"):
        reference.parse_table("x.csv", "# c\na,b,c\n1,2\n")
    with pytest.raises(ValueError, match="Average DPM"):
        reference.tcp_profiles_checks(reference.parse_table("x.csv", "cc,miles\nbic,1\n"))
