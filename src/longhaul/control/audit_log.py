"""The audit log: who did what to users, tokens and reservations, when, from where, and
how it ended, append-only (rows are inserted here and never changed or deleted)."""

from __future__ import annotations

import logging
import queue
import threading
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from longhaul.control.db import AUDIT_EVENTS, AuditEvent
from longhaul.db import Database

log = logging.getLogger(__name__)

CLI = "cli"
"""Actor and source of what an administrator does at the server's shell."""
NOBODY = "-"
"""The actor of a request no user signed in for."""


@dataclass(frozen=True)
class Entry:
    """One event, as written."""

    actor: str
    action: str
    target: str
    source: str
    outcome: str = "ok"
    detail: str = ""


def record(session: Session, at: datetime, entry: Entry) -> None:
    """Add `entry` in the caller's transaction, so it lands exactly when what it records does."""
    session.execute(insert(AUDIT_EVENTS).values(_row(at, entry)))


def _row(at: datetime, entry: Entry) -> dict[str, object]:
    return {
        "at": at,
        "actor": entry.actor[:64],
        "action": entry.action[:64],
        "target": entry.target[:128],
        "source": entry.source[:64],
        "outcome": entry.outcome[:16],
        "detail": entry.detail,
    }


class Writer:
    """Writes the API's events from a thread of its own, many to a transaction.

    A transaction per request halved what one SQLite process answered saturated (320
    reservations/s against 521: each write transaction waits its turn for the one
    writer), so requests only queue their events, and the thread writes what has queued
    at least every `interval_s`. The price: events of the last interval are lost if the
    process dies (not if it stops: `stop` writes what is left). `flush` writes at once,
    so a reader in this process sees every event before it.
    """

    def __init__(self, db: Database, interval_s: float = 0.05) -> None:
        self.db = db
        self.interval_s = interval_s
        self._queue: queue.SimpleQueue[tuple[datetime, Entry]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def put(self, at: datetime, entry: Entry) -> None:
        self._queue.put((at, entry))

    def start(self) -> None:
        self._stopping.clear()
        self._thread = threading.Thread(target=self._run, name="audit-writer", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self.flush()

    def flush(self) -> None:
        with self._lock:
            rows = []
            while True:
                try:
                    rows.append(_row(*self._queue.get_nowait()))
                except queue.Empty:
                    break
            if rows:
                with self.db.write() as session:
                    session.execute(insert(AUDIT_EVENTS), rows)

    def _run(self) -> None:
        while not self._stopping.wait(self.interval_s):
            try:
                self.flush()
            except Exception:  # the log must not take the server down; the next try may work
                log.exception("writing the audit log failed; trying again")


def events(
    db: Database,
    since: datetime | None = None,
    actor: str | None = None,
    action: str | None = None,
    limit: int = 100,
) -> list[AuditEvent]:
    """The newest events first, `limit` of them, filtered as asked (by time: the API's
    events are written a little after the changes written with their own)."""
    query = select(AuditEvent).order_by(AuditEvent.at.desc(), AuditEvent.id.desc()).limit(limit)
    if since is not None:
        query = query.where(AuditEvent.at >= since)
    if actor is not None:
        query = query.where(AuditEvent.actor == actor)
    if action is not None:
        query = query.where(AuditEvent.action.startswith(action, autoescape=True))
    with db.read() as session:
        return list(session.scalars(query))
