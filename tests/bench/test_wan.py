"""`longhaul bench wan` (the runs themselves need root and minutes: they are the
benchmark, not a test)."""

from __future__ import annotations

import fcntl
from contextlib import contextmanager

import pytest

from longhaul.bench import wan
from longhaul.testbed.netns import TestbedError


def test_a_second_benchmark_is_refused_while_one_holds_the_testbed(monkeypatch, tmp_path):
    monkeypatch.setattr(wan, "LOCK", tmp_path / "bench.lock")
    with (tmp_path / "bench.lock").open("a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(TestbedError, match="wait for it to finish"), wan.own_testbed():
            pytest.fail("a second testbed came up")


def test_circuits_run_smallest_first_and_report_in_suite_order(monkeypatch):
    """A circuit taken down hands its memory back to a virtual machine's host over the
    next seconds: the 2.8 GB one around the earth goes last."""
    ran: list[float] = []

    @contextmanager
    def circuit(testbed, case):
        ran.append(case.rtt_ms)
        yield case

    def one(testbed, circuit, case):
        return {"case": case, "max_1ms_rate_ratio": 1.0, "emulator_max_late_ms": 0.0,
                "emulator_rss_mib": 0.0, "host_steal_s": 0.25, "degraded": False,
                "reasons": [], "rtt_mean_ms": case.rtt_ms, "rtt_std_ms": 0.0, "rtt_min_ms": case.rtt_ms,
                "lost": 0, "utilization": 1.0, "goodput_gbps": 9.0,
                "peer": {"goodput_gbps": 8.0, "utilization": 0.9}}  # fmt: skip

    monkeypatch.setattr(wan, "circuit_for", circuit)
    monkeypatch.setattr(wan, "_one", one)
    cases = wan.suite()
    out = wan._run(None, cases, None)  # type: ignore[arg-type]
    assert ran == sorted(ran, key=lambda rtt: rtt), ran
    assert ran[-1] == 653.0 and ran.count(653.0) == 1, "the idle and loaded cases share it"
    assert [c["rtt_ms"] for c in out["cases"]] == [c.rtt_ms for c in cases]
    assert out["targets"]["utilization_cubic_1_stream_9.6gbps_650ms"]["measured"] == 1.0
    assert out["cases"][0]["host_steal_s_max"] == 0.25
