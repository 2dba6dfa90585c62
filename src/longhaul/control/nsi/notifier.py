"""Sending NSI notifications (`longhaul.control.nsi.notifications`) to the replyTo each
connection's requester gave with its reserve: oldest first, each connection's in order,
each as a SOAP request of the requester's WSDL (ogf_nsi_connection_requester_v2_0.wsdl),
retried after waits that double, and given up after `MAX_ATTEMPTS` (it stays queryable).
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import httpx
from sqlalchemy import select, update

from longhaul.control.db import NSI_CONNECTIONS, NSI_NOTIFICATIONS
from longhaul.control.nsi import soap
from longhaul.control.nsi.notifications import Notification, Notifications, notification_of

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 8
"""Sends of one notification before it is given up: waits of 1, 2, 4 ... 64 s between
them, about two minutes in all."""
LEASE_S = 30.0
"""How long a notification being sent is kept from other senders (server processes)."""


@dataclass(frozen=True)
class _Due:
    id: int
    notification: Notification
    reply_to: str
    requester_nsa: str
    attempts: int


class Notifier:
    """Sends stored notifications to their connections' replyTo, from a thread of its
    own: woken when one is stored, and at least every `interval_s` (for retries)."""

    def __init__(
        self,
        notifications: Notifications,
        clock: Callable[[], datetime],
        interval_s: float = 1.0,
        timeout_s: float = 10.0,
    ) -> None:
        self.notifications = notifications
        self.clock = clock
        self.interval_s = interval_s
        self.timeout_s = timeout_s
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._stopping.clear()
        self._thread = threading.Thread(target=self._run, name="nsi-notifier", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self.notifications.on_stored.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def send_due(self, client: httpx.Client) -> int:
        """Send what is due now; how many were delivered."""
        delivered = 0
        failed: set[str] = set()
        for due in self._claim():
            cid = due.notification.connection_id
            if cid in failed:  # keep each connection's in order: after a failure, wait
                self._release(due, tried=False)
                continue
            if self._send(client, due):
                delivered += 1
                self._delivered(due)
            else:
                failed.add(cid)
                self._release(due, tried=True)
        return delivered

    def _run(self) -> None:
        with httpx.Client(timeout=self.timeout_s) as client:
            while not self._stopping.is_set():
                self.notifications.on_stored.clear()
                try:
                    self.send_due(client)
                except Exception:  # the next round may work; the server must go on
                    log.exception("sending NSI notifications failed; trying again")
                self.notifications.on_stored.wait(self.interval_s)

    def _claim(self, limit: int = 500) -> list[_Due]:
        """The notifications due now, oldest first, each leased for `LEASE_S` (so that
        another server process sends none of them meanwhile). A connection's are due in
        order: none while an older one of it waits to be tried again."""
        n, c = NSI_NOTIFICATIONS.c, NSI_CONNECTIONS.c
        undelivered = (
            select(NSI_NOTIFICATIONS, c.notify_to, c.requester_nsa)
            .join(NSI_CONNECTIONS, n.connection_id == c.connection_id)
            .where(c.notify_to.is_not(None), n.delivered_at.is_(None), n.attempts < MAX_ATTEMPTS)
            .order_by(n.id)
            .limit(limit)
        )
        with self.notifications.db.read() as session:  # most rounds find none: no write
            if session.execute(undelivered.limit(1)).first() is None:
                return []
        now = self.clock()
        with self.notifications.db.write() as session:
            rows = _due_in_order(session.execute(undelivered).all(), now)
            if rows:
                session.execute(
                    update(NSI_NOTIFICATIONS)
                    .where(n.id.in_([row.id for row in rows]))
                    .values(next_try_at=now + timedelta(seconds=LEASE_S))
                )
        return [
            _Due(row.id, notification_of(row), row.notify_to, row.requester_nsa, row.attempts)
            for row in rows
        ]

    def _send(self, client: httpx.Client, due: _Due) -> bool:
        header = soap.NsiHeader(
            correlation_id=f"urn:uuid:{uuid.uuid4()}",
            requester_nsa=due.requester_nsa,
            provider_nsa=self.notifications.nsa_id,
        )
        body = soap.notification_element(due.notification)
        message = soap.envelope(soap.header_element(header, soap.REQUESTER_PROTOCOL), body)
        action = soap.ACTIONS + due.notification.kind
        headers = {"Content-Type": "text/xml; charset=utf-8", "SOAPAction": f'"{action}"'}
        try:
            answer = client.post(due.reply_to, content=message, headers=headers)
        except httpx.HTTPError as exc:
            log.warning("NSI %s to %s not delivered: %s", due.notification.kind, due.reply_to, exc)
            return False
        if answer.status_code >= 300:
            log.warning(
                "NSI %s to %s refused: %s %s",
                due.notification.kind,
                due.reply_to,
                answer.status_code,
                answer.text[:200],
            )
            return False
        return True

    def _delivered(self, due: _Due) -> None:
        with self.notifications.db.write() as session:
            session.execute(
                update(NSI_NOTIFICATIONS)
                .where(NSI_NOTIFICATIONS.c.id == due.id)
                .values(delivered_at=self.clock(), attempts=due.attempts + 1)
            )

    def _release(self, due: _Due, tried: bool) -> None:
        """Back to due: at once if it was not tried, else after a wait that doubles."""
        attempts = due.attempts + 1 if tried else due.attempts
        wait_s = 2.0 ** (attempts - 1) if tried else 0.0
        if attempts >= MAX_ATTEMPTS:
            log.warning(
                "NSI %s %d of connection %s given up after %d attempts (still queryable)",
                due.notification.kind,
                due.notification.notification_id,
                due.notification.connection_id,
                attempts,
            )
        with self.notifications.db.write() as session:
            session.execute(
                update(NSI_NOTIFICATIONS)
                .where(NSI_NOTIFICATIONS.c.id == due.id)
                .values(attempts=attempts, next_try_at=self.clock() + timedelta(seconds=wait_s))
            )


def _due_in_order(rows: Sequence[Any], now: datetime) -> list[Any]:
    """Of the undelivered `rows` (oldest first), those due at `now`: each connection's
    up to its first that is not."""
    waiting: set[str] = set()
    due = []
    for row in rows:
        if row.connection_id in waiting:
            continue
        if row.next_try_at is not None and row.next_try_at > now:
            waiting.add(row.connection_id)
            continue
        due.append(row)
    return due
