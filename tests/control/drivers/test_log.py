"""The log driver: the commands it records for each switch on a circuit, and the status it
reads back from its log (also from a new instance, as after a restart)."""

from datetime import UTC, datetime, timedelta

import pytest

from longhaul.control.drivers import Circuit, CircuitStatus, LogDriver
from longhaul.schedule import Availability
from longhaul.topology import usn

T0 = datetime(2030, 1, 7, 9, tzinfo=UTC)


@pytest.fixture
def topology():
    return usn()


def circuit(topology, src, dst, mbps, reservation_id=7):
    path = Availability(topology).fixed_slot(src, dst, mbps, T0, T0 + timedelta(hours=1))
    assert path is not None
    src_port = src.partition(":")[2] or None
    dst_port = dst.partition(":")[2] or None
    return Circuit(
        reservation_id=reservation_id,
        bandwidth_mbps=mbps,
        path=path,
        src_port=src_port if path.nodes[0] == src.partition(":")[0] else None,
        dst_port=dst_port if path.nodes[-1] == dst.partition(":")[0] else None,
    )


def test_each_switch_gets_its_own_language(topology, tmp_path):
    driver = LogDriver(topology, tmp_path / "log.jsonl")
    # From the host behind ornl-e300:1/0 to a port of the Sunnyvale edge switch.
    made = circuit(topology, "ornl-e300:1/0", "sunnyvale-e300:1/0", 5000)
    driver.provision(made)
    [entry] = driver.entries()
    assert entry["op"] == "provision" and entry["circuit"] == "longhaul-7"
    assert entry["links"] == list(made.path.link_ids)
    by_node = {c["node"]: c for c in entry["commands"]}
    assert "ornl-host1" not in by_node  # hosts are not configured
    switches = [n for n in made.path.nodes if n != "ornl-host1"]
    assert list(by_node) == switches
    # SONET core switches: one STS-3c cross-connect group, 5,000 Mb/s = 34 × 150.
    for node in switches:
        if node.endswith("-cdci"):
            [line] = by_node[node]["lines"]
            assert by_node[node]["language"] == "tl1"
            assert line.startswith(f"ENT-CRS-STS3C:{node}:") and "NUMSTS=34" in line
            assert "CKTID=longhaul-7" in line
    # Ethernet edge switches: a VLAN tagging the two ports, policed to the bandwidth.
    edge = by_node["ornl-e300"]
    assert edge["language"] == "cli"
    assert " rate police 5000 peak 5000" in edge["lines"]
    assert " tagged TenGigabitEthernet 1/0" in edge["lines"]  # the host's port


def test_a_circuit_that_ends_inside_a_switch_says_so(topology, tmp_path):
    driver = LogDriver(topology, tmp_path / "log.jsonl")
    driver.provision(circuit(topology, "ORNL", "CHICAGO", 1000))
    [entry] = driver.entries()
    assert [c["node"] for c in entry["commands"]] == ["ornl-cdci", "chicago-cdci"]
    for command in entry["commands"]:
        assert command["lines"] == [] and "no client port named" in command["note"]


def test_modify_in_place_or_move_and_release(topology, tmp_path):
    driver = LogDriver(topology, tmp_path / "log.jsonl")
    before = circuit(topology, "ornl-e300:1/0", "sunnyvale-e300:1/0", 2400)
    driver.provision(before)
    wider = Circuit(before.reservation_id, 4800, before.path, before.src_port, before.dst_port)
    driver.modify(wider, before)
    driver.release(wider)
    ops = [entry["op"] for entry in driver.entries()]
    assert ops == ["provision", "modify", "release"]
    _, modify, release = driver.entries()
    core = [c for c in modify["commands"] if c["language"] == "tl1"]
    assert core and all(c["lines"][0].startswith("ED-CRS-STS3C:") for c in core)
    assert all("NUMSTS=32" in c["lines"][0] for c in core)
    assert all(
        c["lines"][0].startswith("DLT-CRS-STS3C:")
        for c in release["commands"]
        if c["language"] == "tl1"
    )
    edge = next(c for c in release["commands"] if c["node"] == "ornl-e300")
    assert edge["lines"] == ["configure", f"no interface vlan {1000 + 7}", "end"]


def test_status_is_read_back_from_the_log_after_a_restart(topology, tmp_path):
    made = circuit(topology, "ORNL", "SEATTLE", 1000)
    other = circuit(topology, "ORNL", "CHICAGO", 1000, reservation_id=8)
    driver = LogDriver(topology, tmp_path / "log.jsonl")
    assert driver.status(made) is CircuitStatus.DOWN
    driver.provision(made)
    driver.provision(other)
    driver.release(other)
    restarted = LogDriver(topology, tmp_path / "log.jsonl")
    assert restarted.status(made) is CircuitStatus.UP
    assert restarted.status(other) is CircuitStatus.DOWN
