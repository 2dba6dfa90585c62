"""`longhaul bench hurricane`'s plan and arithmetic (the runs themselves need root and
the emulator: `longhaul bench hurricane` is the benchmark, not a test)."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import ClassVar

import pytest

from longhaul.bench import hurricane as bench
from longhaul.measure.tools import ToolError
from longhaul.testbed import watch


def test_every_circuit_sets_hurricane_against_every_peer() -> None:
    for circuit in bench.CIRCUITS:
        tools = {r.tool for r in bench.runs_for(circuit)}
        assert tools == {"hurricane", "iperf3-cubic-1", "iperf3-cubic-8", "iperf3-bbr-1",
                         "gridftp-8", "udt"}  # fmt: skip
    disk = [(c.key, r.mode) for c in bench.CIRCUITS for r in bench.runs_for(c)
            if r.mode != "memory"]  # fmt: skip
    assert sorted(disk) == [((1.0, 163.0, 0.0), "disk-fs"), ((1.0, 163.0, 0.0), "disk-tmpfs"),
                            ((9.6, 163.0, 0.0), "disk-fs"), ((9.6, 163.0, 0.0), "disk-tmpfs")]  # fmt: skip


def test_disk_files_are_random_bytes_of_each_size_removed_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bases = {mode: tmp_path / mode for mode in bench.DISK_BASES}
    for base in bases.values():
        base.mkdir()
    monkeypatch.setattr(bench, "DISK_BASES", {m: str(b) for m, b in bases.items()})
    size = 64 << 20
    with bench._disk_files({size}) as files:
        assert set(files) == set(bases)
        made = [files[mode] / f"source-{size}.bin" for mode in bases]
        assert [p.stat().st_size for p in made] == [size, size]
        assert made[0].read_bytes()[:4096] != bytes(4096)
    assert [list(b.iterdir()) for b in bases.values()] == [[], []]


def test_no_disk_files_asked_for_makes_no_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bench, "DISK_BASES", {"disk-tmpfs": str(tmp_path)})
    with bench._disk_files(set()) as files:
        assert files == {}
        assert list(tmp_path.iterdir()) == []


def test_utilization_is_over_each_tools_own_payload_ceiling() -> None:
    circuit = bench.Circuit(9.6, 163.0)
    assert bench._ceiling_bps(circuit, "hurricane") == pytest.approx(9.6e9 * 1427 / 1500)
    assert bench._ceiling_bps(circuit, "tcp") == pytest.approx(9.6e9 * 1448 / 1500)


def test_a_case_keeps_its_failed_runs_apart_from_its_figures() -> None:
    outcomes = [
        {"goodput_gbps": 8.0, "utilization": 0.9, "cpu_cores": 1.0, "sender_cpu_cores": 0.6,
         "receiver_cpu_cores": 0.4, "check_cpu_cores": 0.0, "resent_share": 0.0,
         "late_ms": 0.0, "lowest_rate_scale": 1.0, "host_steal_s": 0.0, "line_late_ms": 2.0,
         "dropped_outside_link": 0},
        {"error": "hurricane send: the transfer did not finish in time"},
        {"goodput_gbps": 9.0, "utilization": 1.0, "cpu_cores": 1.2, "sender_cpu_cores": 0.7,
         "receiver_cpu_cores": 0.5, "check_cpu_cores": 0.2, "resent_share": 0.01,
         "late_ms": 3.123456, "lowest_rate_scale": 0.81, "host_steal_s": 0.18,
         "line_late_ms": 16.1, "dropped_outside_link": 12},
    ]  # fmt: skip
    summary = bench._summarize(bench.Circuit(9.6, 163.0), bench.Run("hurricane"), outcomes)
    assert summary["goodput_gbps"] == {"median": 8.5, "min": 8.0, "max": 9.0}
    assert summary["late_ms"] == {"median": 1.5617, "min": 0.0, "max": 3.1235}
    assert summary["runs"][2]["late_ms"] == 3.1235
    assert summary["check_cpu_cores"] == {"median": 0.1, "min": 0.0, "max": 0.2}
    assert summary["lowest_rate_scale"] == {"median": 0.905, "min": 0.81, "max": 1.0}
    assert summary["host_steal_s"] == {"median": 0.09, "min": 0.0, "max": 0.18}
    assert summary["line_late_ms"] == {"median": 9.05, "min": 2.0, "max": 16.1}
    assert summary["dropped_outside_link"] == {"median": 6, "min": 0, "max": 12}
    assert summary["failed_runs"] == 1 and summary["repetitions"] == 3
    assert summary["errors"] == ["hurricane send: the transfer did not finish in time"]
    assert [run.get("utilization") for run in summary["runs"]] == [0.9, None, 1.0]
    assert summary["runs"][1] == {"error": "hurricane send: the transfer did not finish in time"}
    none = bench._summarize(bench.Circuit(1.0, 26.8), bench.Run("udt"), [{"error": "x"}])
    assert none["utilization"] is None and none["failed_runs"] == 1


def test_faults_add_virtual_time_and_emulated_transfers() -> None:
    virtual = {"transfers": 200, "corrupted": 0, "resumed": 40, "refused": 20, "whole": 180}
    emulated = {"transfers": 4, "corrupted": 0, "resumed": 3, "refused": 1, "whole": 0,
                "failed": 0}  # fmt: skip
    faults = bench._faults(virtual, emulated)
    assert (faults["transfers"], faults["corrupted"], faults["resumed"], faults["refused"]) == (
        204,
        0,
        43,
        21,
    )


def test_a_runs_conditions_come_from_the_emulators_record_of_it() -> None:
    health = {"a_to_b": {"late_held_ns": 16_129_433, "stalls": 2}, "b_to_a": {"late_held_ns": 690},
              "tun_tx_dropped": 3, "arena_full_frames": 1, "host_steal_s": 0.02}  # fmt: skip
    assert bench._conditions(health) == {
        "line_late_ms": pytest.approx(16.130123),
        "dropped_outside_link": 4,
        "host_steal_s": 0.02,
    }
    quiet = {"a_to_b": None, "b_to_a": {}, "tun_tx_dropped": 0, "arena_full_frames": 0,
             "host_steal_s": 0.0}  # fmt: skip
    assert bench._conditions(quiet)["line_late_ms"] == 0.0


def test_iperf3_cpu_is_both_ends_in_cores() -> None:
    raw = {"end": {"cpu_utilization_percent": {"host_total": 55.0, "remote_total": 35.0}}}
    assert bench._iperf3_cpu(raw) == pytest.approx(0.9)
    assert bench._iperf3_cpu({}) is None


def test_only_iperf3s_figure_covers_just_the_end_of_its_run() -> None:
    circuit = bench.Circuit(9.6, 163.0)
    # 8 s measured, then half a round trip for its last data and the ends' results.
    assert bench.Run("iperf3-cubic-8").measured_part(circuit) == pytest.approx((8.0, 0.2315))
    for whole in ("hurricane", "gridftp-8", "udt"):
        assert bench.Run(whole).measured_part(circuit) is None


TCP_CEILING_GBPS = 9.6 * 1448 / 1500
"""The payload ceiling of a 9.6 Gb/s line in 1,500-byte TCP packets."""


def test_a_tcp_run_is_credited_with_no_more_than_the_line_carried() -> None:
    circuit = bench.Circuit(9.6, 163.0)
    inflated = {"goodput_gbps": 1.028 * TCP_CEILING_GBPS, "utilization": 1.028}
    held = bench._within_the_line(inflated, circuit, 0.993 * 9.6e9)
    assert held["utilization"] == pytest.approx(0.993)
    assert held["tool_utilization"] == pytest.approx(1.028)
    assert held["line_utilization"] == pytest.approx(0.993)
    assert held["goodput_gbps"] == pytest.approx(0.993 * 9.6 * 1448 / 1500)
    honest = {"goodput_gbps": 0.98 * TCP_CEILING_GBPS, "utilization": 0.98}
    honest = bench._within_the_line(honest, circuit, 9.5e9)
    assert honest["utilization"] == pytest.approx(0.98)
    assert bench._within_the_line(inflated, circuit, None) == {}


class _FakeWatch:
    """Records how each watch finished; finishes with the record of a quiet run."""

    finished: ClassVar[list[float | None]] = []

    @classmethod
    def start(cls, circuit: object) -> _FakeWatch:
        return cls()

    def finish(self, last_s: float | None = None) -> dict[str, object]:
        self.finished.append(last_s)
        late = 0 if last_s is not None else 5_000_000
        return {"a_to_b": {"late_held_ns": late}, "b_to_a": {}, "tun_tx_dropped": 0,
                "arena_full_frames": 0, "host_steal_s": 0.0}  # fmt: skip


def test_an_iperf3_runs_figures_and_conditions_cover_its_measured_part(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(bench, "Watch", _FakeWatch)
    monkeypatch.setattr(bench, "_iperf3_times", lambda circuit: (0.05, 0.2))
    delivered = iter(range(0, 10**12, 10**8))  # 1 GB a sample: 8 Gb/s at 0.1 s apart
    monkeypatch.setattr(
        watch.emulator, "request", lambda control, body: {"a_to_b": {"tx_bytes": next(delivered)}}
    )

    def measure(record: object, circuit: object, one: bench.Run, files: object) -> dict[str, float]:
        time.sleep(0.5)
        return {"goodput_gbps": 1.01 * TCP_CEILING_GBPS, "utilization": 1.01, "timed_s": 0.2}

    monkeypatch.setattr(bench, "_measure", measure)
    record = SimpleNamespace(control="/nonexistent")
    circuit = bench.Circuit(9.6, 1.0)
    _FakeWatch.finished.clear()
    tcp = bench._one(record, circuit, bench.Run("iperf3-cubic-1"), {})  # type: ignore[arg-type]
    assert _FakeWatch.finished == [pytest.approx(0.2 + 0.0005 + 0.15)]
    assert tcp["line_late_ms"] == 0.0
    assert tcp["tool_utilization"] == pytest.approx(1.01)
    assert tcp["utilization"] < 1.0, "held to what the line delivered"
    _FakeWatch.finished.clear()
    whole = bench._one(record, circuit, bench.Run("hurricane"), {})  # type: ignore[arg-type]
    assert _FakeWatch.finished == [None]
    assert whole["line_late_ms"] == 5.0 and whole["utilization"] == 1.01


def test_gridftps_figure_is_held_to_the_line_over_the_time_it_timed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(bench, "Watch", _FakeWatch)
    # The data come back from the server (B to A): 1 GB a sample there, 8 Gb/s at 0.1 s
    # apart; only acknowledgements the other way.
    delivered = iter(range(0, 10**12, 10**8))
    monkeypatch.setattr(
        watch.emulator,
        "request",
        lambda control, body: {"a_to_b": {"tx_bytes": 0}, "b_to_a": {"tx_bytes": next(delivered)}},
    )

    def measure(record: object, circuit: object, one: bench.Run, files: object) -> dict[str, float]:
        time.sleep(0.5)
        return {"goodput_gbps": 1.0001 * TCP_CEILING_GBPS, "utilization": 1.0001, "timed_s": 0.3}

    monkeypatch.setattr(bench, "_measure", measure)
    record = SimpleNamespace(control="/nonexistent")
    _FakeWatch.finished.clear()
    grid = bench._one(record, bench.Circuit(9.6, 1.0), bench.Run("gridftp-8"), {})  # type: ignore[arg-type]
    assert _FakeWatch.finished == [None], "its conditions cover its whole run"
    assert grid["timed_s"] == 0.3 and grid["tool_utilization"] == pytest.approx(1.0001)
    assert grid["utilization"] < 1.0, "held to what the line delivered"
    assert grid["line_utilization"] == pytest.approx(8 / 9.6, rel=0.2), "from B to A"


def test_a_run_that_fails_keeps_its_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench, "Watch", _FakeWatch)

    def refuse(record: object, circuit: object, one: bench.Run, files: object) -> None:
        raise ToolError("iperf3: unable to connect to server")

    monkeypatch.setattr(bench, "_measure", refuse)
    monkeypatch.setattr(
        watch.emulator, "request", lambda control, body: {"a_to_b": {"tx_bytes": 0}}
    )
    record = SimpleNamespace(control="/nonexistent")
    failed = bench._one(record, bench.Circuit(1.0, 26.8), bench.Run("iperf3-cubic-1"), {})  # type: ignore[arg-type]
    assert failed == {"error": "iperf3: unable to connect to server"}


def test_a_run_that_reports_its_own_error_gets_no_conditions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(bench, "Watch", _FakeWatch)
    monkeypatch.setattr(bench, "_measure", lambda *args: {"error": "the file did not land whole"})
    record = SimpleNamespace(control="/nonexistent")
    landed = bench._one(record, bench.Circuit(1.0, 163.0), bench.Run("hurricane", "disk-tmpfs"), {})  # type: ignore[arg-type]
    assert landed == {"error": "the file did not land whole"}


def test_a_subset_of_tools_runs_only_those() -> None:
    disk_circuit = bench.Circuit(9.6, 163.0)
    assert bench.runs_for(disk_circuit, ("iperf3-cubic-8", "udt")) == [
        bench.Run("iperf3-cubic-8"),
        bench.Run("udt"),
    ]
    assert bench.runs_for(disk_circuit, ("hurricane",)) == [
        bench.Run("hurricane"),
        bench.Run("hurricane", "disk-tmpfs"),
        bench.Run("hurricane", "disk-fs"),
    ]
    assert bench.runs_for(bench.Circuit(9.6, 650.0), ("hurricane",)) == [bench.Run("hurricane")]
    assert [r.tool for r in bench.runs_for(bench.Circuit(1.0, 26.8))] == list(bench.TOOLS)


def test_a_circuit_is_written_rate_by_rtt_by_loss() -> None:
    assert bench.parse_circuit("9.6x163") == bench.Circuit(9.6, 163.0)
    assert bench.parse_circuit("9.6X163x1e-4") == bench.Circuit(9.6, 163.0, 1e-4)
    assert bench.parse_circuit("1x26.8").key in {c.key for c in bench.CIRCUITS}
    for wrong in ("9.6", "fast", "9.6x163x1e-4x2", "9.6 163"):
        with pytest.raises(ValueError, match=r"RATExRTT\[xLOSS\]"):
            bench.parse_circuit(wrong)
    for out_of_range in ("0x163", "9.6x-1", "9.6x163x1", "infx163", "nanx163"):
        with pytest.raises(ValueError, match="positive"):
            bench.parse_circuit(out_of_range)


def test_the_estimate_counts_the_faults_only_when_they_run() -> None:
    circuits = (bench.Circuit(1.0, 26.8),)
    with_faults = bench.estimate_s(2, circuits, ("udt",), faults=True)
    assert with_faults - bench.estimate_s(2, circuits, ("udt",), faults=False) == 60
    assert bench.estimate_s(2, circuits, ("udt",)) == with_faults
    assert bench.estimate_s(3) > bench.estimate_s(1)


def test_a_part_of_the_bench_runs_what_it_names_and_no_faults(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    ran: list[tuple[float, str, str]] = []

    @contextmanager
    def fake_testbed() -> Iterator[object]:
        yield object()

    @contextmanager
    def fake_circuit(testbed: object, spec: object) -> Iterator[object]:
        yield SimpleNamespace(spec=spec)

    def one(record: object, circuit: bench.Circuit, run: bench.Run, files: object) -> dict:
        ran.append((circuit.rtt_ms, run.tool, run.mode))
        return {"error": "not run in a test"}

    def no_faults(*args: object) -> dict:
        raise AssertionError("faults ran with --fault-transfers 0")

    @contextmanager
    def no_disk_files(sizes: set[int]) -> Iterator[dict]:
        assert sizes == set(), "disk files made for a run without Hurricane"
        yield {}

    monkeypatch.setattr(bench.wan, "own_testbed", fake_testbed)
    monkeypatch.setattr(bench.wan, "circuit_for", fake_circuit)
    monkeypatch.setattr(bench, "_one", one)
    monkeypatch.setattr(bench, "_disk_files", no_disk_files)
    monkeypatch.setattr(bench, "_virtual_faults", no_faults)
    monkeypatch.setattr(bench, "_emulated_faults", no_faults)
    builds = {}
    for name in ("longhaul-wan", "hurricane"):
        builds[name] = tmp_path / name
        builds[name].write_bytes(name.encode())
    monkeypatch.setattr(bench.emulator, "binary", lambda: builds["longhaul-wan"])
    monkeypatch.setattr(bench.tool, "binary", lambda: builds["hurricane"])
    circuits = (bench.Circuit(9.6, 650.0), bench.Circuit(9.6, 163.0))
    report = bench.run(2, None, circuits, fault_transfers=0, tools=("iperf3-cubic-8", "udt"))
    assert report["faults"] is None
    # Each circuit warmed up once by Hurricane, smaller first, then the tools asked for,
    # taking turns.
    turn = [(tool, "memory") for tool in ("iperf3-cubic-8", "udt")]
    assert ran == [
        (rtt, *run) for rtt in (163.0, 650.0) for run in [("hurricane", "memory"), *turn, *turn]
    ]
    assert [(c["rtt_ms"], c["tool"], c["failed_runs"]) for c in report["cases"]] == [
        (rtt, tool, 2) for rtt in (163.0, 650.0) for tool in ("iperf3-cubic-8", "udt")
    ]
    # Which builds ran, by digest (`LONGHAUL_WAN` and `HURRICANE` may name others).
    assert report["machine"]["builds"]["hurricane"] == {
        "path": str(builds["hurricane"]),
        "sha256": hashlib.sha256(b"hurricane").hexdigest(),
    }
    assert report["machine"]["builds"]["longhaul-wan"]["path"] == str(builds["longhaul-wan"])
