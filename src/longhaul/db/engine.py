"""Connecting to the database, migrating it, and the two kinds of transaction.

Admission must be atomic: two requests must never together overbook a link. Every
transaction that may book runs through `Database.write()`, which serializes writers:
in this process with a lock, and across processes with an exclusive lock on a file
beside the database and `BEGIN IMMEDIATE` on SQLite, or a transaction-scoped advisory
lock on PostgreSQL. (The file lock hands over at once; SQLite's own busy wait sleeps in
steps of up to 100 ms, which several server processes would spend waiting.) Reads never
wait for writers (SQLite runs in WAL mode; PostgreSQL reads committed data).
"""

from __future__ import annotations

import fcntl
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine, event, make_url
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.orm import Session, sessionmaker

from longhaul.db import driver

_MIGRATIONS = Path(__file__).parent / "migrations"
_WRITE = "longhaul_write"
_CHECKED_IN = "longhaul_checked_in"
PING_AFTER_IDLE_S = 2.0
"""A pooled PostgreSQL connection idle this long is pinged before it is handed out."""


def make_engine(url: str) -> Engine:
    """An engine for a SQLite file (created, with its folder, on first use) or PostgreSQL."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        engine = create_engine(url, pool_size=10, max_overflow=30)
        event.listen(engine, "connect", _note_checkin)  # just opened: no ping needed
        event.listen(engine, "checkin", _note_checkin)
        event.listen(engine, "checkout", _ping_if_idle)
        event.listen(engine, "before_cursor_execute", driver.send_before_sqlalchemy)
        return engine
    if parsed.database and parsed.database != ":memory:":
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})
    event.listen(engine, "connect", _sqlite_connect)
    event.listen(engine, "begin", _sqlite_begin)
    return engine


def _note_checkin(_dbapi_connection: Any, record: Any) -> None:
    record.info[_CHECKED_IN] = time.monotonic()


def _ping_if_idle(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
    """Make sure a connection the pool hands out still reaches the server, if it has been
    idle long enough for the server to have gone away (a restart, a network timeout): the
    pool then opens a new one. SQLAlchemy's `pool_pre_ping` pings at every checkout,
    which on a busy server cost a round trip for each of a request's two or three
    checkouts: a seventh of what a saturated process did (`longhaul bench api --db
    postgresql`, py-spy)."""
    if time.monotonic() - record.info.get(_CHECKED_IN, 0.0) < PING_AFTER_IDLE_S:
        return
    try:
        cursor = dbapi_connection.cursor()
        cursor.execute("SELECT 1")
        cursor.close()
        dbapi_connection.rollback()
    except Exception as exc:  # whatever the driver raises for a connection that is gone
        raise DisconnectionError(str(exc)) from exc


def _sqlite_connect(dbapi_connection: Any, _record: Any) -> None:
    # Take transactions into our own hands, so that writers can BEGIN IMMEDIATE.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    for pragma in (
        "journal_mode=WAL",
        "synchronous=NORMAL",
        "foreign_keys=ON",
        "busy_timeout=30000",
    ):
        cursor.execute(f"PRAGMA {pragma}")
    cursor.close()


def _sqlite_begin(connection: Any) -> None:
    writing = connection.get_execution_options().get(_WRITE, False)
    # On the driver's connection: through SQLAlchemy's execution it added 12 µs, a fifth
    # of an empty read transaction (54 against 42 µs).
    connection.connection.driver_connection.execute("BEGIN IMMEDIATE" if writing else "BEGIN")


@contextmanager
def outside_transaction(engine: Engine) -> Iterator[Any]:
    """A driver connection from the pool for a lone statement, in no transaction: on
    SQLite one statement is its own; on PostgreSQL the connection is in autocommit, or
    giving it back to the pool would cost a ROLLBACK, a second round trip."""
    connection = engine.raw_connection()
    driver = connection.driver_connection
    alone = engine.dialect.name == "postgresql"
    try:
        if alone:
            driver.autocommit = True  # type: ignore[union-attr]
        yield driver
    finally:
        try:
            if alone:
                driver.autocommit = False  # type: ignore[union-attr]
        finally:
            connection.close()  # back to the pool, which rolls back what is open


def migrate(engine: Engine, revision: str = "head") -> None:
    """Bring the schema up to date (creating it on first run), or to `revision`."""
    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS))
    with engine.connect() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, revision)
        connection.commit()


class Database:
    """An engine with sessions for reading and for serialized writing."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = make_engine(url)
        self.dialect = self.engine.dialect.name
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        self._write_lock = threading.Lock()
        self._kept: Session | None = None
        self._file_lock: IO[bytes] | None = None
        database = make_url(url).database
        if self.dialect == "sqlite" and database and database != ":memory:":
            # Open for the life of this Database: the lock is taken and given back on it.
            self._file_lock = Path(f"{database}.write-lock").open("ab")  # noqa: SIM115

    @contextmanager
    def read(self) -> Iterator[Session]:
        with self._sessions() as session:
            yield session

    @contextmanager
    def write(self) -> Iterator[Session]:
        """A transaction no other writer overlaps; committed on success, rolled back on error.

        Callables appended to `session.info["before_commit"]` run once the body is done,
        before the commit (to store what was changed in memory); those appended to
        `session.info["after_commit"]` run after the commit, while no other writer can
        start yet (to update what is kept in memory).
        """
        with self._write_lock, self._writer() as session, self._across_processes():
            driver.remember(session, session.connection(execution_options={_WRITE: True}))
            session.info["before_commit"] = []
            session.info["after_commit"] = []
            with self._transaction(session):
                yield session
                for callback in session.info["before_commit"]:
                    callback()
            for callback in session.info["after_commit"]:
                callback()

    @contextmanager
    def _transaction(self, session: Session) -> Iterator[None]:
        """Committed if the body returns, rolled back if it raises; on PostgreSQL in as
        few round trips as it takes (`longhaul.db.driver`)."""
        if self.dialect != "postgresql":
            try:
                yield
                session.commit()
            except BaseException:
                session.rollback()
                raise
            return
        with driver.begun_late(session):
            try:
                yield
                driver.commit(session)
            except BaseException:
                driver.roll_back(session)
                raise

    @contextmanager
    def _writer(self) -> Iterator[Session]:
        """The session of one write transaction.

        On SQLite the writers' session and its connection are kept from one transaction
        to the next (writers take turns, so one is enough): making a session, taking a
        connection from the pool and giving both back cost 50 µs, most of an empty
        transaction. A connection to a server can be dropped, and the pool checks each
        before handing it out, so PostgreSQL's writers take a new session each time.
        """
        if self.dialect != "sqlite":
            with self._sessions() as session:
                yield session
            return
        if self._kept is None:
            self._kept = Session(self.engine.connect(), expire_on_commit=False)
        try:
            yield self._kept
        finally:
            self._kept.expunge_all()
            self._kept.info.clear()

    @contextmanager
    def _across_processes(self) -> Iterator[None]:
        if self._file_lock is None:
            yield
            return
        fcntl.flock(self._file_lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self._file_lock, fcntl.LOCK_UN)

    def dispose(self) -> None:
        with self._write_lock:
            if self._kept is not None:
                connection = self._kept.bind
                self._kept.close()
                connection.close()  # type: ignore[union-attr]
                self._kept = None
        self.engine.dispose()
        if self._file_lock is not None:
            self._file_lock.close()
            self._file_lock = None
