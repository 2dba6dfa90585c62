"""The reservation service on both databases: admission, queries, changes, users."""

from datetime import timedelta

import pytest
from cryptography import x509
from sqlalchemy import select

from longhaul.control.db import Reservation
from longhaul.control.errors import ConflictError, ForbiddenError, NotFoundError, UnavailableError
from longhaul.control.lifecycle import State
from longhaul.control.requests import ListFilter, ReservationChange, ReservationRequest
from longhaul.control.transitions import path_of
from longhaul.errors import InputError

from .conftest import T0

HOUR = timedelta(hours=1)


def request(src="ornl-e300:1/0", dst="SUNNYVALE", mbps=5000, start=T0 + HOUR, hours=2, **more):
    return ReservationRequest(
        src=src, dst=dst, bandwidth_mbps=mbps, start=start, duration=hours * HOUR, **more
    )


# -- admission ------------------------------------------------------------------------------


def test_a_free_request_is_scheduled_on_the_path_found(service, alice):
    made = service.create(alice.user, request())
    assert made.state == State.SCHEDULED
    assert made.version == 1
    assert (made.src_node, made.src_port, made.dst_node, made.dst_port) == (
        "ornl-e300",
        "1/0",
        "sunnyvale-cdci",
        None,
    )
    assert made.path_start == "ornl-host1"
    assert made.path_links[0] == "ornl-host1-link"
    history = service.history(alice.user, made.id)
    assert [(c.from_state, c.to_state, c.actor) for c in history] == [
        (None, "requested", "alice"),
        ("requested", "scheduled", "alice"),
    ]


def test_a_full_path_is_refused_with_the_earliest_start_and_the_highest_bandwidth(service, alice):
    service.create(alice.user, request(src="ORNL", mbps=9600))
    service.create(alice.user, request(src="ORNL", mbps=9600))
    with pytest.raises(UnavailableError) as caught:
        service.create(alice.user, request(src="ORNL", mbps=150))
    assert caught.value.earliest is not None and caught.value.earliest.start == T0 + 3 * HOUR
    assert caught.value.widest is not None and caught.value.widest.bandwidth_mbps == 0
    assert "150 Mb/s is not free from ORNL to SUNNYVALE for 2h from 2030-01-07T09:00:00Z" in str(
        caught.value
    )
    with service.db.read() as session:
        assert len(session.scalars(select(Reservation)).all()) == 2  # nothing half-written


def test_two_equal_requests_at_the_same_instant_each_take_their_share(service, alice):
    for _ in range(2):
        service.create(alice.user, request(src="ORNL", dst="CHICAGO", mbps=4800))
    for _ in range(2):
        service.create(alice.user, request(src="ORNL", dst="CHICAGO", mbps=4800))
    with pytest.raises(UnavailableError):
        service.create(alice.user, request(src="ORNL", dst="CHICAGO", mbps=150))


def test_asap_books_the_earliest_start(service, alice):
    service.create(alice.user, request(src="ORNL", mbps=9600))
    service.create(alice.user, request(src="ORNL", mbps=9600))
    made = service.create(alice.user, request(src="ORNL", mbps=9600, start=T0, asap=True))
    assert made.start == T0 + 3 * HOUR
    assert made.end == T0 + 5 * HOUR


def test_start_now_and_an_end(service, alice, clock):
    made = service.create(
        alice.user, ReservationRequest(src="ORNL", dst="CHICAGO", bandwidth_mbps=100, end=T0 + HOUR)
    )
    assert (made.start, made.end) == (clock.now, T0 + HOUR)


def test_a_loop_between_two_hosts(service, alice):
    made = service.create(
        alice.user,
        request(src="ornl-e300:1/0", dst="ornl-e300:1/1", mbps=4000, loop="ORNL-Chicago x1"),
    )
    assert made.route == list(service.topology.loop_links("ORNL-Chicago x1"))
    assert made.path_start == "ornl-host1"
    assert path_of(service.topology, made).nodes[-1] == "ornl-host2"
    assert path_of(service.topology, made).length_miles == pytest.approx(1400.2)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"src": "ornl-e300:9/9"}, "src"),
        ({"dst": "NOWHERE"}, "dst"),
        ({"mbps": 0}, "bandwidth_mbps"),
        ({"hours": 0}, "duration"),
        ({"start": T0 - HOUR}, "start"),
        ({"loop": "Moon"}, "loop"),
        ({"loop": "ORNL local", "route": ["ornl-xc-1"]}, "loop"),
    ],
)
def test_bad_requests_name_the_field(service, alice, change, field):
    with pytest.raises(InputError) as caught:
        service.create(alice.user, request(**change))
    assert caught.value.field == field


def test_end_and_duration_together_are_refused(service, alice):
    with pytest.raises(InputError) as caught:
        service.create(
            alice.user,
            ReservationRequest(
                src="ORNL", dst="CHICAGO", bandwidth_mbps=1, end=T0 + HOUR, duration=HOUR
            ),
        )
    assert caught.value.field == "end"


# -- who sees what ----------------------------------------------------------------------------


def test_users_see_their_own_and_admins_see_all(service, alice, bob, admin):
    mine = service.create(alice.user, request(mbps=100))
    theirs = service.create(bob.user, request(mbps=100))
    assert [r.id for r in service.reservations(alice.user)] == [mine.id]
    assert {r.id for r in service.reservations(admin.user)} == {mine.id, theirs.id}
    assert [r.id for r in service.reservations(admin.user, ListFilter(owner="bob"))] == [theirs.id]
    with pytest.raises(NotFoundError):
        service.get(alice.user, theirs.id)
    with pytest.raises(NotFoundError):
        service.cancel(alice.user, theirs.id)
    assert service.get(admin.user, theirs.id).owner.name == "bob"
    assert service.count(admin.user) == 2


def test_list_filters(service, alice):
    early = service.create(alice.user, request(mbps=100, start=T0 + HOUR))
    late = service.create(alice.user, request(mbps=100, start=T0 + 10 * HOUR))
    service.cancel(alice.user, late.id)
    assert [
        r.id for r in service.reservations(alice.user, ListFilter(states=[State.SCHEDULED]))
    ] == [early.id]
    assert [r.id for r in service.reservations(alice.user, ListFilter(since=T0 + 5 * HOUR))] == [
        late.id
    ]
    assert [r.id for r in service.reservations(alice.user, ListFilter(until=T0 + 5 * HOUR))] == [
        early.id
    ]
    assert [r.id for r in service.reservations(alice.user, ListFilter(limit=1, offset=1))] == [
        late.id
    ]


# -- modify -------------------------------------------------------------------------------------


def test_modify_stays_on_its_path_when_it_fits(service, alice):
    made = service.create(alice.user, request(mbps=1000))
    changed = service.modify(
        alice.user, made.id, ReservationChange(end=made.end + HOUR, bandwidth_mbps=2000)
    )
    assert (changed.bandwidth_mbps, changed.end) == (2000, made.end + HOUR)
    assert changed.path_links == made.path_links
    assert changed.version == 2
    reasons = [c.reason for c in service.history(alice.user, made.id)]
    assert (
        reasons[-1]
        == "modified: end 2030-01-07T11:00:00Z → 2030-01-07T12:00:00Z; bandwidth 1,000 → 2,000 Mb/s"
    )


def test_modify_reroutes_when_its_path_is_full_and_keeps_it_when_nothing_fits(service, alice, bob):
    made = service.create(alice.user, request(src="ORNL", dst="CHICAGO", mbps=4800))
    (mine,) = made.path_links
    other = "ornl-chicago-2" if mine == "ornl-chicago-1" else "ornl-chicago-1"
    on = {"src": "ORNL", "dst": "CHICAGO", "mbps": 4800}
    service.create(bob.user, request(**on, route=[mine]))  # alice's circuit is now full
    blocker = service.create(bob.user, request(**on, route=[other]))  # the other half full
    with pytest.raises(UnavailableError):
        service.modify(alice.user, made.id, ReservationChange(bandwidth_mbps=9600))
    kept = service.get(alice.user, made.id)
    assert (kept.bandwidth_mbps, kept.path_links, kept.version) == (4800, [mine], 1)
    # Free the other circuit; stretching alice into time her own circuit lacks moves her.
    service.cancel(bob.user, blocker.id)
    service.create(
        bob.user,
        ReservationRequest(
            src="ORNL",
            dst="CHICAGO",
            bandwidth_mbps=4950,
            start=made.end,
            duration=HOUR,
            route=[mine],
        ),
    )
    moved = service.modify(alice.user, made.id, ReservationChange(end=made.end + HOUR))
    assert moved.path_links == [other]
    assert service.history(alice.user, made.id)[-1].reason.endswith("re-routed")


def test_modify_keeps_a_route_the_user_asked_for(service, alice, bob):
    made = service.create(
        alice.user, request(src="ORNL", dst="CHICAGO", mbps=4800, route=["ornl-chicago-1"])
    )
    service.create(
        bob.user, request(src="ORNL", dst="CHICAGO", mbps=4800, route=["ornl-chicago-1"])
    )
    with pytest.raises(UnavailableError):
        service.modify(alice.user, made.id, ReservationChange(bandwidth_mbps=4950))


def test_modify_checks_the_version(service, alice):
    made = service.create(alice.user, request(mbps=100))
    service.modify(alice.user, made.id, ReservationChange(bandwidth_mbps=200, version=1))
    with pytest.raises(ConflictError, match="is at version 2, not 1"):
        service.modify(alice.user, made.id, ReservationChange(bandwidth_mbps=300, version=1))


def test_modify_refuses_an_end_before_the_start(service, alice):
    made = service.create(alice.user, request(mbps=100))
    with pytest.raises(InputError) as caught:
        service.modify(alice.user, made.id, ReservationChange(end=made.start))
    assert caught.value.field == "end"


# -- cancel, retry, clear -----------------------------------------------------------------------


def test_cancel_before_the_start_frees_the_bandwidth(service, alice):
    made = service.create(alice.user, request(src="ORNL", mbps=9600))
    service.create(alice.user, request(src="ORNL", mbps=9600))
    cancelled = service.cancel(alice.user, made.id)
    assert cancelled.state == State.CANCELLED and cancelled.cancelled_at is not None
    service.create(alice.user, request(src="ORNL", mbps=9600))  # fits again
    with pytest.raises(ConflictError, match="has cancelled already"):
        service.cancel(alice.user, made.id)


def test_only_failed_reservations_retry_and_only_admins_clear(service, alice, admin):
    made = service.create(alice.user, request(mbps=100))
    with pytest.raises(ConflictError, match="only a failed reservation can be retried"):
        service.retry(alice.user, made.id)
    with pytest.raises(ForbiddenError):
        service.clear(alice.user, made.id)


# -- users ---------------------------------------------------------------------------------------


def test_tokens_are_shown_once_and_stored_hashed(service, alice):
    assert alice.token.startswith("lh_") and len(alice.token) > 40
    assert alice.user.token_hash != alice.token
    assert service.accounts.by_token(alice.token).name == "alice"
    assert service.accounts.by_token(alice.token + "x") is None


@pytest.mark.parametrize("name", ["", "a b", "x" * 65, "semi;colon"])
def test_user_names_are_checked(service, name):
    with pytest.raises(InputError):
        service.accounts.add(name)


def test_user_names_are_unique(service, alice):
    with pytest.raises(InputError, match="exists already"):
        service.accounts.add("alice")


def test_a_certificate_subject_signs_a_user_in(service):
    user, _ = service.accounts.add("carol", cert_subject="CN=carol, O=ORNL")
    assert user.cert_subject == "CN=carol,O=ornl"
    assert service.accounts.by_cert("CN=carol,O=ORNL").id == user.id
    # A certificate's subject in the order `openssl req -subj /CN=carol/O=ORNL` gives it.
    openssl_order = x509.Name.from_rfc4514_string("O=ORNL,CN=carol")
    assert service.accounts.by_cert(openssl_order).id == user.id
    assert service.accounts.by_cert("CN=mallory") is None
    assert service.accounts.by_cert("not a name") is None
    with pytest.raises(InputError, match="cert_subject"):
        service.accounts.add("dave", cert_subject="dave")


def test_requests_racing_with_one_idempotency_key_make_one_reservation(service, alice):
    from concurrent.futures import ThreadPoolExecutor  # noqa: PLC0415

    keyed = request(idempotency_key="nightly-2030-01-07")
    with ThreadPoolExecutor(8) as pool:
        created = list(pool.map(lambda _: service.create_or_replay(alice.user, keyed), range(8)))
    assert len({c.reservation.id for c in created}) == 1
    assert sorted(c.replayed for c in created) == [False] + [True] * 7
    assert len(service.reservations(alice.user)) == 1
