"""What the testbed builds, worked out from the topology: no machine touched."""

import pytest

from longhaul.errors import InputError
from longhaul.testbed.plan import (
    circuit_addresses,
    cross_addresses,
    device_names,
    host_namespace,
    parse_loops,
    sysctls_for,
)
from longhaul.topology import usn
from longhaul.topology.circuits import CircuitSpec, loop_spec, path_rate_bps, path_spec


@pytest.fixture(scope="module")
def topology():
    return usn()


@pytest.mark.parametrize(
    ("miles", "rtt_ms", "rate_gbps", "layer"),
    [
        # WAN-PHY cross-connects set the rate (and the framing) of every single loop
        (0.2, 0.28, 9.29, "wanphy"),
        (1400, 26.708, 9.29, "wanphy"),
        (6600, 128.0, 9.29, "wanphy"),
        (8600, 163.488, 9.29, "wanphy"),
        # ORNL-Chicago twice: each OC192 circuit carries the loop twice
        (2800, 53.136, 4.8, "oc192"),
        (34400, 653.112, 2.4, "oc192"),  # around the earth: the 8,600-mile loop four times
    ],
)
def test_usn_loops_join_the_two_ornl_hosts(topology, miles, rtt_ms, rate_gbps, layer):
    spec = loop_spec(topology, miles)
    assert (spec.src_host, spec.dst_host) == ("ornl-host1", "ornl-host2")
    assert spec.rtt_ms == pytest.approx(rtt_ms, abs=1e-3)
    assert spec.rate_bps == rate_gbps * 1e9
    assert spec.layer == layer
    assert spec.links[0] == "ornl-host1-link" and spec.links[-1] == "ornl-host2-link"
    # Within half a millisecond of what USN's ping measured.
    measured = {0.2: 0.28, 1400: 26.8, 6600: 128, 8600: 163, 2800: 53.4, 34400: 653}[miles]
    assert abs(spec.rtt_ms - measured) <= 0.5


def test_a_loop_is_found_by_its_length_or_refused_with_the_lengths_there_are(topology):
    assert loop_spec(topology, 1400.2).name == "loop 1,400 mi"
    with pytest.raises(InputError, match=r"no loop of 5000 miles; the loops are 0.2, 1400.2"):
        loop_spec(topology, 5000)
    with pytest.raises(InputError, match="--loops"):
        parse_loops("0.2,far")
    assert parse_loops(" 0.2, 1_400 ,8600,") == (0.2, 1400.0, 8600.0)


def test_a_reserved_path_is_emulated_at_the_reserved_rate(topology):
    path = topology.walk("ornl-cdci", ("ornl-chicago-1", "chicago-seattle-1"))
    spec = path_spec(topology, path, "reservation 7", bandwidth_mbps=4800)
    assert (spec.src_host, spec.dst_host) == ("ornl-cdci", "seattle-cdci")
    assert spec.rate_bps == 4_800_000_000
    assert spec.delay_ns == 6_607_000 + 25_323_000
    assert path_rate_bps(path) == 9_600_000_000  # as much as the links carry
    assert path_rate_bps(path, 20_000) == 9_600_000_000  # never more
    assert spec.layer == "oc192"  # the emulator frames it by GFP-F


def test_names_and_addresses_stay_in_their_ranges():
    assert host_namespace("ornl-host1") == "lh-ornl-host1"
    assert host_namespace("Chicago E300/1") == "lh-chicago-e300-1"
    assert device_names(12) == ("lhc12a", "lhc12b")
    assert all(len(name) <= 15 for name in device_names(16_383))
    assert circuit_addresses(1) == ("198.18.0.5", "198.18.0.6")
    assert circuit_addresses(16_383) == ("198.18.255.253", "198.18.255.254")
    assert cross_addresses(1) == ("198.19.0.5", "198.19.0.6")
    with pytest.raises(InputError):
        circuit_addresses(16_384)


def test_buffers_are_sized_for_the_largest_bandwidth_delay_product():
    small = CircuitSpec("a", "h1", "h2", 1_000_000_000, 13_400_000)
    big = CircuitSpec("b", "h1", "h2", 9_600_000_000, 81_500_000)
    wanted = sysctls_for([small, big], memory_bytes=24 * 2**30)
    bdp = 9_600_000_000 * 0.163 / 8
    assert wanted.namespace["net.ipv4.tcp_rmem"] == f"4096 131072 {int(4 * bdp)}"
    assert wanted.host[("net.core.rmem_max", 0)] == int(4 * bdp)
    assert wanted.host[("net.ipv4.tcp_mem", 2)] == 24 * 2**30 // 4096 // 2
    idle = sysctls_for([], memory_bytes=2**30)
    assert idle.namespace["net.ipv4.tcp_wmem"].endswith(str(16 * 2**20))


def test_a_circuit_that_makes_no_sense_is_refused():
    for spec, field in [
        (CircuitSpec("x", "h", "h", 1_000_000, 0), "hosts"),
        (CircuitSpec("x", "a", "b", 10, 0), "rate"),
        (CircuitSpec("x", "a", "b", 1_000_000, 10**10), "delay"),
        (CircuitSpec("x", "a", "b", 1_000_000, 0, loss=1.0), "loss"),
    ]:
        with pytest.raises(InputError) as caught:
            spec.check()
        assert caught.value.field == field
