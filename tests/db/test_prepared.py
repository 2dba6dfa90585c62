"""Statements run on the driver's cursor store and read what SQLAlchemy's own execution
does, on SQLite and PostgreSQL."""

import subprocess
import sys
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import bindparam, insert, select, update

from longhaul.control.db import RESERVATIONS, Reservation, User
from longhaul.db import Database, migrate
from longhaul.db.prepared import Prepared, made

NOW = datetime(2031, 3, 4, 5, 6, 7, 890123, tzinfo=UTC)
COLUMNS = [c.name for c in RESERVATIONS.c if c.name != "id"]
INSERT = Prepared(insert(RESERVATIONS).returning(RESERVATIONS.c.id), COLUMNS)
BY_ID = Prepared(select(RESERVATIONS).where(RESERVATIONS.c.id == bindparam("rid")))
ALL = Prepared(select(RESERVATIONS.c.id).order_by(RESERVATIONS.c.id))
BUMP = Prepared(
    update(RESERVATIONS)
    .where(RESERVATIONS.c.state == "scheduled")  # a value written into the statement
    .values(version=RESERVATIONS.c.version + 1)
)


@pytest.fixture
def db(db_url):
    database = Database(db_url)
    migrate(database.engine)
    yield database
    database.dispose()


@pytest.fixture
def owner(db):
    with db.write() as session:
        user = User(name="carol", role="user", token_hash="h" * 64, created_at=NOW)
        session.add(user)
        session.flush()
        return user.id


def values(owner, **changed):
    row = {
        "owner_id": owner, "src_node": "ORNL", "src_port": None, "dst_node": "CHICAGO",
        "dst_port": "1/0", "bandwidth_mbps": 2400, "start": NOW,
        "end": NOW.astimezone(UTC) + timedelta(hours=2), "route": None,
        "path_start": "ORNL", "path_links": ["a", "b"], "state": "scheduled", "version": 1,
        "description": "naïve ✓ 'quoted'", "changed_in": 3, "cancelled_at": None,
        "held_until": None, "held_change": {"end": NOW.isoformat(), "mbps": 10},
        "provision": False, "created_at": NOW, "updated_at": NOW,
    }  # fmt: skip
    return row | changed


def test_what_it_stores_the_orm_reads_back_the_same(db, owner):
    row = values(owner)
    with db.write() as session:
        rid = INSERT.scalar(session, **row)
    with db.read() as session:
        stored = session.get(Reservation, rid)
        assert {c: getattr(stored, c) for c in COLUMNS} == row
        assert stored.start.tzinfo is not None


def test_what_the_orm_stores_it_reads_back_the_same(db, owner):
    row = values(owner, route=["x"], held_change=None, provision=True, src_port="2/0")
    with db.write() as session:
        reservation = Reservation(**row)
        session.add(reservation)
        session.flush()
        rid = reservation.id
    with db.read() as session:
        read = BY_ID.first(session, rid=rid)
    assert read == {"id": rid, **row}
    assert read == BY_ID.first_on(db.engine, rid=rid)
    assert BY_ID.first_on(db.engine, rid=rid + 1) is None


def test_later_count_and_values_written_into_the_statement(db, owner):
    with db.write() as session:
        INSERT.later(session, [values(owner), values(owner, state="active")])
        assert BUMP.count(session) == 1
    with db.read() as session:
        rows = [BY_ID.first(session, rid=r["id"]) for r in ALL.all(session)]
    assert [(r["state"], r["version"]) for r in rows] == [("scheduled", 2), ("active", 1)]


def test_a_parameter_left_out_is_named(db, owner):
    row = values(owner)
    del row["held_change"]
    with db.write() as session, pytest.raises(KeyError, match="held_change"):
        INSERT.scalar(session, **row)


def test_a_rolled_back_transaction_leaves_nothing(db, owner):
    with pytest.raises(RuntimeError), db.write() as session:
        INSERT.scalar(session, **values(owner))
        raise RuntimeError("undo")
    with db.read() as session:
        assert ALL.all(session) == []


def test_made_objects_work_in_a_process_that_made_none_before():
    # The constructor is what sets up mapped classes; `made` must do it when it comes first.
    script = (
        "from sqlalchemy.orm import make_transient_to_detached\n"
        "from longhaul.db.prepared import made\n"
        "from longhaul.control.db import User\n"
        "u = made(User, {'id': 7, 'name': 'dan', 'role': 'user', 'token_hash': 'x',"
        " 'cert_subject': None, 'cert_issuer': None, 'created_at': None, 'removed_at': None})\n"
        "make_transient_to_detached(u)\n"
        "u.role = 'admin'\n"
        "print(u.id, u.name, u.role)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["7", "dan", "admin"]


def test_made_holds_the_row_without_marking_it_changed():
    user = made(User, {"id": 1, "name": "erin", "role": "user"})
    assert (user.id, user.name, user.role) == (1, "erin", "user")
    assert not user._sa_instance_state.committed_state
