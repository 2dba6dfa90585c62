"""Splitting a request across peering domains."""

import pytest

from longhaul.control.nsi.domains import domains_from, shipped_domains
from longhaul.control.nsi.stp import Stp
from longhaul.errors import InputError

DEMO = shipped_domains()
NET = {d.name: d.network for d in DEMO.domains}


def test_the_demo_splits_cheetah_to_esnet_through_usn_with_shared_vlans():
    src = Stp(NET["cheetah"], "MCNC", (100, 100))
    dst = Stp(NET["esnet"], "NERSC", (200, 209))
    segments = DEMO.split(src, dst)
    assert [s.network for s in segments] == [NET["cheetah"], NET["usn"], NET["esnet"]]
    assert segments[0].src == src
    assert segments[-1].dst == dst
    # CHEETAH accepts 3000-3049 at Atlanta, USN 3020-3099: both 3020-3049, on both sides.
    assert segments[0].dst == Stp(NET["cheetah"], "sox-sn16k:2/1", (3020, 3049))
    assert segments[1].src == Stp(NET["usn"], "atlanta-edge:2/1", (3020, 3049))
    # USN 1779-1799 at StarLight, ESnet 1700-1789: 1779-1789.
    assert segments[1].dst.vlans == segments[2].src.vlans == (1779, 1789)


def test_one_domain_is_one_segment():
    src, dst = Stp(NET["usn"], "ORNL"), Stp(NET["usn"], "SUNNYVALE")
    assert [(s.src, s.dst) for s in DEMO.split(src, dst)] == [(src, dst)]


def peering_file(a_vlans, b_vlans):
    return {
        "domains": [
            {"name": "x", "network": "urn:ogf:network:x.example:2026:x", "topology": "usn"},
            {"name": "y", "network": "urn:ogf:network:y.example:2026:y", "topology": "usn"},
        ],
        "peerings": [
            {
                "a": f"urn:ogf:network:x.example:2026:x:ornl-e300:1/2?vlan={a_vlans}",
                "b": f"urn:ogf:network:y.example:2026:y:ornl-e300:1/3?vlan={b_vlans}",
            }
        ],
    }


def test_a_peering_with_no_vlan_in_common_is_no_way_through():
    domains = domains_from(peering_file("10-19", "20-29"), "test")
    src = Stp("urn:ogf:network:x.example:2026:x", "ORNL")
    dst = Stp("urn:ogf:network:y.example:2026:y", "ORNL")
    with pytest.raises(InputError, match="no chain of peerings"):
        domains.split(src, dst)
    assert len(domains_from(peering_file("10-20", "20-29"), "t").split(src, dst)) == 2


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"peerings": [{"a": "urn:ogf:network:z:1:ORNL?vlan=1", "b": "x"}]}, "none of the domains"),
        ({"peerings": [{"a": "urn:ogf:network:x.example:2026:x:ORNL", "b": "x"}]}, "VLANs"),
        ({"domains": [{"name": "x", "network": "urn:ogf:network:x:1:x"}]}, "topology"),
    ],
)
def test_a_bad_file_is_refused_saying_what_is_wrong(change, says):
    with pytest.raises(InputError, match=says):
        domains_from({**peering_file("1-2", "1-2"), **change}, "test")


def test_an_unknown_network_is_named():
    with pytest.raises(InputError, match="no domain has the network"):
        DEMO.split(Stp("urn:ogf:network:nowhere:1:n", "A"), Stp(NET["usn"], "ORNL"))
