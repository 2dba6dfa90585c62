"""NSI CS v2 notifications: what a provider tells its requester unasked, kept for each
connection, numbered from 1, and sent to the requester's replyTo.

Three of the four kinds the connection types schema defines (ogf_nsi_connection_types_
v2_0.xsd, NotificationBaseType and its extensions) can happen here; each is a view of
one of the reservation's transitions (`noticed`), stored in the transaction that made
the transition, so a notification exists exactly when its event happened:

- reserveTimeout: held → expired (a reserve not committed in time), or a held change
  dropped at its hold's timeout (a modify not committed in time);
- dataPlaneStateChange: into `active` (the circuit is up: active) or out of it (not);
- errorEvent: into `failed`, from scheduled or provisioning (activateFailed: the circuit
  could not be brought up) or from releasing (deactivateFailed: nor down).

The fourth, messageDeliveryTimeout, is an aggregator's about its children's messages:
longhaul's aggregator talks to its peers over REST and gets no SOAP messages to time out.

`longhaul.control.nsi.notifier` sends the undelivered ones to the requester's replyTo; a
requester that gave none, or missed a message, reads them with queryNotification(Sync)
or the REST API.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from longhaul.control.db import NSI_CONNECTIONS, NSI_NOTIFICATIONS, Reservation
from longhaul.control.lifecycle import State
from longhaul.control.nsi.numbered import between, next_number
from longhaul.control.work import CHANGE_EXPIRED
from longhaul.db import Database

RESERVE_TIMEOUT: Final = "reserveTimeout"
DATA_PLANE_STATE_CHANGE: Final = "dataPlaneStateChange"
ERROR_EVENT: Final = "errorEvent"
ACTIVATE_FAILED: Final = "activateFailed"
DEACTIVATE_FAILED: Final = "deactivateFailed"
"""Two of the schema's EventEnumType: the circuit could not be brought up, or down."""


@dataclass(frozen=True)
class Noticed:
    """What a transition tells the requester, before it is numbered and stored."""

    kind: str
    active: bool | None = None
    """For a dataPlaneStateChange: the circuit is up."""
    event: str | None = None
    """For an errorEvent: activateFailed or deactivateFailed."""


@dataclass(frozen=True)
class Notification:
    connection_id: str
    notification_id: int
    """1 for a connection's first, one more for each after it."""
    kind: str
    at: datetime
    detail: dict[str, Any]
    """reserveTimeout: timeout_s, originating_connection_id, originating_nsa;
    dataPlaneStateChange: active, version, version_consistent; errorEvent: event,
    originating_connection_id, originating_nsa, text."""


def noticed(before: State | None, after: State, reason: str) -> Noticed | None:
    """The notification a transition of the reservation is, if any (see the table above)."""
    if before is State.HELD and after is State.EXPIRED:
        return Noticed(RESERVE_TIMEOUT)
    if before is after and reason == CHANGE_EXPIRED.drops_change:
        return Noticed(RESERVE_TIMEOUT)
    if (before is State.ACTIVE) != (after is State.ACTIVE):
        return Noticed(DATA_PLANE_STATE_CHANGE, active=after is State.ACTIVE)
    if after is State.FAILED and before in (State.SCHEDULED, State.PROVISIONING):
        return Noticed(ERROR_EVENT, event=ACTIVATE_FAILED)
    if after is State.FAILED and before is State.RELEASING:
        return Noticed(ERROR_EVENT, event=DEACTIVATE_FAILED)
    return None


class Notifications:
    """A provider's notifications: stored as transitions happen, read back by range."""

    def __init__(self, db: Database, nsa_id: str, hold: timedelta) -> None:
        self.db = db
        self.nsa_id = nsa_id
        self.hold = hold
        self.on_stored: threading.Event = threading.Event()
        """Set after the commit of a transaction that stored one (wakes the notifier)."""

    def note(
        self,
        session: Session,
        reservation: Reservation,
        before: State | None,
        after: State,
        reason: str,
    ) -> None:
        """A transition of `reservation`, in the transaction that makes it (a watcher of
        the service's `Transitions`): stored as a notification if it is one and the
        reservation carries a connection."""
        found = noticed(before, after, reason)
        if found is None:
            return
        c = NSI_CONNECTIONS.c
        row = session.execute(
            select(c.connection_id, c.version).where(c.reservation_id == reservation.id)
        ).first()
        if row is None:
            return
        session.execute(
            insert(NSI_NOTIFICATIONS).values(
                connection_id=row.connection_id,
                notification_id=next_number(
                    session, NSI_NOTIFICATIONS.c.notification_id, row.connection_id
                ),
                kind=found.kind,
                at=reservation.updated_at,
                detail=self._detail(found, row.connection_id, row.version, reason),
                attempts=0,
                next_try_at=None,
                delivered_at=None,
            )
        )
        session.info["after_commit"].append(self.on_stored.set)

    def _detail(self, found: Noticed, connection_id: str, version: int, reason: str) -> Any:
        if found.kind == RESERVE_TIMEOUT:
            return {
                "timeout_s": int(self.hold.total_seconds()),
                "originating_connection_id": connection_id,
                "originating_nsa": self.nsa_id,
            }
        if found.kind == DATA_PLANE_STATE_CHANGE:
            return {"active": found.active, "version": version, "version_consistent": True}
        return {
            "event": found.event,
            "originating_connection_id": connection_id,
            "originating_nsa": self.nsa_id,
            "text": reason,
        }

    def of(self, connection_id: str, first: int | None, last: int | None) -> list[Notification]:
        """A connection's notifications, `first` to `last` (inclusive; None: from the
        oldest, to the newest), oldest first. Whether the asker may see the connection
        is the caller's to check."""
        rows = between(self.db, NSI_NOTIFICATIONS.c.notification_id, connection_id, first, last)
        return [notification_of(row) for row in rows]


def notification_of(row: Any) -> Notification:
    """A stored notification (a row of `nsi_notifications`)."""
    return Notification(row.connection_id, row.notification_id, row.kind, row.at, dict(row.detail))
