"""Write transactions on the driver's connection: the writers' lock taken with the first
statement, rows written later seen by the next statement and kept or undone with the
transaction, and (PostgreSQL) a rolled back write keeping the driver's prepared
statements."""

import threading

import psycopg
import pytest
from sqlalchemy import column, func, insert, select, table, text
from sqlalchemy.exc import DataError

from longhaul.db import Database
from longhaul.db.prepared import Prepared
from tests.db.conftest import values

N = table("n", column("v"))
COUNT = Prepared(select(func.count()).select_from(N))
ADD = Prepared(insert(N), ["v"])
PID = Prepared(select(func.pg_backend_pid()))
PREPARED_HERE = Prepared(select(func.count()).select_from(table("pg_prepared_statements")))
ADVISORY_LOCKS = text("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'")


def postgresql_only(db):
    if db.dialect != "postgresql":
        pytest.skip("what is sent when: PostgreSQL's round trips")


def test_rows_written_later_are_seen_by_the_next_statement_and_kept(db):
    with db.write() as session:
        ADD.later(session, [{"v": 1}, {"v": 2}])
        assert COUNT.scalar(session) == 2
        ADD.later(session, [{"v": 3}])  # goes with the COMMIT
    assert values(db) == [1, 2, 3]


def test_rows_written_later_are_undone_with_the_transaction(db):
    with pytest.raises(RuntimeError), db.write() as session:
        ADD.later(session, [{"v": 1}])
        assert COUNT.scalar(session) == 1
        ADD.later(session, [{"v": 2}])
        raise RuntimeError("undo")
    assert values(db) == []
    with db.write() as session:  # and the next write starts clean
        ADD.later(session, [{"v": 4}])
    assert values(db) == [4]


def test_writers_of_two_databases_take_turns(db):
    """Two Database objects are as two server processes: only the lock on the database
    (PostgreSQL's advisory lock, sent with each transaction's first statement; SQLite's
    file lock) keeps them apart. One counts with prepared statements, the other through
    SQLAlchemy's own execution."""
    other = Database(db.url)

    def prepared():
        for _ in range(25):
            with db.write() as session:
                ADD.later(session, [{"v": COUNT.scalar(session)}])

    def through_sqlalchemy():
        for _ in range(25):
            with other.write() as session:
                (count,) = session.execute(text("SELECT count(*) FROM n")).one()
                session.execute(text("INSERT INTO n VALUES (:v)"), {"v": count})

    threads = [threading.Thread(target=f) for f in (prepared, through_sqlalchemy) * 2]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        other.dispose()
    # Each writer saw every write before it: no two read the same count.
    assert values(db) == list(range(100))


def test_the_lock_is_taken_with_the_first_statement_and_kept_to_the_end(db):
    postgresql_only(db)
    watcher = Database(db.url)

    def advisory_locks():
        with watcher.read() as session:
            return session.execute(ADVISORY_LOCKS).scalar_one()

    try:
        with db.write() as session:
            assert advisory_locks() == 0  # nothing sent yet: no transaction, no lock
            ADD.later(session, [{"v": 1}])
            assert advisory_locks() == 0
            assert COUNT.scalar(session) == 1
            assert advisory_locks() == 1
        assert advisory_locks() == 0
        with db.write() as session:
            session.execute(text("SELECT 1"))  # SQLAlchemy's execution takes it too
            assert advisory_locks() == 1
    finally:
        watcher.dispose()


def test_a_write_rolled_back_keeps_the_prepared_statements(db):
    """psycopg's own rollback would DEALLOCATE ALL (then parse every statement again)."""
    postgresql_only(db)
    with pytest.raises(RuntimeError), db.write() as session:
        for _ in range(6):  # psycopg prepares a statement on its fifth run
            COUNT.scalar(session)
        pid = PID.scalar(session)
        assert PREPARED_HERE.scalar(session) >= 1
        raise RuntimeError("refused")
    with db.write() as session:
        assert PID.scalar(session) == pid  # the same connection, from the pool
        assert PREPARED_HERE.scalar(session) >= 1


def test_a_statement_the_database_refuses_rolls_back_and_the_next_write_works(db):
    postgresql_only(db)
    with pytest.raises(psycopg.errors.InvalidTextRepresentation), db.write() as session:
        ADD.later(session, [{"v": 1}])
        ADD.later(session, [{"v": "not a number"}])  # fails with the COMMIT
    with pytest.raises(DataError), db.write() as session:  # SQLAlchemy's name for it
        ADD.later(session, [{"v": 2}])
        session.execute(text("SELECT 'x'::integer"))
    assert values(db) == []
    with db.write() as session:
        ADD.later(session, [{"v": 3}])
    assert values(db) == [3]
