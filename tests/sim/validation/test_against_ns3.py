"""The shared ns-3 cases, ns-3's recorded answers, and longhaul-sim against them."""

from __future__ import annotations

import dataclasses
import datetime
import json

import pytest

from longhaul.sim import ns3
from longhaul.sim.validation import against_ns3


def test_the_ns3_cases_cover_every_variant_in_every_group():
    grouped = against_ns3.ns3_grouped_cases()
    cases = [c for _, c in grouped]
    # line rate: 26.8 ms x {1, 8} + 163 ms x 8; random loss: 26.8 ms x {1e-4, 1e-3} x
    # {1, 8} + 163 ms x 8; small queue: {0.1, 0.25} BDP x {1, 8}; each for 7 variants.
    assert len(cases) == 7 * (3 + 4 + 1 + 4)
    assert len({c.key() for c in cases}) == len(cases)
    for group in against_ns3.NS3_GROUPS:
        mine = [c for g, c in grouped if g == group]
        assert {c.cc for c in mine} == set(ns3.TYPES), group.name
    lossy = [c for g, c in grouped if g.name.startswith("random loss")]
    assert {c.loss for c in lossy} == {1e-4, 1e-3}
    small = [c for g, c in grouped if g.name == "small queue"]
    bdp = {c: c.rate_bps / 8 * c.rtt_ms / 1000 for c in small}
    assert {round(c.queue_bytes / bdp[c], 2) for c in small} == {0.1, 0.25}
    # Windows free to grow past the queue there, so every loss is an overflow.
    assert all(c.window_bytes == round(4 * bdp[c]) for c in small)
    # Each run's warm-up covers its group's round trips.
    assert all(c.warmup_s >= 0.1 * c.rtt_ms for c in lossy)


def _answer(mbps: float, wall_s: float = 1.0) -> dict:
    return {"goodput_bps": mbps * 1e6, "wall_s": wall_s, "from": "run"}


def test_lossy_cases_start_with_five_ns3_seeds_and_ns3_answers_their_mean():
    grouped = [c for _, c in against_ns3.ns3_grouped_cases()]
    lossy = next(c for c in grouped if c.loss > 0)
    runs = against_ns3.ns3_first_runs(lossy)
    assert [r.seed for r in runs] == [1, 2, 3, 4, 5] and runs[0] == lossy
    assert len({r.key() for r in runs}) == 5
    clean = next(c for c in grouped if c.loss == 0)
    assert against_ns3.ns3_first_runs(clean) == [clean]
    # The simulator's side costs seconds: twenty seeds of every lossy case.
    assert [r.seed for r in against_ns3.sim_runs(lossy)] == list(range(1, 21))
    assert against_ns3.sim_runs(clean) == [clean]
    mean = against_ns3._mean_answer([_answer(1.0), _answer(3.0, 2.0)])
    assert mean["goodput_bps"] == 2e6 and mean["wall_s"] == 3.0
    assert mean["seed_goodputs_mbps"] == [1.0, 3.0]
    failed = {"error": "ns-3 died", "from": "run"}
    assert against_ns3._mean_answer([_answer(1.0), failed]) == failed


def test_a_lossy_case_gets_seeds_until_ns3s_mean_is_known_to_five_percent():
    lossy = next(c for _, c in against_ns3.ns3_grouped_cases() if c.loss > 0)
    steady = [_answer(100.0 + i) for i in range(5)]
    assert not against_ns3.ns3_wants_another_seed(lossy, steady)
    # One run of five in ns-3's timeout livelock: a standard error of 23 % of the mean.
    livelock = [_answer(m) for m in (19.3, 18.7, 16.8, 17.7, 1.19)]
    assert against_ns3.ns3_wants_another_seed(lossy, livelock)
    assert not against_ns3.ns3_wants_another_seed(lossy, livelock * 4)  # 20 seeds at most
    # However long ns-3 takes: five runs of 12.5 minutes known to 10 % want a sixth.
    slow = [_answer(m, 750.0) for m in (479.0, 741.0, 794.0, 850.0, 903.0)]
    assert against_ns3.ns3_wants_another_seed(lossy, slow)
    assert not against_ns3.ns3_wants_another_seed(lossy, slow * 4)
    assert not against_ns3.ns3_wants_another_seed(lossy, [*livelock[:4], {"error": "died"}])
    clean = next(c for _, c in against_ns3.ns3_grouped_cases() if c.loss == 0)
    assert not against_ns3.ns3_wants_another_seed(clean, [_answer(964.0)])


def test_seeds_are_added_one_at_a_time_to_the_cases_that_want_them():
    grouped = [c for _, c in against_ns3.ns3_grouped_cases()]
    steady = next(c for c in grouped if c.loss > 0)
    noisy = next(c for c in grouped if c.loss > 0 and c != steady)
    clean = next(c for c in grouped if c.loss == 0)
    asked: list[list[int]] = []

    def answer_runs(runs):
        asked.append([r.seed for r in runs])
        # The noisy case's fifth seed came out low, its later seeds did not.
        noisy_runs = {dataclasses.replace(noisy, seed=r.seed) for r in runs}
        return [_answer(60.0 if r in noisy_runs and r.seed == 5 else 100.0) for r in runs]

    runs, answers = against_ns3.ns3_seeded([steady, noisy, clean], answer_runs)
    assert len(runs[0]) == 5 and len(runs[2]) == 1
    assert [r.seed for r in runs[1]] == list(range(1, len(runs[1]) + 1))
    assert 5 < len(runs[1]) < 20
    assert not against_ns3.ns3_wants_another_seed(noisy, answers[1])
    assert against_ns3.ns3_wants_another_seed(noisy, answers[1][:-1])
    assert asked[0] == [1, 2, 3, 4, 5] * 2 + [1]
    assert asked[1:] == [[seed] for seed in range(6, len(runs[1]) + 1)]


def test_both_simulators_get_the_same_bottleneck_and_window():
    case = [c for _, c in against_ns3.ns3_grouped_cases()][-1]
    scenario = against_ns3.ns3_scenario(case)
    path, host = scenario["path"], scenario["hosts"]["sender"]
    assert path["rate_bps"] == case.rate_bps and path["rtt_ms"] == case.rtt_ms
    assert path["queue_bytes"] == case.queue_bytes
    assert path["loss"]["random"] == case.loss
    # longhaul-sim advertises three quarters of its receive buffer, as Linux does.
    assert host["rcv_buf_max_bytes"] * 3 // 4 == pytest.approx(case.window_bytes, abs=1)
    assert host["mtu_bytes"] - 52 == case.mss_bytes
    assert "--cc=" + ns3.TYPES[case.cc] in case.arguments()
    # ns-3's own stack and its default delayed-ACK timeout, which bulk.cc leaves.
    assert host["kernel"] == "ns-3.37" and host["delayed_ack_timeout_ms"] == 200.0
    linux = against_ns3.ns3_scenario(case, "linux-6.x")["hosts"]["sender"]
    assert linux["kernel"] == "linux-6.x"


def test_a_cached_ns3_answer_comes_before_the_recorded_one(monkeypatch, tmp_path):
    monkeypatch.setenv("LONGHAUL_HOME", str(tmp_path / "home"))
    case = against_ns3.ns3_cases()[0]
    recorded = tmp_path / "answers.json"
    recorded.write_text(
        json.dumps(
            {
                "ns3": "ns-3.37",
                "measured": "2026-11-25",
                "answers": {case.key(): {"answer": {"goodput_bps": 9.0e8, "wall_s": 30.0}}},
            }
        )
    )
    monkeypatch.setattr(ns3, "RECORDED", recorded)
    assert ns3.known(case) == {
        "goodput_bps": 9.0e8,
        "wall_s": 30.0,
        "from": "recorded 2026-11-25 (ns-3.37)",
    }
    cached = tmp_path / "home" / "ns3" / "results" / f"{case.key()}.json"
    cached.parent.mkdir(parents=True)
    cached.write_text(json.dumps({"goodput_bps": 9.5e8, "wall_s": 40.0}))
    assert ns3.known(case)["goodput_bps"] == 9.5e8 and ns3.known(case)["from"] == "cache"
    # Another case, or the same one after bulk.cc changed, has another key.
    assert ns3.known(against_ns3.ns3_cases()[1]) is None


def test_recording_writes_the_cached_answers_under_their_keys(monkeypatch, tmp_path):
    monkeypatch.setenv("LONGHAUL_HOME", str(tmp_path))
    cases = against_ns3.ns3_cases()[:2]
    cached = tmp_path / "ns3" / "results" / f"{cases[0].key()}.json"
    cached.parent.mkdir(parents=True)
    cached.write_text(json.dumps({"goodput_bps": 9.5e8, "wall_s": 40.0}))
    target = tmp_path / "answers.json"
    assert ns3.record(cases, target) == 1
    written = json.loads(target.read_text())
    assert list(written["answers"]) == [cases[0].key()]
    assert written["answers"][cases[0].key()]["case"]["cc"] == cases[0].cc
    assert written["ns3"].startswith("ns-")
    # Recorded again later with the other case measured elsewhere: both kept, each with
    # the day it was measured.
    cached.unlink()
    written["answers"][cases[1].key()] = {"case": {}, "answer": {"goodput_bps": 1.0}}
    written["measured"] = "2026-11-25"
    target.write_text(json.dumps(written))
    assert ns3.record(cases, target) == 0
    again = json.loads(target.read_text())
    today = datetime.date.today().isoformat()
    assert [again["answers"][c.key()]["measured"] for c in cases] == [today, "2026-11-25"]
    assert again["answers"][cases[0].key()]["answer"]["goodput_bps"] == 9.5e8
    assert ns3.known(cases[1], again)["from"] == f"recorded 2026-11-25 ({again['ns3']})"


UNEXPLAINED: set[tuple[str, int, float, float]] = set()
"""Cases that miss ns-3 for no traced reason (cc, streams, RTT ms, loss): none today, and
a new one must be traced or listed here with what is known of it."""


def test_longhaul_sim_agrees_with_the_recorded_ns3_answers_or_says_why(monkeypatch, tmp_path):
    """The regression test against ns-3: its answers were recorded on the project's
    machine, so only longhaul-sim runs here (about three minutes of two cores: twenty
    seeds of each lossy case, on both of its stacks)."""
    monkeypatch.setenv("LONGHAUL_HOME", str(tmp_path))
    monkeypatch.setattr(ns3, "binary", lambda: pytest.fail("a case has no recorded answer"))
    found = against_ns3.validate_ns3()
    assert {case["ns3_from"].split()[0] for case in found["cases"]} == {"recorded"}
    assert found["compared"] == len(against_ns3.ns3_grouped_cases()) and found["ns3_failed"] == 0
    differing = {
        (c["cc"], c["streams"], c["rtt_ms"], c["loss"])
        for c in found["cases"]
        if c["within"] is False and not c["difference"]
    }
    assert differing <= UNEXPLAINED, differing - UNEXPLAINED
    assert found["stack"] == "ns-3.37" and found["linux_stack"]["unexplained"] == 0
    assert found["below_line_rate_cases"] >= 20
    for case in found["cases"]:
        for prefix in ("", "linux_"):
            # `within` is judged on the unrounded ratio, so on the boundary (0.8996 shows
            # as 0.9) the reported figure cannot tell.
            off = abs(case[f"{prefix}ratio"] - 1)
            if abs(off - against_ns3.NS3_TOLERANCE) > 0.5 * 10**-against_ns3.RATIO_DECIMALS:
                assert case[f"{prefix}within"] == (off <= against_ns3.NS3_TOLERANCE)
        line_gbps = 1.0 * 1448 / 1502
        assert case["below_line_rate"] == (case["ns3_mbps"] / 1e3 < 0.9 * line_gbps)
