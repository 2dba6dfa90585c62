"""`longhaul bench sim`: the five cases, and the ns-3 timing's refusal without ns-3."""

from __future__ import annotations

import json

import pytest

from longhaul.bench import sim as sim_bench
from longhaul.sim import ns3
from tests.cli.conftest import run_cli


def test_bench_sim_prints_events_and_realtime_factor():
    result = run_cli("bench", "sim", "--json", "--seconds", "1", "--repetitions", "2",
                     "--no-ns3")  # fmt: skip
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    for case in ("one_flow", "twenty_flows", "lossy", "mixed", "ib_write"):
        figures = found[case]
        assert figures["events_per_s"] > 0 and figures["repetitions"] == 2
        low, mid, high = (figures[f"realtime_factor{end}"] for end in ("_min", "", "_max"))
        assert 0 < low <= mid <= high
    # In one second at 163 ms one flow is still in its first slow start; the mixed
    # flows, down to 26.8 ms, are well under way.
    assert found["lossy"]["goodput_bps"] <= found["one_flow"]["goodput_bps"]
    assert found["mixed"]["goodput_bps"] > 1e9
    assert found["vs_ns3_speedup"] is None and found["vs_ns3"] == {"skipped": "--no-ns3"}


def test_the_ns3_timing_says_why_when_ns3_cannot_run(monkeypatch):
    def missing() -> None:
        raise ns3.Ns3UnavailableError("ns-3 is not installed: apt-get install libns3-dev")

    monkeypatch.setattr(ns3, "binary", missing)
    with pytest.raises(ns3.Ns3UnavailableError, match="libns3-dev"):
        sim_bench.against_ns3()
    case = sim_bench.scaled_case()
    assert (case.rate_bps, case.rtt_ms, case.streams, case.loss) == (10**9, 26.8, 1, 0.0)
