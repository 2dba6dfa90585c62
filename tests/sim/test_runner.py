"""longhaul-sim driven from Python: scenarios from the topology, the real binary run
alone, side by side and on a Dask LocalCluster, deterministic per seed."""

from __future__ import annotations

import pytest

from longhaul import binaries
from longhaul.errors import InputError
from longhaul.sim import runner
from longhaul.sim.scenarios import TcpRun, tcp_scenario
from longhaul.topology import usn
from longhaul.topology.circuits import loop_spec


def small(cc: str = "reno", seed: int = 1, loss: float = 0.0) -> dict:
    """1 Gb/s at 10 ms for two simulated seconds: a fraction of a second of work."""
    return {
        "duration_s": 2,
        "cc": cc,
        "seed": seed,
        "path": {"rate_bps": 1e9, "rtt_ms": 10, "queue_bytes": 1_250_000, "loss": {"random": loss}},
    }


def test_a_loop_of_the_topology_becomes_its_circuit():
    circuit = loop_spec(usn(), 1400)
    scenario = tcp_scenario(circuit, TcpRun(cc="htcp", streams=8, duration_s=10, warmup_s=2))
    assert scenario["path"]["rate_bps"] == circuit.rate_bps
    assert scenario["path"]["rtt_ms"] == pytest.approx(circuit.rtt_ms)
    assert scenario["path"]["queue_bytes"] == (circuit.queue_bytes or circuit.bdp_bytes)
    assert (scenario["cc"], scenario["streams"], scenario["omit_s"]) == ("htcp", 8, 2)
    assert scenario["host_preset"] == "usn-type-1"


def test_buffer_ceilings_override_the_presets_and_a_kernel_brings_its_defaults():
    circuit = loop_spec(usn(), 1400)
    run = TcpRun(cc="bic", streams=1, duration_s=1, warmup_s=0, buffer_bytes=16 << 20)
    resolved = runner.run_scenario(tcp_scenario(circuit, run))["scenario"]
    for side in ("sender", "receiver"):
        host = resolved[side]
        assert host["kernel"] == "linux-2.6.18"  # usn-type-1's
        assert host["snd_buf_max_bytes"] == host["rcv_buf_max_bytes"] == 16 << 20
    stock = runner.run_scenario({**small(), "hosts": {"sender": {"kernel": "linux-6.x"}}})
    assert stock["scenario"]["sender"]["rcv_buf_max_bytes"] == 6 << 20
    assert stock["scenario"]["sender"]["initial_cwnd_segments"] == 10


def test_a_run_reports_like_iperf3_and_conserves_bytes():
    report = runner.run_scenario(small())
    assert report["source"] == "simulated"
    assert 0.85e9 < report["end"]["sum_received"]["bits_per_second"] < 1e9
    assert len(report["intervals"]) == 2
    assert report["counters"]["conserved"]


def test_the_same_seed_gives_the_same_run_and_another_seed_another():
    first, again = (runner.run_scenario(small(seed=7, loss=1e-3)) for _ in range(2))
    other = runner.run_scenario(small(seed=8, loss=1e-3))
    assert first["end"] == again["end"] and first["counters"] == again["counters"]
    assert other["counters"] != first["counters"]


def test_one_thread_gives_what_two_give():
    # 10 ms: each side's link holds a packet 5 ms, long enough to run on two threads.
    one, two = (runner.run_scenario(small(seed=3, loss=1e-3), threads=t) for t in (1, 2))
    assert one["counters"]["packets_dropped_line"] > 0
    # All but the event count: on two threads a link learns of a frame only at the end
    # of the window it was sent in, so its trains can be shorter (more wake-ups for the
    # same frames at the same instants).
    for report in (one, two):
        report["counters"].pop("events_processed")
    assert (one["end"], one["intervals"], one["counters"]) == (
        two["end"],
        two["intervals"],
        two["counters"],
    )


def test_a_bad_scenario_names_its_field():
    with pytest.raises(InputError, match=r"path\.loss\.random"):
        runner.run_scenario({**small(), "path": {**small()["path"], "loss": {"random": "x"}}})
    with pytest.raises(InputError, match="streams"):
        runner.run_scenario({**small(), "streams": 500})


def test_many_run_side_by_side_in_input_order():
    finished = []
    reports = runner.run_many(
        [small("reno"), small("cubic"), small("vegas")],
        workers=2,
        on_done=lambda i, _r: finished.append(i),
    )
    assert [r["scenario"]["cc"] for r in reports] == ["reno", "cubic", "vegas"]
    assert sorted(finished) == [0, 1, 2]


def test_a_dask_local_cluster_gives_the_same_answers():
    scenarios = [small("bic", seed=3, loss=1e-4), small("htcp", seed=3, loss=1e-4)]
    on_dask = runner.run_many(scenarios, scheduler="local")
    locally = runner.run_many(scenarios, workers=1)
    assert [r["end"] for r in on_dask] == [r["end"] for r in locally]


def test_a_missing_binary_says_how_to_build_it(monkeypatch, tmp_path):
    monkeypatch.setattr(binaries, "REPO", tmp_path)
    monkeypatch.setenv("LONGHAUL_SIM", str(tmp_path / "none"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(runner.SimUnavailableError, match="make setup"):
        runner.binary()
