"""What a write transaction records when a reservation moves: its new state, a row in its
history, and the ledger told when it takes or gives back bandwidth. Admission and the
job runner's work both move reservations this one way; what watches them (an NSI
provider's notifications) is told of each in the same transaction."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from sqlalchemy.orm import Session

from longhaul.control.db import STATE_CHANGES, Reservation
from longhaul.control.drivers import Circuit
from longhaul.control.ledger import BookingLedger
from longhaul.control.lifecycle import HOLDS_BANDWIDTH, Event, State, next_state
from longhaul.db.prepared import Prepared
from longhaul.topology import Path, Topology

INSERT_STATE_CHANGE = Prepared.insert(STATE_CHANGES)

Watcher = Callable[[Session, Reservation, State | None, State, str], None]
"""Told of a recorded move: the transaction, the reservation, from, to, and why."""


class Transitions:
    def __init__(self, ledger: BookingLedger, clock: Callable[[], datetime]) -> None:
        self.ledger = ledger
        self.clock = clock
        self.watchers: dict[str, Watcher] = {}
        """By name, so that whoever watches is told once however often it subscribes."""

    def fire(
        self, session: Session, reservation: Reservation, event: Event, reason: str, actor: str
    ) -> None:
        """Move `reservation` by `event` (as the lifecycle's table allows) and record it."""
        before = State(reservation.state)
        after = next_state(before, event)
        reservation.state = after.value
        if (before in HOLDS_BANDWIDTH) != (after in HOLDS_BANDWIDTH):
            self.ledger.changed(session, reservation)
        reservation.updated_at = self.clock()
        self.record(session, reservation, before, after, reason, actor)

    def drop_change(self, session: Session, reservation: Reservation, why: str, actor: str) -> None:
        """Forget the change held for `reservation` (an abort, or its hold's timeout): it
        holds its own version only again."""
        state = State(reservation.state)
        reservation.held_change, reservation.held_until = None, None
        reservation.updated_at = self.clock()
        self.ledger.changed(session, reservation)
        self.record(session, reservation, state, state, why, actor)

    def record(
        self,
        session: Session,
        reservation: Reservation,
        before: State | None,
        after: State,
        reason: str,
        actor: str,
    ) -> None:
        # A plain INSERT: the ORM would load the history to append to it.
        INSERT_STATE_CHANGE.later(session, [self.row(reservation, before, after, reason, actor)])
        for watcher in self.watchers.values():
            watcher(session, reservation, before, after, reason)

    def row(
        self, reservation: Reservation, before: State | None, after: State, reason: str, actor: str
    ) -> dict[str, object]:
        return {
            "reservation_id": reservation.id,
            "at": self.clock(),
            "from_state": None if before is None else before.value,
            "to_state": after.value,
            "reason": reason,
            "actor": actor,
        }


def path_of(topology: Topology, reservation: Reservation) -> Path:
    """The path a reservation holds, as stored."""
    return topology.walk(reservation.path_start, reservation.path_links)


def circuit_of(topology: Topology, reservation: Reservation) -> Circuit:
    """What a driver sets up for the reservation."""
    path = path_of(topology, reservation)
    return Circuit(
        reservation_id=reservation.id,
        bandwidth_mbps=reservation.bandwidth_mbps,
        path=path,
        src_port=reservation.src_port if path.nodes[0] == reservation.src_node else None,
        dst_port=reservation.dst_port if path.nodes[-1] == reservation.dst_node else None,
    )
