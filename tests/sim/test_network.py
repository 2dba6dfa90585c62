"""A topology as a simulated network: its hosts, switches and links, flows around its
loops or on the path of least delay, run by the real longhaul-sim."""

from __future__ import annotations

import pytest

from longhaul.errors import InputError
from longhaul.sim import runner
from longhaul.sim.network import NetFlow, network_scenario
from longhaul.topology import usn


def test_the_usn_topology_becomes_hosts_switches_and_links():
    topology = usn()
    scenario = network_scenario(topology, [NetFlow("ornl-host1", "ornl-host2")], duration_s=1)
    hosts = {h["id"]: h for h in scenario["hosts"]}
    assert set(hosts) == {"ornl-host1", "ornl-host2", "ornl-host3"}
    assert hosts["ornl-host3"]["host"]["nic_rate_bps"] == 1e9
    assert len(scenario["links"]) == len(topology.links)
    chicago = next(lk for lk in scenario["links"] if lk["id"] == "ornl-chicago-1")
    assert (chicago["rate_bps"], chicago["delay_ms"]) == (9.6e9, pytest.approx(6.607))
    assert "route" not in scenario["flows"][0]


def test_a_flow_around_a_loop_leaves_and_returns_by_its_hosts_links():
    topology = usn()
    flow = NetFlow("ornl-host1", "ornl-host2", "htcp", 4, "ORNL-Chicago x1")
    scenario = network_scenario(topology, [flow], duration_s=1)
    loop = topology.loops["ORNL-Chicago x1"].loop.links
    assert scenario["flows"][0]["route"] == ["ornl-host1-link", *loop, "ornl-host2-link"]
    assert (scenario["flows"][0]["cc"], scenario["flows"][0]["streams"]) == ("htcp", 4)


def test_flows_name_hosts_and_loops_that_exist():
    topology = usn()
    with pytest.raises(InputError, match="not a host"):
        network_scenario(topology, [NetFlow("ornl-e300", "ornl-host2")], duration_s=1)
    with pytest.raises(InputError, match="no loop"):
        network_scenario(topology, [NetFlow("ornl-host1", "ornl-host2", loop="x")], duration_s=1)


def test_the_simulator_runs_a_loop_at_its_measured_round_trip():
    topology = usn()
    flow = NetFlow("ornl-host1", "ornl-host2", loop="ORNL-Chicago x1")
    report = runner.run_network(network_scenario(topology, [flow], duration_s=1, omit_s=1))
    group = report["groups"][0]
    measured = topology.loops["ORNL-Chicago x1"].loop.measured_rtt_ms
    # The loop's links and the two host links: within half a millisecond of ping's RTT.
    assert group["rtt_ms"] == pytest.approx(measured, abs=0.5)
    assert group["sum_received"]["bits_per_second"] > 0
    assert report["counters"]["conserved"]


def test_a_bad_network_is_refused_naming_the_field():
    with pytest.raises(InputError, match=r"hosts\.a: a host has one link"):
        runner.run_network({"duration_s": 1, "hosts": [{"id": "a"}], "links": [], "flows": []})
    link = {"id": "ab", "a": "a", "b": "b", "rate_bps": 1e9, "delay_ms": 1}
    hosts = [{"id": "a"}, {"id": "b"}]
    with pytest.raises(InputError, match="flows: give at least one flow"):
        runner.run_network({"duration_s": 1, "hosts": hosts, "links": [link], "flows": []})
