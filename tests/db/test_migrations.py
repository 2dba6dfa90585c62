"""The migrations build exactly the models' tables, and times come back aware and in UTC."""

from datetime import UTC, datetime, timedelta, timezone

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import column, inspect, select, table

# Their tables join the metadata, as they do when the whole suite has imported them.
import longhaul.measure.schedules
import longhaul.measure.store  # noqa: F401
from longhaul.control.db import User
from longhaul.db import Base, Database, migrate


def test_migrations_match_the_models(db_url):
    db = Database(db_url)
    migrate(db.engine)
    migrate(db.engine)  # a second run changes nothing
    with db.engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        assert compare_metadata(context, Base.metadata) == []
    assert {"users", "reservations", "state_changes", "campaigns", "measurements"} <= set(
        inspect(db.engine).get_table_names()
    )
    db.dispose()


def test_certificate_subjects_stored_before_0008_become_canonical(db_url):
    db = Database(db_url)
    migrate(db.engine, "0007")
    when = datetime(2026, 1, 1, tzinfo=UTC)
    # The users table as 0007 left it (the model has grown since).
    users = table("users", *(column(c) for c in ("name", "role", "token_hash", "cert_subject",
                                                 "created_at")))  # fmt: skip
    with db.engine.begin() as connection:
        for name, subject in [("carol", "CN=carol, O=ORNL"), ("odd", "not a name"),
                              ("twin", "O=ORNL,CN=carol"), ("none", None)]:  # fmt: skip
            connection.execute(users.insert().values(name=name, role="user", token_hash=name,
                                                     cert_subject=subject, created_at=when))  # fmt: skip
    migrate(db.engine)
    with db.read() as session:
        stored = {name: subject for name, subject in session.execute(
            select(User.name, User.cert_subject))}  # fmt: skip
    # The first of two users with one name gets the canonical form, the other keeps hers.
    assert stored == {"carol": "CN=carol,O=ornl", "odd": "not a name",
                      "twin": "O=ORNL,CN=carol", "none": None}  # fmt: skip
    db.dispose()


def test_times_are_stored_in_utc_and_come_back_aware(db_url):
    db = Database(db_url)
    migrate(db.engine)
    plus_two = datetime(2030, 1, 7, 10, 0, tzinfo=timezone(timedelta(hours=2)))
    with db.write() as session:
        session.add(User(name="u", role="user", token_hash="h", created_at=plus_two))
    with db.read() as session:
        stored = session.scalar(select(User.created_at))
    assert stored == plus_two
    assert stored.tzinfo is not None and stored.utcoffset() == timedelta(0)
    assert stored == datetime(2030, 1, 7, 8, 0, tzinfo=UTC)
    db.dispose()


def test_naive_times_are_refused(db_url):
    db = Database(db_url)
    migrate(db.engine)
    with pytest.raises(Exception, match="naive datetimes are not stored"), db.write() as session:
        session.add(User(name="u", role="user", token_hash="h", created_at=datetime(2030, 1, 1)))
    db.dispose()


def test_a_sqlite_file_and_its_folder_are_made_on_first_use(tmp_path):
    db = Database(f"sqlite:///{tmp_path}/deep/er/longhaul.db")
    migrate(db.engine)
    assert (tmp_path / "deep" / "er" / "longhaul.db").exists()
    db.dispose()
