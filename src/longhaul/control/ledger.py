"""The bookings of every reservation that holds bandwidth, kept in memory.

Admission must see every booking. Reading them all from the database on each request
costs time in proportion to what is booked, inside the one lock all writers share. So
each process keeps them here, as an `Availability`, tagged with the generation number of
the database's `ledger` row.

Every write transaction that may change bookings takes the next generation number
(`current`), and each reservation it changes records that number (`changed_in`). A
process whose copy is older than the database (another process wrote) catches up by
reading only the reservations changed since its copy was made; one with no copy reads
them all. A copy is only built or advanced by a writer, which no other writer overlaps,
and a transaction's changes join the copy only once it has committed.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, Select, select, update
from sqlalchemy.orm import Session

from longhaul.control.db import LEDGER, Reservation
from longhaul.control.lifecycle import HOLDS_BANDWIDTH
from longhaul.control.requests import Version
from longhaul.db.prepared import Prepared
from longhaul.schedule import Availability, Booking, larger_of
from longhaul.topology import Topology

_PENDING = "ledger_pending"
_HOLDING = [s.value for s in HOLDS_BANDWIDTH]
_NEXT_GENERATION = Prepared(
    update(LEDGER)
    .where(LEDGER.c.id == 1)
    .values(generation=LEDGER.c.generation + 1)
    .returning(LEDGER.c.generation)
)
_GENERATION = Prepared(select(LEDGER.c.generation).where(LEDGER.c.id == 1))


@dataclass
class _Copy:
    generation: int
    avail: Availability
    held: dict[int, tuple[Booking, ...]]
    """What each reservation holds, by id: what to take back when it changes."""


@dataclass
class _Pending:
    """A write transaction's view: its generation and the bookings with its changes."""

    generation: int
    avail: Availability
    touched: dict[int, tuple[Reservation, tuple[Booking, ...]]] = field(default_factory=dict)
    """By the id() of each changed reservation (new ones have no id yet)."""


class BookingLedger:
    def __init__(self, topology: Topology) -> None:
        self.topology = topology
        self.idle = Availability(topology)
        self._copy: _Copy | None = None
        self._lock = threading.Lock()

    def cached(self, generation: int) -> Availability | None:
        """The copy, if it is at `generation`."""
        copy = self._copy
        return copy.avail if copy is not None and copy.generation == generation else None

    @staticmethod
    def generation(engine: Engine) -> int:
        """The database's generation, as committed (read outside any transaction)."""
        row = _GENERATION.first_on(engine)
        return 0 if row is None else int(row["generation"])

    def current(self, session: Session) -> Availability:
        """Every booking there is, as this write transaction sees it (its changes included).

        The transaction takes the next generation number now: one statement claims it and
        says how old the copy is. Undone with the transaction if it rolls back.
        """
        pending: _Pending | None = session.info.get(_PENDING)
        if pending is not None:
            return pending.avail
        generation: int = _NEXT_GENERATION.scalar(session)
        copy = self._synced(session, generation - 1)
        session.info[_PENDING] = _Pending(generation, copy.avail)
        session.info["after_commit"].append(lambda: self._install(session))
        return copy.avail

    def pending_generation(self, session: Session) -> int:
        """The generation this write transaction takes (claiming it if not yet claimed)."""
        self.current(session)
        pending: _Pending = session.info[_PENDING]
        return pending.generation

    def changed(self, session: Session, reservation: Reservation) -> None:
        """Record, within a write transaction, that `reservation` was booked, changed or ended."""
        self.current(session)
        pending: _Pending = session.info[_PENDING]
        key = id(reservation)
        if key in pending.touched:
            before = pending.touched[key][1]
        elif reservation.id is not None and self._copy is not None:
            before = self._copy.held.get(reservation.id, ())
        else:
            before = ()
        now = self._holding(reservation)
        pending.avail = pending.avail.with_bookings(now).without_bookings(before)
        pending.touched[key] = (reservation, now)
        reservation.changed_in = pending.generation

    def bookings_of(self, reservation: Reservation) -> tuple[Booking, ...]:
        """The reservation's booking on each link it crosses (once per crossing); with a
        change held, the larger of both versions'."""
        r = reservation
        return self._of_row(r.path_links, r.start, r.end, r.bandwidth_mbps, r.held_change)

    def _of_row(
        self,
        links: list[str],
        start: datetime,
        end: datetime,
        mbps: int,
        held_change: dict[str, Any] | None,
    ) -> tuple[Booking, ...]:
        now = _bookings(self.topology, links, start, end, mbps)
        if held_change is None:
            return now
        change = Version.of(held_change)
        other = _bookings(self.topology, change.path_links, start, change.end, change.mbps)
        return larger_of(now, other)

    def _holding(self, reservation: Reservation) -> tuple[Booking, ...]:
        return self.bookings_of(reservation) if reservation.state in _HOLDING else ()

    def _synced(self, session: Session, generation: int) -> _Copy:
        """The copy brought to `generation` (as the database is, no writer overlapping)."""
        copy = self._copy
        if copy is not None and copy.generation == generation:
            return copy
        if copy is None or copy.generation > generation:
            copy = self._load(session, generation)
        else:
            copy = self._catch_up(session, copy, generation)
        with self._lock:
            self._copy = copy
        return copy

    def _load(self, session: Session, generation: int) -> _Copy:
        query = self._rows().where(Reservation.state.in_(_HOLDING))
        held: dict[int, tuple[Booking, ...]] = {}
        with session.no_autoflush:
            for rid, _state, links, start, end, mbps, change in session.execute(query):
                held[rid] = self._of_row(links, start, end, mbps, change)
        avail = self.idle.with_bookings(b for bookings in held.values() for b in bookings)
        return _Copy(generation, avail, held)

    def _catch_up(self, session: Session, copy: _Copy, generation: int) -> _Copy:
        query = self._rows().where(Reservation.changed_in > copy.generation)
        added: list[Booking] = []
        released: list[Booking] = []
        held = copy.held  # only writers, one at a time, ever touch it
        with session.no_autoflush:
            for rid, state, links, start, end, mbps, change in session.execute(query):
                released += held.pop(rid, ())
                if state in _HOLDING:
                    held[rid] = self._of_row(links, start, end, mbps, change)
                    added += held[rid]
        return _Copy(generation, copy.avail.with_bookings(added).without_bookings(released), held)

    def _install(self, session: Session) -> None:
        pending: _Pending = session.info.pop(_PENDING)
        with self._lock:
            held = self._copy.held if self._copy is not None else {}
            for reservation, now in pending.touched.values():
                if now:
                    held[reservation.id] = now
                else:
                    held.pop(reservation.id, None)
            self._copy = _Copy(pending.generation, pending.avail, held)

    @staticmethod
    def _rows() -> Select[int, str, list[str], datetime, datetime, int, dict[str, Any] | None]:
        return select(
            Reservation.id,
            Reservation.state,
            Reservation.path_links,
            Reservation.start,
            Reservation.end,
            Reservation.bandwidth_mbps,
            Reservation.held_change,
        )


def _bookings(
    topology: Topology, links: list[str], start: datetime, end: datetime, mbps: int
) -> tuple[Booking, ...]:
    return tuple(Booking(link, start, end, mbps) for link in links if link in topology.links)
