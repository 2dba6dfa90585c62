"""InfiniBand runs of the real longhaul-sim: a test described once, turned into the
simulator's arguments, and its errors."""

from __future__ import annotations

import pytest

from longhaul.errors import InputError
from longhaul.sim import runner
from longhaul.sim.ib import PERFTEST_MB, IbRun, loop_rtt_ms, run


def test_a_run_takes_the_loops_round_trip_and_the_extenders_layer():
    args = IbRun("rdma_bw", 8 << 20, 8600, wan="sonet", iters=10).args()
    assert args[args.index("--rtt-ms") + 1] == f"{loop_rtt_ms(8600):.6g}"
    assert args[args.index("--wan") + 1] == "oc192"
    assert args[args.index("-n") + 1] == "10"
    assert "-b" not in args


def test_uc_send_reports_perftests_columns():
    report = run(IbRun("send_bw", 1 << 20, 1400, service="UC", iters=50))
    assert report["finished"]
    assert report["test"]["service"] == "uc"
    # The 4X SDR link's payload limit: 8 Gb/s x 2048 / 2074, in perftest's 2^20-byte MB.
    limit = 8e9 / 8 * 2048 / 2074 / PERFTEST_MB
    assert report["bw_average_mb_s"] == pytest.approx(limit, rel=1e-3)
    assert report["client"]["qps"][0]["packets_resent"] == 0


def test_impossible_tests_are_refused_with_the_reason():
    with pytest.raises(InputError, match="UD carries one packet per message"):
        runner.run_ib(["send_bw", "-c", "UD", "-s", "65536"])
    with pytest.raises(InputError, match="no Read"):
        runner.run_ib(["read_bw", "-c", "UC"])
    with pytest.raises(InputError, match="not one of"):
        runner.run_ib(["atomic_bw"])
