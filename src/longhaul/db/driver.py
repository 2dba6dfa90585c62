"""Statements on the driver's own connection under a session's transaction, and
PostgreSQL write transactions in as few round trips as the protocol allows.

A PostgreSQL write transaction (`Database.write`) sent BEGIN, then the writers' lock,
each in a round trip of its own, before its first statement; its state changes went one
INSERT at a time; a refused request's ROLLBACK made the driver forget its prepared
statements. With the server on another core each round trip is a wait the server's one
thread spends idle: they were half of what a reservation request cost. Here:

- the transaction begins with its first statement: BEGIN and the lock go out in that
  statement's round trip (one pipeline, one Sync);
- rows written only to be kept (`Under.execute_later`: a state change, nothing read back)
  go out with the next statement, or with the COMMIT;
- a sound transaction is rolled back on libpq's connection itself (see `roll_back`).

Until its first statement the driver is in autocommit, so it sends no BEGIN of its own;
every statement then runs in the transaction BEGIN opened.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from psycopg.pq import TransactionStatus
from sqlalchemy import Connection, Dialect
from sqlalchemy.orm import Session

_ADVISORY_LOCK_KEY = 0x6C6F6E67  # "long"
_LOCK = f"SELECT pg_advisory_xact_lock({_ADVISORY_LOCK_KEY})".encode()
_DRIVER = "longhaul_driver"
"""Where a session's info keeps its transaction and the driver's connection under it."""
_UNSENT = "longhaul_unsent"
"""Where a PostgreSQL writer's connection info keeps what is not yet sent (`_Unsent`)."""


@dataclass
class _Unsent:
    begin: bool = True
    """BEGIN and the writers' lock are still to go."""
    rows: list[tuple[str, list[Any]]] = field(default_factory=list)
    """Statements, each with the parameters of each row it writes."""

    def __bool__(self) -> bool:
        return self.begin or bool(self.rows)

    def queue(self, driver: Any) -> None:
        """Put it all in `driver`'s pipeline (the caller's), in order."""
        if self.begin:
            driver.execute(b"BEGIN")
            driver.execute(_LOCK)
            self.begin = False
        for sql, rows in self.rows:
            driver.cursor().executemany(sql, rows)
        self.rows.clear()


@dataclass(frozen=True)
class Under:
    """The driver's own connection under a session's transaction (`under`)."""

    transaction: Any
    connection: Any
    """The driver's own connection."""
    dialect: Dialect
    info: dict[Any, Any]
    """SQLAlchemy's info for that connection (where `_Unsent` is kept)."""

    def execute(self, sql: str, parameters: Any) -> Any:
        """Run `sql` in the transaction; the driver's cursor, holding its rows."""
        cursor = self.connection.cursor()
        unsent: _Unsent | None = self.info.get(_UNSENT)
        if not unsent:
            cursor.execute(sql, parameters)
            return cursor
        with self.connection.pipeline():
            unsent.queue(self.connection)
            cursor.execute(sql, parameters)
        return cursor

    def execute_later(self, sql: str, rows: list[Any]) -> None:
        """Run `sql` once for each of `rows`, whose results nobody reads: in a PostgreSQL
        write transaction, with the next statement or the COMMIT (in its round trip);
        elsewhere at once."""
        unsent: _Unsent | None = self.info.get(_UNSENT)
        if unsent is None:
            self.connection.cursor().executemany(sql, rows)
        else:
            unsent.rows.append((sql, rows))


def under(session: Session) -> Under:
    """The driver's connection under `session`'s transaction (kept in the session's info
    while that transaction lasts: looking it up through SQLAlchemy costs more than a
    SQLite statement)."""
    transaction = session.get_transaction()
    found: Under | None = session.info.get(_DRIVER)
    if found is None or found.transaction is not transaction or transaction is None:
        found = remember(session, session.connection())
    return found


def remember(session: Session, connection: Connection) -> Under:
    """Note `connection` as the one under `session`'s transaction."""
    found = Under(
        session.get_transaction(),
        connection.connection.driver_connection,
        connection.dialect,
        connection.info,
    )
    session.info[_DRIVER] = found
    return found


@contextmanager
def begun_late(session: Session) -> Iterator[None]:
    """A PostgreSQL write transaction around the body: begun with its first statement,
    holding the writers' lock; nothing is sent for a body that runs none. Commit with
    `commit`, end a failed one with `roll_back`."""
    found = under(session)
    driver = found.connection
    driver.autocommit = True
    found.info[_UNSENT] = _Unsent()
    try:
        yield
    finally:
        found.info.pop(_UNSENT, None)
        if driver.info.transaction_status == TransactionStatus.IDLE:
            driver.autocommit = False
        # else the connection is broken: the pool's reset fails and discards it


def commit(session: Session) -> None:
    """Commit `session`'s write transaction (`begun_late`), with what is left unsent."""
    session.flush()  # the ORM's changes, before the COMMIT
    found = under(session)
    unsent: _Unsent = found.info[_UNSENT]
    if unsent.rows:
        with found.connection.pipeline():
            unsent.queue(found.connection)
            found.connection.execute(b"COMMIT")
    session.commit()  # the driver's transaction is over: SQLAlchemy's bookkeeping


def roll_back(session: Session) -> None:
    """Undo `session`'s write transaction (`begun_late`).

    A sound one is rolled back on libpq's connection itself: psycopg, seeing a ROLLBACK,
    forgets every statement it has prepared (DEALLOCATE ALL, a round trip more, then each
    statement parsed and planned anew), in case the transaction made or changed a table
    they use. Write transactions change rows, not tables (the schema changes only in
    `migrate`), and a statement prepared in one that is rolled back stays prepared: the
    protocol's Parse is not transactional.
    """
    driver = under(session).connection
    if driver.info.transaction_status == TransactionStatus.INTRANS:
        # Should this fail, the transaction is still open: the driver's own rollback,
        # next, tries again.
        driver.pgconn.exec_(b"ROLLBACK")
    session.rollback()


def send_before_sqlalchemy(
    connection: Connection, cursor: Any, _sql: str, _parameters: Any, _context: Any, _many: bool
) -> None:
    """Before SQLAlchemy runs a statement (an engine event): what a PostgreSQL write
    transaction has not yet sent goes first, in one round trip."""
    unsent: _Unsent | None = connection.info.get(_UNSENT)
    if unsent:
        driver = cursor.connection
        with driver.pipeline():
            unsent.queue(driver)
