"""Write transactions: one at a time, committed or rolled back whole, nothing of one left
in the next (SQLite's writers keep one session and connection between them)."""

import threading

import psycopg
import pytest
from sqlalchemy import column, select, table, text

from longhaul.db import Database, engine
from longhaul.db.prepared import Prepared
from tests.db.conftest import values

ONE = Prepared(select(column("v")).select_from(table("n")))


def test_a_failed_write_leaves_nothing_for_the_next(db):
    with pytest.raises(ValueError), db.write() as session:
        session.execute(text("INSERT INTO n VALUES (1)"))
        session.info["left"] = True
        raise ValueError("undo")
    with db.write() as session:
        assert "left" not in session.info
        assert session.info["before_commit"] == []
        session.execute(text("INSERT INTO n VALUES (2)"))
    assert values(db) == [2]


def test_hooks_run_before_and_after_the_commit(db):
    seen = []
    with db.write() as session:
        session.info["before_commit"].append(
            lambda: session.execute(text("INSERT INTO n VALUES (3)"))
        )
        session.info["after_commit"].append(lambda: seen.append(values(db)))
    assert seen == [[3]]


def test_writers_from_many_threads_take_turns(db):
    def add():
        for _ in range(20):
            with db.write() as session:
                (count,) = session.execute(text("SELECT count(*) FROM n")).one()
                session.execute(text("INSERT INTO n VALUES (:v)"), {"v": count})

    threads = [threading.Thread(target=add) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # Each writer saw every write before it: no two read the same count.
    assert values(db) == list(range(80))


def test_another_database_object_sees_each_commit(db):
    other = Database(db.url)
    try:
        for v in range(3):
            with db.write() as session:
                session.execute(text("INSERT INTO n VALUES (:v)"), {"v": v})
            assert values(other) == list(range(v + 1))
    finally:
        other.dispose()


def test_a_pooled_connection_the_server_dropped_is_replaced(db, monkeypatch):
    if db.dialect != "postgresql":
        pytest.skip("a SQLite file's connection cannot be dropped")
    with db.read() as session:
        (first,) = session.execute(text("SELECT pg_backend_pid()")).one()
    other = Database(db.url)
    try:
        with other.read() as session:
            session.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": first})
    finally:
        other.dispose()
    monkeypatch.setattr(engine, "PING_AFTER_IDLE_S", 0.0)  # as if idle for long
    with db.read() as session:
        (second,) = session.execute(text("SELECT pg_backend_pid()")).one()
    assert second != first


def test_a_lone_read_leaves_its_connection_as_it_found_it(db):
    with db.write() as session:
        session.execute(text("INSERT INTO n VALUES (5)"))
    assert ONE.first_on(db.engine) == {"v": 5}
    connection = db.engine.raw_connection()
    try:
        driver = connection.driver_connection
        if db.dialect == "postgresql":
            assert driver.autocommit is False
            assert driver.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        else:
            assert not driver.in_transaction
    finally:
        connection.close()
