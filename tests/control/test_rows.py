"""A reservation read and stored without the ORM's unit of work: stored once, at the
commit, only when changed, its version raised by one each time."""

from datetime import timedelta

import pytest
from sqlalchemy import update

from longhaul.control import rows
from longhaul.control.db import RESERVATIONS
from longhaul.control.errors import ConflictError
from longhaul.control.lifecycle import State
from longhaul.control.requests import ReservationRequest

from .conftest import T0


@pytest.fixture
def booked(service, alice):
    request = ReservationRequest(
        src="ORNL", dst="CHICAGO", bandwidth_mbps=1000, start=T0 + timedelta(hours=1),
        duration=timedelta(hours=1), description="first",
    )  # fmt: skip
    return service.create(alice.user, request)


def test_a_change_is_stored_at_the_commit_with_the_next_version(service, booked):
    with service.db.write() as session:
        reservation = rows.load(session, booked.id)
        assert rows.load(session, booked.id) is reservation  # one object per transaction
        reservation.description = "second"
    assert reservation.version == booked.version + 1
    again = rows.read(service.db.engine, booked.id)
    assert (again.description, again.version) == ("second", booked.version + 1)


def test_nothing_changed_is_not_stored(service, booked):
    with service.db.write() as session:
        reservation = rows.load(session, booked.id)
        reservation.description = reservation.description  # the same value
    assert rows.read(service.db.engine, booked.id).version == booked.version


def test_a_rolled_back_change_is_not_stored(service, booked):
    with pytest.raises(RuntimeError), service.db.write() as session:
        rows.load(session, booked.id).description = "lost"
        raise RuntimeError("undo")
    assert rows.read(service.db.engine, booked.id).description == "first"


def test_a_version_changed_underneath_is_refused(service, booked):
    with pytest.raises(ConflictError, match="changed under"), service.db.write() as session:
        reservation = rows.load(session, booked.id)
        reservation.description = "late"
        bump = update(RESERVATIONS).values(version=RESERVATIONS.c.version + 1)
        session.execute(bump.where(RESERVATIONS.c.id == booked.id))
    assert rows.read(service.db.engine, booked.id).description == "first"


def test_the_owner_comes_with_it(service, booked, alice, admin):
    mine = rows.read(service.db.engine, booked.id, alice.user)
    assert mine.owner is alice.user
    theirs = rows.read(service.db.engine, booked.id, admin.user)
    assert (theirs.owner.id, theirs.owner.name) == (alice.user.id, "alice")
    assert rows.read(service.db.engine, booked.id + 1) is None


def test_history_oldest_first(service, booked, alice):
    service.cancel(alice.user, booked.id)
    with service.db.read() as session:
        history = rows.history(session, booked.id)
    assert [(c.from_state, c.to_state) for c in history] == [
        (None, State.REQUESTED.value),
        (State.REQUESTED.value, State.SCHEDULED.value),
        (State.SCHEDULED.value, State.CANCELLED.value),
    ]
