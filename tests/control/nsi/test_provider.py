"""This domain's NSI provider over the reservation service, on SQLite and PostgreSQL."""

from datetime import timedelta

import pytest

from longhaul.control.errors import ConflictError, NotFoundError, UnavailableError
from longhaul.control.jobs import JobRunner
from longhaul.control.lifecycle import State
from longhaul.control.nsi.provider import Provider, ReserveRequest, VlanUnavailableError
from longhaul.control.nsi.states import LifecycleState, ProvisionState, ReservationState
from longhaul.errors import InputError

from ..conftest import T0, settle

NET = "urn:ogf:network:ornl.gov:2026:usn"
HOUR = timedelta(hours=1)


@pytest.fixture
def provider(service):
    return Provider(service, NET, hold=timedelta(seconds=60))


@pytest.fixture
def runner(service):
    runner = JobRunner(service, call_timeout_s=5)
    yield runner
    runner.stop()


def ask(mbps=1000, start=T0 + HOUR, hours=2, src="ORNL", dst="SUNNYVALE"):
    return ReserveRequest(
        source_stp=f"{NET}:{src}?vlan=1779",
        dest_stp=f"{NET}:{dst}?vlan=1779",
        capacity_mbps=mbps,
        start=start,
        end=start + hours * HOUR,
        global_reservation_id="urn:uuid:6f7b0a5e-0000-4000-8000-000000000001",
        requester_nsa="urn:ogf:network:example.net:2026:nsa:requester",
    )


def states(connection):
    s = connection.states
    return s.reservation, s.provision, s.lifecycle, s.data_plane_active


def free_mbps(service, path=("ornl-chicago-1", "chicago-seattle-1", "seattle-sunnyvale-1")):
    """What is still free during the booked slot along one of ORNL-SUNNYVALE's paths (the
    one every test here is booked on: the first of two alike)."""
    found = service.availability().max_bandwidth(
        "ornl-cdci", "sunnyvale-cdci", T0 + HOUR, T0 + 3 * HOUR, route=path
    )
    return found[0] if found else 0


def test_reserve_commit_provision_and_terminate(service, provider, runner, alice, clock):
    idle = free_mbps(service)
    held = provider.reserve(alice.user, ask())
    assert states(held) == (ReservationState.HELD, None, LifecycleState.CREATED, False)
    assert held.source_stp == f"{NET}:ORNL?vlan=1779"
    assert free_mbps(service) == idle - 1050  # seven OC-3 granules of 150 Mb/s
    committed = provider.commit(alice.user, held.connection_id)
    assert committed.states.provision is ProvisionState.RELEASED
    clock.advance(hours=1)
    settle(runner)  # its slot began, but no provision was asked: nothing is set up
    assert provider.get(alice.user, held.connection_id).reservation.state == State.SCHEDULED
    provider.provision(alice.user, held.connection_id)
    settle(runner)
    up = provider.get(alice.user, held.connection_id)
    assert states(up) == (
        ReservationState.START, ProvisionState.PROVISIONED, LifecycleState.CREATED, True,
    )  # fmt: skip
    terminating = provider.terminate(alice.user, held.connection_id)
    assert terminating.states.lifecycle is LifecycleState.TERMINATING
    settle(runner)
    gone = provider.get(alice.user, held.connection_id)
    assert gone.states.lifecycle is LifecycleState.TERMINATED
    assert not gone.states.data_plane_active
    assert free_mbps(service) == idle
    with pytest.raises(ConflictError, match="terminated already"):
        provider.terminate(alice.user, held.connection_id)


def test_a_hold_times_out_and_then_cannot_be_committed(service, provider, runner, alice, clock):
    idle = free_mbps(service)
    held = provider.reserve(alice.user, ask())
    clock.advance(seconds=60)
    settle(runner)
    timed_out = provider.get(alice.user, held.connection_id)
    assert timed_out.states.reservation is ReservationState.TIMEOUT
    assert free_mbps(service) == idle
    with pytest.raises(ConflictError, match="timed out"):
        provider.commit(alice.user, held.connection_id)
    after = provider.get(alice.user, held.connection_id)
    assert states(after) == (ReservationState.START, None, LifecycleState.CREATED, False)


def test_an_abort_gives_everything_back_and_terminate_ends_it(service, provider, alice):
    idle = free_mbps(service)
    held = provider.reserve(alice.user, ask())
    aborted = provider.abort(alice.user, held.connection_id)
    assert aborted.states.reservation is ReservationState.START
    assert aborted.states.provision is None
    assert free_mbps(service) == idle
    assert provider.terminate(alice.user, held.connection_id).states.lifecycle is (
        LifecycleState.TERMINATED
    )


def test_a_reserve_that_does_not_fit_leaves_nothing(service, provider, alice):
    idle = free_mbps(service)
    with pytest.raises(UnavailableError):
        provider.reserve(alice.user, ask(mbps=idle + 1))
    assert provider.connections(alice.user) == []
    assert free_mbps(service) == idle


def test_a_passed_end_time_reads_as_such(service, provider, runner, alice, clock):
    held = provider.reserve(alice.user, ask())
    provider.commit(alice.user, held.connection_id)
    clock.advance(hours=3)
    settle(runner)
    assert provider.get(alice.user, held.connection_id).states.lifecycle is (
        LifecycleState.PASSED_END_TIME
    )
    terminated = provider.terminate(alice.user, held.connection_id)
    assert terminated.states.lifecycle is LifecycleState.TERMINATED


def test_provision_before_commit_is_refused(provider, alice):
    held = provider.reserve(alice.user, ask())
    with pytest.raises(ConflictError, match="commit"):
        provider.provision(alice.user, held.connection_id)


def test_others_do_not_see_a_connection_but_an_admin_does(provider, alice, bob, admin):
    held = provider.reserve(alice.user, ask())
    with pytest.raises(NotFoundError):
        provider.get(bob.user, held.connection_id)
    with pytest.raises(NotFoundError):
        provider.abort(bob.user, held.connection_id)
    assert provider.connections(bob.user) == []
    assert [c.connection_id for c in provider.connections(admin.user)] == [held.connection_id]


def test_an_stp_of_another_network_is_refused(provider, alice):
    bad = ask()
    other = ReserveRequest(**{**bad.__dict__, "dest_stp": "urn:ogf:network:es.net:2013:x:1"})
    with pytest.raises(InputError, match="not an STP of this network") as caught:
        provider.reserve(alice.user, other)
    assert caught.value.field == "dest_stp"


def vlan_ask(src_vlans, dst_vlans, start=T0 + HOUR, hours=2):
    return ReserveRequest(
        source_stp=f"{NET}:atlanta-edge:2/1?vlan={src_vlans}",
        dest_stp=f"{NET}:chicago-e300:1/0?vlan={dst_vlans}",
        capacity_mbps=100,
        start=start,
        end=start + hours * HOUR,
    )


def test_each_stp_gets_the_lowest_vlan_no_one_else_uses_there(provider, alice, bob):
    first = provider.reserve(alice.user, vlan_ask("3020-3022", "1779-1780"))
    assert first.source_stp.endswith("atlanta-edge:2/1?vlan=3020")
    assert first.dest_stp.endswith("chicago-e300:1/0?vlan=1779")
    second = provider.reserve(bob.user, vlan_ask("3020-3022", "1779-1780"))
    assert second.source_stp.endswith("?vlan=3021")
    assert second.dest_stp.endswith("?vlan=1780")
    # Another slot may use the same VLANs again.
    later = provider.reserve(alice.user, vlan_ask("3020", "1779", start=T0 + 4 * HOUR))
    assert later.dest_stp.endswith("?vlan=1779")
    with pytest.raises(VlanUnavailableError, match="dest_stp") as caught:
        provider.reserve(alice.user, vlan_ask("3022", "1779-1780"))
    assert caught.value.field == "dest_stp"


def test_a_vlan_comes_free_when_its_connection_holds_nothing(provider, alice):
    first = provider.reserve(alice.user, vlan_ask("3020", "1779"))
    with pytest.raises(VlanUnavailableError):
        provider.reserve(alice.user, vlan_ask("3020", "1779"))
    provider.abort(alice.user, first.connection_id)
    assert provider.reserve(alice.user, vlan_ask("3020", "1779")).source_stp.endswith("=3020")


def test_an_untagged_port_is_the_whole_port(provider, alice, bob):
    def ask(src, start=T0 + HOUR):
        return ReserveRequest(
            source_stp=f"{NET}:{src}", dest_stp=f"{NET}:chicago-e300:1/0?vlan=1779-1790",
            capacity_mbps=100, start=start, end=start + 2 * HOUR,
        )  # fmt: skip

    tagged = provider.reserve(alice.user, ask("atlanta-edge:2/1?vlan=3020"))
    # The port is in use (one VLAN of it): it cannot be had whole in that slot ...
    with pytest.raises(VlanUnavailableError, match="whole port") as caught:
        provider.reserve(bob.user, ask("atlanta-edge:2/1"))
    assert caught.value.field == "source_stp"
    # ... but in another slot it can; and then no VLAN of it can be had.
    whole = provider.reserve(bob.user, ask("atlanta-edge:2/1", start=T0 + 4 * HOUR))
    assert whole.source_stp.endswith("atlanta-edge:2/1")
    later = ask("atlanta-edge:2/1?vlan=3021", start=T0 + 5 * HOUR)
    with pytest.raises(VlanUnavailableError, match="taken whole"):
        provider.reserve(alice.user, later)
    # Once the whole-port connection holds nothing, the port is free again.
    provider.abort(bob.user, whole.connection_id)
    assert provider.reserve(alice.user, later).source_stp.endswith("?vlan=3021")
    # A node or site without a port is not a port: several may start there.
    provider.reserve(alice.user, ask("ATLANTA"))
    provider.reserve(bob.user, ask("ATLANTA"))
    provider.abort(alice.user, tagged.connection_id)


def test_modify_holds_the_new_version_until_committed(service, provider, alice):
    made = provider.reserve(alice.user, ask())
    provider.commit(alice.user, made.connection_id)
    held = provider.modify(alice.user, made.connection_id, capacity_mbps=2000)
    assert held.states.reservation is ReservationState.HELD
    assert held.states.provision is ProvisionState.RELEASED  # the committed version's
    assert held.reservation.bandwidth_mbps == 1000
    done = provider.commit(alice.user, made.connection_id)
    assert done.states.reservation is ReservationState.START
    assert done.reservation.bandwidth_mbps == 2000


def test_a_modify_that_does_not_fit_leaves_the_connection_as_it_was(provider, alice):
    made = provider.reserve(alice.user, ask())
    provider.commit(alice.user, made.connection_id)
    with pytest.raises(UnavailableError):
        provider.modify(alice.user, made.connection_id, capacity_mbps=20_000)
    kept = provider.get(alice.user, made.connection_id)
    assert kept.states.reservation is ReservationState.START
    assert (kept.reservation.bandwidth_mbps, kept.reservation.held_change) == (1000, None)


def test_terminating_with_a_change_held_drops_it(provider, alice):
    made = provider.reserve(alice.user, ask())
    provider.commit(alice.user, made.connection_id)
    provider.modify(alice.user, made.connection_id, capacity_mbps=2000)
    gone = provider.terminate(alice.user, made.connection_id)
    assert gone.states.lifecycle is LifecycleState.TERMINATED
    assert gone.reservation.held_change is None
