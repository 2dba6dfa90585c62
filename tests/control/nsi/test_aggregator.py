"""The aggregator with domains that refuse: what it leaves behind, and its states."""

from dataclasses import dataclass, field, replace
from datetime import timedelta

import pytest

from longhaul.control.nsi.aggregator import (
    Aggregator,
    Change,
    PeerError,
    Peering,
    SegmentView,
    combine,
)
from longhaul.control.nsi.domains import shipped_domains
from longhaul.control.nsi.provider import Provider, ReserveRequest
from longhaul.control.nsi.states import (
    ConnectionStates,
    LifecycleState,
    ProvisionState,
    ReservationState,
)

from ..conftest import T0

R, P, L = ReservationState, ProvisionState, LifecycleState
DEMO = shipped_domains()
NET = {d.name: d.network for d in DEMO.domains}


@dataclass
class FakePeer:
    """A domain that holds what it is asked to, and refuses what `refuse` names."""

    network: str
    refuse: set[str] = field(default_factory=set)
    asked: list[tuple[str, str]] = field(default_factory=list)
    views: dict[str, SegmentView] = field(default_factory=dict)
    taken: set[str] = field(default_factory=set)
    """Source VLANs (as `?vlan=N` suffixes) another connection uses here."""

    def reserve(self, request: ReserveRequest) -> SegmentView:
        self.asked.append(("reserve", request.source_stp))
        if "reserve" in self.refuse:
            raise PeerError(self.network, "reserve", "409 no bandwidth")
        if any(request.source_stp.endswith(vlan) for vlan in self.taken):
            raise PeerError(self.network, "reserve", "409 no VLAN", vlan_field="source_stp")
        name, _, vlans = request.dest_stp.partition("?vlan=")
        chosen = f"{name}?vlan={vlans.split('-')[0]}"  # the lowest, as a provider chooses
        states = ConnectionStates(R.HELD, None, L.CREATED, False)
        view = SegmentView(self.network, f"c-{self.network}", request.source_stp, chosen, states)
        self.views[view.connection_id] = view
        return view

    def modify(self, connection_id: str, change: Change) -> SegmentView:
        return self.act("modify", connection_id)

    def act(self, what: str, connection_id: str) -> SegmentView:
        self.asked.append((what, connection_id))
        if what in self.refuse:
            raise PeerError(self.network, what, "409 no")
        return self.get(connection_id)

    def get(self, connection_id: str) -> SegmentView:
        return self.views[connection_id]


@pytest.fixture
def aggregator(service):
    """USN's aggregator (the service runs the USN topology), its neighbours faked."""
    local = Provider(service, NET["usn"], hold=timedelta(seconds=60))
    made = Aggregator(local, Peering(DEMO, ()))
    made.remote = {NET["cheetah"]: FakePeer(NET["cheetah"]), NET["esnet"]: FakePeer(NET["esnet"])}
    return made


def ask():
    return ReserveRequest(
        source_stp=f"{NET['cheetah']}:MCNC?vlan=100",
        dest_stp=f"{NET['esnet']}:NERSC?vlan=200",
        capacity_mbps=1000,
        start=T0 + timedelta(hours=1),
        end=T0 + timedelta(hours=2),
    )


def test_each_boundary_gets_the_vlan_chosen_upstream(aggregator, alice):
    made = aggregator.reserve(alice.user, ask())
    cheetah, esnet = aggregator.remote[NET["cheetah"]], aggregator.remote[NET["esnet"]]
    assert cheetah.asked == [("reserve", f"{NET['cheetah']}:MCNC?vlan=100")]
    # CHEETAH chose 3020 at Atlanta; USN (here) was asked for exactly that and chose 1779
    # of 1779-1789 at StarLight, which ESnet was asked for.
    assert made.segments[1].source_stp == f"{NET['usn']}:atlanta-edge:2/1?vlan=3020"
    assert made.segments[1].dest_stp == f"{NET['usn']}:chicago-e300:1/0?vlan=1779"
    assert esnet.asked == [("reserve", f"{NET['esnet']}:star-cr5:6/1?vlan=1779")]
    assert [s.network for s in made.segments] == [NET["cheetah"], NET["usn"], NET["esnet"]]


def test_a_refused_reserve_aborts_what_was_held(aggregator, alice):
    aggregator.remote[NET["esnet"]].refuse.add("reserve")
    with pytest.raises(PeerError, match=r"es\.net"):
        aggregator.reserve(alice.user, ask())
    assert aggregator.remote[NET["cheetah"]].asked[-1] == ("reserve-abort", f"c-{NET['cheetah']}")
    (local,) = aggregator.provider.connections(alice.user)
    assert local.reservation.state == "cancelled"
    assert aggregator.aggregates(alice.user) == []


def test_a_refused_commit_terminates_what_committed(aggregator, alice):
    made = aggregator.reserve(alice.user, ask())
    cheetah, esnet = aggregator.remote[NET["cheetah"]], aggregator.remote[NET["esnet"]]
    esnet.refuse.add("reserve-commit")
    with pytest.raises(PeerError, match=r"es\.net"):
        aggregator.act(alice.user, "reserve-commit", made.connection_id)
    assert cheetah.asked[-2:] == [
        ("reserve-commit", f"c-{NET['cheetah']}"), ("terminate", f"c-{NET['cheetah']}"),
    ]  # fmt: skip
    (local,) = aggregator.provider.connections(alice.user)
    assert local.states.lifecycle is L.TERMINATED  # committed, then terminated


def test_a_refused_commit_aborts_what_was_not_yet_committed(aggregator, alice):
    made = aggregator.reserve(alice.user, ask())
    aggregator.remote[NET["cheetah"]].refuse.add("reserve-commit")
    with pytest.raises(PeerError, match="cheetah"):
        aggregator.act(alice.user, "reserve-commit", made.connection_id)
    (local,) = aggregator.provider.connections(alice.user)
    assert local.reservation.state == "cancelled"
    assert local.states.provision is None  # aborted, never committed
    assert aggregator.remote[NET["esnet"]].asked[-1] == ("reserve-abort", f"c-{NET['esnet']}")


def test_a_refused_modify_aborts_the_changes_held_so_far(aggregator, alice):
    made = aggregator.reserve(alice.user, ask())
    aggregator.act(alice.user, "reserve-commit", made.connection_id)
    cheetah, esnet = aggregator.remote[NET["cheetah"]], aggregator.remote[NET["esnet"]]
    esnet.refuse.add("modify")
    with pytest.raises(PeerError, match="modify"):
        aggregator.modify(alice.user, made.connection_id, Change(capacity_mbps=2000))
    assert cheetah.asked[-1] == ("reserve-abort", f"c-{NET['cheetah']}")
    (local,) = aggregator.provider.connections(alice.user)
    assert local.reservation.held_change is None  # USN's (this domain's) change aborted too
    assert local.reservation.bandwidth_mbps == 1000


def test_a_committed_modify_becomes_the_aggregates(aggregator, alice):
    made = aggregator.reserve(alice.user, ask())
    aggregator.act(alice.user, "reserve-commit", made.connection_id)
    aggregator.modify(alice.user, made.connection_id, Change(capacity_mbps=2000))
    done = aggregator.act(alice.user, "reserve-commit", made.connection_id)
    assert done.capacity_mbps == 2000
    (local,) = aggregator.provider.connections(alice.user)
    assert (local.reservation.bandwidth_mbps, local.reservation.held_change) == (2000, None)


def states(r, p, lc, active=False):
    return ConnectionStates(r, p, lc, active)


@pytest.mark.parametrize(
    ("children", "expected"),
    [
        ([states(R.HELD, None, L.CREATED)] * 3, states(R.HELD, None, L.CREATED)),
        (
            [states(R.HELD, None, L.CREATED), states(R.TIMEOUT, None, L.CREATED)],
            states(R.TIMEOUT, None, L.CREATED),
        ),
        (
            [states(R.START, P.PROVISIONED, L.CREATED, True)] * 2,
            states(R.START, P.PROVISIONED, L.CREATED, True),
        ),
        (
            [
                states(R.START, P.PROVISIONED, L.CREATED, True),
                states(R.START, P.RELEASING, L.CREATED),
            ],
            states(R.START, P.RELEASING, L.CREATED),
        ),
        (
            [states(R.START, P.RELEASED, L.TERMINATED), states(R.START, P.RELEASED, L.CREATED)],
            states(R.START, P.RELEASED, L.TERMINATING),
        ),
        (
            [states(R.START, P.RELEASED, L.PASSED_END_TIME), states(R.START, P.RELEASED, L.FAILED)],
            states(R.START, P.RELEASED, L.FAILED),
        ),
    ],
)
def test_an_aggregate_reads_as_its_least_advanced_segment(children, expected):
    assert combine(children) == expected


def test_a_refusal_in_this_domain_aborts_what_the_others_hold(aggregator, alice):
    too_wide = replace(ask(), capacity_mbps=9500)  # more than USN's WAN PHY at Chicago
    with pytest.raises(PeerError, match=r"ornl\.gov:2026:usn refused reserve") as caught:
        aggregator.reserve(alice.user, too_wide)
    assert caught.value.status == 409
    assert aggregator.remote[NET["cheetah"]].asked[-1] == ("reserve-abort", f"c-{NET['cheetah']}")
    assert aggregator.remote[NET["esnet"]].asked == []
    assert aggregator.provider.connections(alice.user) == []


def test_a_vlan_taken_downstream_makes_the_upstream_choose_the_next(aggregator, alice):
    esnet = aggregator.remote[NET["esnet"]]
    esnet.taken = {"?vlan=1779", "?vlan=1780"}
    made = aggregator.reserve(alice.user, ask())
    assert [stp for what, stp in esnet.asked] == [
        f"{NET['esnet']}:star-cr5:6/1?vlan={vlan}" for vlan in (1779, 1780, 1781)
    ]
    assert made.segments[1].dest_stp.endswith("chicago-e300:1/0?vlan=1781")
    assert made.segments[2].source_stp.endswith("star-cr5:6/1?vlan=1781")
    # This domain (USN) gave back each hold it had to choose again for.
    states = [c.reservation.state for c in aggregator.provider.connections(alice.user)]
    assert states == ["cancelled", "cancelled", "held"]


def test_a_vlan_taken_in_this_domain_makes_the_upstream_peer_choose_the_next(
    aggregator, alice, bob
):
    taking = replace(
        ask(),
        source_stp=f"{NET['usn']}:atlanta-edge:2/1?vlan=3020",
        dest_stp=f"{NET['usn']}:ORNL",
    )
    aggregator.provider.reserve(bob.user, taking)
    made = aggregator.reserve(alice.user, ask())
    cheetah = aggregator.remote[NET["cheetah"]]
    assert cheetah.asked[:2] == [
        ("reserve", f"{NET['cheetah']}:MCNC?vlan=100"),
        ("reserve-abort", f"c-{NET['cheetah']}"),
    ]
    assert made.segments[1].source_stp.endswith("atlanta-edge:2/1?vlan=3021")


def test_when_every_vlan_above_is_taken_the_reserve_is_refused_and_nothing_held(aggregator, alice):
    esnet = aggregator.remote[NET["esnet"]]
    esnet.taken = {f"?vlan={vlan}" for vlan in range(1779, 1790)}  # the whole shared range
    with pytest.raises(PeerError, match="no VLAN"):
        aggregator.reserve(alice.user, ask())
    states = {c.reservation.state for c in aggregator.provider.connections(alice.user)}
    assert states == {"cancelled"}
