"""A campaign with tool = "sim": the same tidy rows as an emulated one, tagged simulated,
run without root, resumable."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from longhaul.db import Database
from longhaul.measure.store import ResultsStore
from longhaul.sim.ib import loop_rtt_ms

CAMPAIGN = """
name = "sim-small"
[connections]
loops_miles = [1400, 8600]
[[tests]]
test = "tcp_throughput"
tool = "sim"
cc = ["bic", "htcp"]
streams = [1, 4]
duration_s = 2
warmup_s = 1
loss_per_packet = 1e-6
loss_per_mile = 4e-8
"""


def longhaul(*args: str, home: Path, user: int | None = None) -> subprocess.CompletedProcess[str]:
    prefix = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups"] if user else []
    return subprocess.run(
        [*prefix, sys.executable, "-m", "longhaul", *args],
        capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "LONGHAUL_HOME": str(home), "COLUMNS": "100"},
    )  # fmt: skip


@pytest.fixture
def home():
    # Outside pytest's own temporary tree, which only root may enter.
    with tempfile.TemporaryDirectory(prefix="longhaul-sim-campaign-") as folder:
        os.chmod(folder, 0o777)
        (Path(folder) / "sim.toml").write_text(CAMPAIGN)
        yield Path(folder)


def test_a_simulated_campaign_runs_without_root_and_stores_tidy_rows(home):
    # An unprivileged user: the simulator needs no namespaces.
    ran = longhaul("campaign", "run", str(home / "sim.toml"), home=home, user=65534)
    assert ran.returncode == 0, ran.stderr
    assert "8 run(s) stored" in ran.stdout
    db = Database(f"sqlite:///{home / 'longhaul.db'}")
    rows = ResultsStore(db).rows("sim-small")
    db.dispose()
    assert len(rows) == 8
    assert {(r.source.value, r.tool, r.test) for r in rows} == {
        ("simulated", "sim", "tcp_throughput")
    }
    by = {(r.cc, round(r.length_miles or 0), r.streams): r for r in rows}
    # One stream is window-bound: 3 MiB over 26.7 ms is under 1 Gb/s, less at 163 ms.
    assert 0.3 < by["bic", 1400, 1].throughput_gbps < 1.0
    assert by["bic", 8600, 1].throughput_gbps < by["bic", 1400, 1].throughput_gbps
    assert by["htcp", 1400, 4].throughput_gbps > by["htcp", 1400, 1].throughput_gbps
    raw = json.loads(Path(by["htcp", 8600, 4].raw_ref or "").read_text())
    assert raw["scenario"]["path"]["loss"]["random"] == pytest.approx(1e-6 + 4e-8 * 8600.2)
    assert by["htcp", 8600, 4].extra["loss_per_packet"] == 1e-6

    again = longhaul("campaign", "run", str(home / "sim.toml"), home=home)
    assert again.returncode == 2 and "--resume" in again.stderr
    resumed = longhaul("campaign", "run", str(home / "sim.toml"), "--resume", home=home)
    assert resumed.returncode == 0 and "0 run(s) stored" in resumed.stdout

    profile = longhaul("analyze", "profile", "sim-small", "--streams", "1..4", "--json", home=home)
    found = {p["cc"]: p for p in json.loads(profile.stdout)["profiles"]}
    assert set(found) == {"bic", "htcp"} and found["bic"]["source"] == "simulated"


def test_a_campaign_mixing_the_testbed_and_the_simulator_is_refused(home):
    mixed = CAMPAIGN + '\n[[tests]]\ntest = "rtt"\ntool = "ping"\n'
    (home / "mixed.toml").write_text(mixed)
    result = longhaul("campaign", "run", str(home / "mixed.toml"), home=home)
    assert result.returncode == 2
    assert "either on the testbed or on the simulator" in result.stderr


IB_CAMPAIGN = """
name = "ib-small"
[connections]
loops_miles = [0.2, 8600]
[[tests]]
test = "ib_throughput"
tool = "ib_rdma"
message_bytes = [65536, 8388608]
iters = 200
"""


def test_an_infiniband_campaign_stores_its_profile_by_message_size(home):
    (home / "ib.toml").write_text(IB_CAMPAIGN)
    ran = longhaul("campaign", "run", str(home / "ib.toml"), home=home)
    assert ran.returncode == 0, ran.stderr
    db = Database(f"sqlite:///{home / 'longhaul.db'}")
    rows = ResultsStore(db).rows("ib-small")
    db.dispose()
    assert {(r.test, r.tool, r.source.value, r.variant) for r in rows} == {
        ("ib_throughput", "ib_rdma", "simulated", "RC write sonet sdr cm")
    }
    by = {(round(r.length_miles or 0), r.message_bytes): r.throughput_gbps or 0 for r in rows}
    # 100 messages outstanding: 64 KB ones fill 0.2 miles but not a 163 ms round trip.
    assert by[0, 65536] > 7.0
    assert by[8600, 65536] < 0.5
    assert by[8600, 8388608] > 7.0
    assert rows[0].extra["perftest_mb_s"] > 0


def test_an_infiniband_test_takes_only_what_the_model_offers(home):
    bad = IB_CAMPAIGN.replace("iters = 200", 'operation = "atomic"')
    (home / "bad.toml").write_text(bad)
    result = longhaul("campaign", "run", str(home / "bad.toml"), home=home)
    assert result.returncode == 2 and "operation" in result.stderr


def test_an_infiniband_campaign_runs_beside_cross_traffic(home):
    campaign = IB_CAMPAIGN.replace("message_bytes = [65536, 8388608]", "message_bytes = [8388608]")
    campaign = campaign.replace("iters = 200", "iters = 50\ncross_traffic_gbps = [0, 2]")
    (home / "cross.toml").write_text(campaign)
    ran = longhaul("campaign", "run", str(home / "cross.toml"), home=home)
    assert ran.returncode == 0, ran.stderr
    db = Database(f"sqlite:///{home / 'longhaul.db'}")
    rows = ResultsStore(db).rows("ib-small")
    db.dispose()
    by = {(round(r.length_miles or 0), r.cross_traffic_gbps): r for r in rows}
    assert len(by) == 4
    # The extenders' frames are never dropped: the datagrams lose what does not fit.
    assert by[8600, 2.0].throughput_gbps == pytest.approx(by[8600, 0.0].throughput_gbps, rel=0.01)
    assert by[8600, 2.0].extra["cross_frames_dropped"] > 0


RDMA_CAMPAIGN = """
name = "rdma-small"
[connections]
loops_miles = [1400]
[[tests]]
test = "rdma_lan"
tool = "rdma_lan"
level = "mpi"
interconnect = ["iwarp", "mxom"]
message_bytes = [1, 1048576]
queue_entries = [0, 100]
"""


def test_an_rdma_lan_campaign_stores_a_row_per_point(home):
    (home / "rdma.toml").write_text(RDMA_CAMPAIGN)
    ran = longhaul("campaign", "run", str(home / "rdma.toml"), home=home)
    assert ran.returncode == 0, ran.stderr
    db = Database(f"sqlite:///{home / 'longhaul.db'}")
    rows = ResultsStore(db).rows("rdma-small")
    db.dispose()
    assert len(rows) == 8
    assert {(r.tool, r.source.value, r.connection) for r in rows} == {
        ("rdma_lan", "simulated", "machine room")
    }
    by = {(r.extra["interconnect"], r.message_bytes, r.extra["queue_entries"]): r for r in rows}
    # In one machine room the loop only names the run: microseconds, not 26.8 ms.
    assert by["mxom", 1, 0].extra["latency_us"] == pytest.approx(3.3, abs=0.05)
    # MX matches in its firmware at 0.2 µs an entry, MPICH2-iWARP in the host at 0.1.
    assert by["mxom", 1, 100].extra["latency_us"] - by["mxom", 1, 0].extra["latency_us"] == (
        pytest.approx(20.0, abs=0.01)
    )
    assert by["iwarp", 1, 100].extra["latency_us"] - by["iwarp", 1, 0].extra["latency_us"] == (
        pytest.approx(10.0, abs=0.01)
    )
    assert by["iwarp", 1048576, 0].variant == "iwarp mpi"
    assert by["iwarp", 1048576, 0].throughput_gbps == pytest.approx(
        by["iwarp", 1048576, 0].extra["bandwidth_mb_s"] * 8 / 1000
    )


def test_an_rdma_lan_campaign_over_the_loop_is_the_what_if(home):
    campaign = RDMA_CAMPAIGN.replace('level = "mpi"', 'placement = "loop"')
    campaign = campaign.replace('["iwarp", "mxom"]', '["iwarp"]').replace(
        "queue_entries = [0, 100]", ""
    )
    (home / "loop.toml").write_text(campaign)
    ran = longhaul("campaign", "run", str(home / "loop.toml"), home=home)
    assert ran.returncode == 0, ran.stderr
    db = Database(f"sqlite:///{home / 'longhaul.db'}")
    rows = ResultsStore(db).rows("rdma-small")
    db.dispose()
    assert all(r.length_miles == pytest.approx(1400, abs=1) for r in rows)
    # The loop's round trip plus the LAN's.
    short = next(r for r in rows if r.message_bytes == 1)
    assert short.rtt_ms == pytest.approx(loop_rtt_ms(1400) + 2 * 9.78e-3, abs=0.005)
