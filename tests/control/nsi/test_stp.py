"""STP names."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from longhaul.control.nsi.stp import Stp, parse_stp
from longhaul.errors import InputError

NET = "urn:ogf:network:ornl.gov:2026:usn"


def test_a_node_port_and_a_vlan_range():
    stp = parse_stp(f"{NET}:ornl-e300:1/0?vlan=1779-1799", "source_stp", NET)
    assert stp == Stp(NET, "ornl-e300:1/0", (1779, 1799))
    assert str(stp) == f"{NET}:ornl-e300:1/0?vlan=1779-1799"


def test_one_vlan_and_no_label():
    assert parse_stp(f"{NET}:ORNL?vlan=100", "s", NET).vlans == (100, 100)
    assert str(parse_stp(f"{NET}:ORNL?vlan=100", "s", NET)) == f"{NET}:ORNL?vlan=100"
    assert parse_stp(f"{NET}:ORNL", "s", NET).vlans is None


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("ORNL", "URN"),
        ("urn:ogf:network:es.net:2013:star:1", "not an STP of this network"),
        (f"{NET}:", "not an STP of this network"),
        (f"{NET}x:ORNL", "not an STP of this network"),
        (f"{NET}:ORNL?vlan=0", "VLANs run 1-4094"),
        (f"{NET}:ORNL?vlan=5-4", "VLANs run"),
        (f"{NET}:ORNL?vlan=4095", "VLANs run"),
        (f"{NET}:ORNL?mpls=3", "vlan=N"),
    ],
)
def test_bad_names_are_refused_naming_the_field(text, says):
    with pytest.raises(InputError, match=says) as caught:
        parse_stp(text, "dest_stp", NET)
    assert caught.value.field == "dest_stp"


@given(
    local=st.from_regex(r"[A-Za-z][A-Za-z0-9_./:-]{0,20}", fullmatch=True),
    low=st.integers(1, 4094),
    span=st.integers(0, 100),
)
def test_a_name_reads_back_as_itself(local, low, span):
    stp = Stp(NET, local, (low, min(low + span, 4094)))
    assert parse_stp(str(stp), "s", NET) == stp
