"""The RDMA LAN models through the real longhaul-sim: a point described once, turned into
the simulator's arguments; the profiles and sweeps it prints; its refusals."""

from __future__ import annotations

import pytest

from longhaul.errors import InputError
from longhaul.sim import rdma, runner


def test_a_point_takes_every_knob():
    args = rdma.RdmaPoint("ib", 65536, mpi=True, connections=8, reuse_pct=50, rtt_ms=26.8).args()
    assert args[:3] == ["point", "--interconnect", "ib"]
    assert args[args.index("--connections") + 1] == "8"
    assert args[args.index("--reuse-pct") + 1] == "50"
    assert args[args.index("--rtt-ms") + 1] == "26.8"
    assert "--mpi" in args


def test_a_point_reports_latency_bandwidth_and_protocol():
    eager = rdma.measure_point(rdma.RdmaPoint("ib", 4096, mpi=True))
    rendezvous = rdma.measure_point(rdma.RdmaPoint("ib", 8192, mpi=True))
    assert (eager["protocol"], rendezvous["protocol"]) == ("eager", "rendezvous")
    assert eager["bandwidth_mb_s"] == pytest.approx(4096 / eager["latency_us"], rel=1e-6)
    # Both ways over full-duplex PCIe: close to twice one way for a large message.
    big = rdma.measure_point(rdma.RdmaPoint("ib", 1 << 22))
    assert big["bothway_mb_s"] > 1.9 * big["bandwidth_mb_s"]


def test_every_interconnect_has_a_profile_and_each_sweep():
    profiles = rdma.run("profile")
    assert sorted(profiles) == sorted(rdma.INTERCONNECTS)
    for what in rdma.SWEEPS:
        found = rdma.run(what)
        assert sorted(found) == sorted(rdma.INTERCONNECTS)
    # Myrinet does not leave the machine room: its what-if is empty.
    assert rdma.run("wan", "mxom") == {"mxom": []}


def test_impossible_points_are_refused_with_the_reason():
    with pytest.raises(InputError, match="cannot be carried over a loop"):
        runner.run_rdma(["point", "--interconnect", "mxom", "--rtt-ms", "26.8"])
    with pytest.raises(InputError, match="not one of iwarp, ib, mxom, mxoe"):
        runner.run_rdma(["profile", "--interconnect", "quadrics"])
    with pytest.raises(InputError, match="reuse-pct"):
        runner.run_rdma(["point", "--interconnect", "ib", "--reuse-pct", "101"])
