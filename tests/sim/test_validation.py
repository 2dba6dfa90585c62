"""The validation's plumbing: the shared ns-3 scenarios, the USN comparison on a small
profile, and the commands that print them. (The ns-3 and kernel runs themselves belong to
`longhaul sim validate`, not to the unit tests.)"""

from __future__ import annotations

import dataclasses
import json

import pytest

from longhaul.sim import ns3, validation
from tests.cli.conftest import run_cli


def test_the_ns3_cases_cover_every_variant_stream_count_rtt_and_loss():
    cases = validation.ns3_cases()
    assert len(cases) == 7 * 2 * 2 * 2
    assert {c.cc for c in cases} == set(ns3.TYPES)
    assert {(c.streams, c.rtt_ms, c.loss) for c in cases} == {
        (n, rtt, loss) for n in (1, 8) for rtt in (26.8, 163.0) for loss in (0.0, 1e-5)
    }
    assert len({c.key() for c in cases}) == len(cases)


def test_both_simulators_get_the_same_bottleneck_and_window():
    case = validation.ns3_cases()[-1]
    scenario = validation.ns3_scenario(case)
    path, host = scenario["path"], scenario["hosts"]["sender"]
    assert path["rate_bps"] == case.rate_bps and path["rtt_ms"] == case.rtt_ms
    assert path["queue_bytes"] == case.queue_bytes
    assert path["loss"]["random"] == case.loss
    # longhaul-sim advertises three quarters of its receive buffer, as Linux does.
    assert host["rcv_buf_max_bytes"] * 3 // 4 == pytest.approx(case.window_bytes, abs=1)
    assert host["mtu_bytes"] - 52 == case.mss_bytes
    assert "--cc=" + ns3.TYPES[case.cc] in case.arguments()


def test_a_cached_ns3_answer_is_not_computed_again(monkeypatch, tmp_path):
    monkeypatch.setenv("LONGHAUL_HOME", str(tmp_path))
    case = validation.ns3_cases()[0]
    cached = tmp_path / "ns3" / "results" / f"{case.key()}.json"
    cached.parent.mkdir(parents=True)
    cached.write_text(json.dumps({"goodput_bps": 9.5e8, "wall_s": 40.0}))
    monkeypatch.setattr(ns3, "binary", lambda: pytest.fail("ns-3 ran"))
    assert ns3.run(case)["goodput_bps"] == 9.5e8


def test_the_usn_comparison_checks_every_published_figure_and_finding():
    small = dataclasses.replace(
        validation.USN_MODEL, streams=(5, 6), repetitions=1, duration_s=2.0, warmup_s=1.0
    )
    found = validation.validate_usn(small)
    assert [c["what"] for c in found["profile"]][:2] == [
        "bic T̄ at 0.2 mi (Gb/s)",
        "bic T̄ at 1400 mi (Gb/s)",
    ]
    assert len(found["profile"]) == 8 and len(found["average_dpm"]) == 2
    assert len(found["findings"]) == 3
    for check in found["profile"]:
        assert check["within"] == (abs(check["error"]) <= 0.25)
    # The 0.2-mile loop is what the hosts can do: both variants near the WAN-PHY rate.
    assert found["profile"][0]["sim"] > 8.5
    assert isinstance(found["all_within"], bool)


def test_validate_refuses_an_unknown_part():
    result = run_cli("sim", "validate", "--parts", "ns3,gpu")
    assert result.returncode == 2 and "choose among ns3, kernel, usn" in result.stderr


def test_bench_sim_prints_events_and_realtime_factor():
    result = run_cli("bench", "sim", "--json", "--seconds", "1")
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    for case in ("one_flow", "twenty_flows"):
        assert found[case]["events_per_s"] > 0 and found[case]["realtime_factor"] > 0
