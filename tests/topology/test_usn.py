"""The shipped USN topology agrees with USN's published loop lengths and their measured RTTs."""

import csv
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from longhaul.schedule import Availability
from longhaul.topology import DEFAULT_DELAY_US_PER_MILE, Layer, NodeKind, usn

REFERENCE = Path(__file__).parents[2] / "data" / "reference" / "rtt.csv"


@pytest.fixture(scope="module")
def topology():
    return usn()


def test_two_oc192_circuits_join_each_pair_of_adjacent_core_sites(topology):
    for a, b, miles in [
        ("ornl-cdci", "chicago-cdci", 700),
        ("chicago-cdci", "seattle-cdci", 2600),
        ("seattle-cdci", "sunnyvale-cdci", 1000),
    ]:
        circuits = [lk for lk in topology.links.values() if set(lk.nodes) == {a, b}]
        assert len(circuits) == 2
        assert all(lk.layer is Layer.OC192 and lk.capacity_mbps == 9600 for lk in circuits)
        assert all(lk.length_miles == miles for lk in circuits)


def test_distances_from_ornl_follow_the_backbone(topology):
    t0 = datetime(2030, 1, 1, tzinfo=UTC)
    avail = Availability(topology)
    for site, miles in [("CHICAGO", 700), ("SEATTLE", 3300), ("SUNNYVALE", 4300), ("ATLANTA", 250)]:
        path = avail.fixed_slot("ORNL", site, 100, t0, t0 + timedelta(hours=1))
        assert path is not None and path.length_miles == miles


def test_sites_and_kinds(topology):
    assert set(topology.sites) == {"ORNL", "ATLANTA", "CHICAGO", "SEATTLE", "SUNNYVALE"}
    cores = {n.site for n in topology.nodes.values() if n.kind is NodeKind.CORE}
    edges = {n.site for n in topology.nodes.values() if n.kind is NodeKind.EDGE}
    hosts = {n.site for n in topology.nodes.values() if n.kind is NodeKind.HOST}
    assert cores == {"ORNL", "CHICAGO", "SEATTLE", "SUNNYVALE"}
    assert {"ORNL", "CHICAGO", "SUNNYVALE"} <= edges
    assert hosts == {"ORNL"}


def test_every_measured_loop_is_present_and_its_rtt_within_half_a_millisecond(topology):
    with REFERENCE.open() as handle:
        rows = list(csv.DictReader(line for line in handle if not line.startswith("#")))
    assert len(rows) == 15
    for row in rows:
        loop = topology.loop_by_length(float(row["miles"]))
        assert abs(loop.length_miles - float(row["miles"])) < 0.5, row
        assert loop.loop.measured_rtt_ms == float(row["rtt_ms"])
        assert loop.rtt_ms == pytest.approx(float(row["rtt_ms"]), abs=0.5), row


def test_default_delay_is_nine_and_a_half_microseconds_per_mile(topology):
    atlanta = topology.links["ornl-atlanta"]
    assert atlanta.delay_us is None
    assert atlanta.one_way_delay_us == 250 * DEFAULT_DELAY_US_PER_MILE


def test_loops_start_and_end_on_the_ornl_edge_switch(topology):
    for view in topology.loops.values():
        assert view.path.nodes[0] == view.path.nodes[-1] == "ornl-e300"
