"""The reservation service: users, admission, the lifecycle, and the work it schedules.

Everything that may book bandwidth runs in one `Database.write()` transaction, which no
other writer overlaps: the bookings it reads are all the bookings there are, so two
requests can never together overbook a link. Drivers are called outside transactions
(they may be slow), except to change an active circuit, which must succeed or leave the
reservation as it was.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import Select, delete, func, insert, or_, select
from sqlalchemy.orm import Session

from longhaul.control import policy
from longhaul.control.accounts import Accounts
from longhaul.control.db import (
    IDEMPOTENCY_KEYS,
    RESERVATIONS,
    STATE_CHANGES,
    Reservation,
    StateChange,
    User,
)
from longhaul.control.drivers import Circuit, Driver, DriverError
from longhaul.control.ledger import BookingLedger
from longhaul.control.lifecycle import ENDED, HOLDS_BANDWIDTH, Event, State, next_state
from longhaul.control.policy import Policy
from longhaul.db import Database
from longhaul.errors import InputError
from longhaul.parsing import format_duration, format_instant
from longhaul.schedule import Availability, EarliestStart, WidestPath
from longhaul.schedule.instants import LATEST, YEARS, to_us
from longhaul.topology import Path, Topology

log = logging.getLogger(__name__)

CONTROL_CHARACTER = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
"""What a description may not hold: control characters other than tab and line breaks."""

SCHEDULER = "scheduler"
"""The actor recorded for what the job runner does."""
IDEMPOTENCY_WINDOW = timedelta(hours=24)
"""How long an idempotency key is remembered (the IETF draft's suggestion, as Stripe's)."""
PAST_START_TOLERANCE = timedelta(minutes=1)
"""A start this far in the past still counts as now (clocks differ a little)."""
LATE = timedelta(seconds=2)
"""A runner that is up starts circuits within milliseconds; later than this, it was not."""


def utc_now() -> datetime:
    return datetime.now(UTC)


# -- errors the API turns into responses -----------------------------------------------


class NotFoundError(LookupError):
    """No such reservation, or not one the user may see."""


class ForbiddenError(PermissionError):
    """The user may see it but not do this (admin only)."""


class ConflictError(RuntimeError):
    """The request is well formed but clashes with the reservation's state or version."""


class StaleVersionError(ConflictError):
    """The reservation is no longer at the version the request was made against: 409 for
    a `version` in the body, 412 for an `If-Match` header."""

    def __init__(self, reservation_id: int, current: int, asked: int) -> None:
        super().__init__(
            f"reservation {reservation_id} is at version {current}, not {asked}; "
            "read it again and retry"
        )
        self.current = current


class UnavailableError(RuntimeError):
    """The bandwidth is not free; `earliest` and `widest` say what would be."""

    def __init__(
        self, message: str, earliest: EarliestStart | None, widest: WidestPath | None
    ) -> None:
        super().__init__(message)
        self.earliest = earliest
        self.widest = widest


class NetworkError(RuntimeError):
    """A driver failed; nothing was changed."""


# -- what users ask for ----------------------------------------------------------------


@dataclass(frozen=True)
class ReservationRequest:
    src: str
    """A node, site or node:port."""
    dst: str
    bandwidth_mbps: int
    start: datetime | None = None
    """None means now (or, with `asap`, the earliest start from now)."""
    end: datetime | None = None
    duration: timedelta | None = None
    asap: bool = False
    """Book the earliest start at or after `start` instead of exactly `start`."""
    route: Sequence[str] | None = None
    loop: str | None = None
    description: str = ""
    idempotency_key: str | None = None
    """When given, the same request with the same key within IDEMPOTENCY_WINDOW answers
    the reservation the first one made instead of making another."""

    def fingerprint(self) -> str:
        """What identifies the request, beside its key: every field but the key."""
        fields = {
            "src": self.src,
            "dst": self.dst,
            "bandwidth_mbps": self.bandwidth_mbps,
            "start": None if self.start is None else self.start.isoformat(),
            "end": None if self.end is None else self.end.isoformat(),
            "duration_s": None if self.duration is None else self.duration.total_seconds(),
            "asap": self.asap,
            "route": None if self.route is None else list(self.route),
            "loop": self.loop,
            "description": self.description,
        }
        return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class Created:
    reservation: Reservation
    replayed: bool
    """True when an earlier request with the same idempotency key made it."""


@dataclass(frozen=True)
class ReservationChange:
    end: datetime | None = None
    bandwidth_mbps: int | None = None
    version: int | None = None
    """When given, the change applies only if the reservation is still at this version."""


@dataclass(frozen=True)
class ListFilter:
    states: Sequence[State] = ()
    owner: str | None = None
    since: datetime | None = None
    """Only reservations that end after this."""
    until: datetime | None = None
    """Only reservations that start before this."""
    limit: int = 100
    offset: int = 0


class Job:
    """What the runner must do for one reservation."""

    PROVISION = "provision"
    RELEASE = "release"
    MISSED = "missed"
    END = "end"


# -- the service -------------------------------------------------------------------------


class Service:
    def __init__(
        self,
        db: Database,
        topology: Topology,
        driver: Driver,
        clock: Callable[[], datetime] = utc_now,
        policy: Policy | None = None,
    ) -> None:
        self.db = db
        self.topology = topology
        self.driver = driver
        self.clock = clock
        self.policy = Policy() if policy is None else policy
        """Each user's limits (`longhaul serve --policy FILE`)."""
        self.ledger = BookingLedger(topology)
        self.accounts = Accounts(db, clock)
        self.on_change: Callable[[datetime | None], None] = lambda _at: None
        """Called after a change with when it may make work due (None: now); the runner listens."""

    # -- availability ----------------------------------------------------------------------

    def availability(self) -> Availability:
        """The free bandwidth given every reservation that holds some, as committed."""
        with self.db.read() as session:
            generation = self.ledger.generation(session)
        found = self.ledger.cached(generation)
        if found is not None:
            return found
        # Rebuild as a writer would: no writer overlaps, so what is read is all there is.
        with self.db.write() as session:
            return self.ledger.current(session)

    def _availability(self, session: Session, without: Reservation | None = None) -> Availability:
        avail = self.ledger.current(session)
        if without is None:
            return avail
        return avail.without_bookings(self.ledger.bookings_of(without))

    # -- reservations: create, read ------------------------------------------------------------

    def create(self, actor: User, request: ReservationRequest) -> Reservation:
        """Admit and store a reservation, or raise `UnavailableError` saying what would fit
        (see `create_or_replay`)."""
        return self.create_or_replay(actor, request).reservation

    def create_or_replay(self, actor: User, request: ReservationRequest) -> Created:
        """Admit and store a reservation, or raise `UnavailableError` saying what would fit;
        or, for a request whose idempotency key the user sent with the same request before,
        the reservation that one made (a key sent with another request is an InputError).

        All that needs no lock is done first; inside the write transaction (which every
        other writer waits for) only the query and two INSERTs remain.
        """
        now = self.clock()
        start = self._start(request, now)
        duration = self._duration(request, start)
        route = self._route(request)
        if control := CONTROL_CHARACTER.search(request.description):
            # PostgreSQL cannot store a NUL, and no control character belongs in a note.
            raise InputError(
                "description",
                f"holds the control character {control.group()!r} at {control.start()}",
            )
        src, dst = (
            self.ledger.idle.end(request.src, "src"),
            self.ledger.idle.end(request.dst, "dst"),
        )
        limits = self.policy.limits(actor.name, actor.role)
        policy.check(limits, request.bandwidth_mbps, duration, timedelta(0), 0)
        admitted = next_state(State.REQUESTED, Event.ADMIT)
        with self.db.write() as session:
            if request.idempotency_key is not None:
                earlier = self._earlier(session, actor, request, now)
                if earlier is not None:
                    return Created(earlier, replayed=True)
            avail = self._availability(session)
            if request.asap:
                found = avail.earliest_start(
                    request.src, request.dst, request.bandwidth_mbps, duration, start, route
                )
                if found is None:
                    raise UnavailableError(
                        f"no path can carry {request.bandwidth_mbps:,} Mb/s from {request.src} "
                        f"to {request.dst}, even when idle",
                        None,
                        None,
                    )
                start, path = found
            else:
                maybe = avail.fixed_slot(
                    request.src, request.dst, request.bandwidth_mbps, start, start + duration, route
                )
                if maybe is None:
                    raise self._unavailable(session, request, start, duration, route)
                path = maybe
            if limits.max_ahead is not None or limits.max_active is not None:
                active = self._active(session, actor) if limits.max_active is not None else 0
                ahead = start + duration - now
                policy.check(limits, request.bandwidth_mbps, duration, ahead, active)
            values = {
                "owner_id": actor.id,
                "src_node": src.node,
                "src_port": src.port,
                "dst_node": dst.node,
                "dst_port": dst.port,
                "bandwidth_mbps": request.bandwidth_mbps,
                "start": start,
                "end": start + duration,
                "route": None if route is None else list(route),
                "path_start": path.nodes[0],
                "path_links": list(path.link_ids),
                # Admitted as it is requested: stored once, in the state the table gives.
                "state": admitted.value,
                "version": 1,
                "description": request.description,
                "cancelled_at": None,
                "changed_in": self.ledger.pending_generation(session),
                "created_at": now,
                "updated_at": now,
            }
            # Core INSERTs: the ORM's unit of work would double the time spent holding the lock.
            with session.no_autoflush:
                stored = insert(RESERVATIONS).values(values).returning(RESERVATIONS.c.id)
                reservation = Reservation(id=session.execute(stored).scalar_one(), **values)
            reservation.owner = actor  # transient: it is only read, for the answer
            self.ledger.changed(session, reservation)
            why = f"admitted on {path.hop_count} hops"
            session.execute(
                insert(STATE_CHANGES),
                [
                    self._change_row(reservation, None, State.REQUESTED, "requested", actor.name),
                    self._change_row(reservation, State.REQUESTED, admitted, why, actor.name),
                ],
            )
            if request.idempotency_key is not None:
                session.execute(
                    insert(IDEMPOTENCY_KEYS).values(
                        owner_id=actor.id,
                        key=request.idempotency_key,
                        fingerprint=request.fingerprint(),
                        reservation_id=reservation.id,
                        created_at=now,
                    )
                )
        self.on_change(reservation.start)
        return Created(reservation, replayed=False)

    def _active(self, session: Session, actor: User) -> int:
        """How many of the user's reservations hold bandwidth now or later."""
        query = select(func.count()).where(
            RESERVATIONS.c.owner_id == actor.id,
            RESERVATIONS.c.state.in_([s.value for s in HOLDS_BANDWIDTH]),
        )
        return session.scalar(query) or 0

    def _earlier(
        self, session: Session, actor: User, request: ReservationRequest, now: datetime
    ) -> Reservation | None:
        """The reservation an earlier request with this key made, if still remembered;
        a key remembered with another request is refused. Inside the write transaction, so
        two requests racing with one key make one reservation."""
        kept = session.execute(
            select(IDEMPOTENCY_KEYS).where(
                IDEMPOTENCY_KEYS.c.owner_id == actor.id,
                IDEMPOTENCY_KEYS.c.key == request.idempotency_key,
            )
        ).first()
        if kept is None:
            return None
        if kept.created_at <= now - IDEMPOTENCY_WINDOW:
            session.execute(delete(IDEMPOTENCY_KEYS).where(IDEMPOTENCY_KEYS.c.id == kept.id))
            session.flush()
            return None
        if kept.fingerprint != request.fingerprint():
            raise InputError(
                "Idempotency-Key",
                f"was sent with another request at {format_instant(kept.created_at)}; "
                "use a new key for a new request",
            )
        return self._load(session, actor, kept.reservation_id)

    def get(self, actor: User, reservation_id: int) -> Reservation:
        with self.db.read() as session:
            return self._load(session, actor, reservation_id)

    def history(self, actor: User, reservation_id: int) -> list[StateChange]:
        with self.db.read() as session:
            reservation = self._load(session, actor, reservation_id)
            return list(reservation.history)

    def reservations(self, actor: User, filters: ListFilter = ListFilter()) -> list[Reservation]:
        with self.db.read() as session:
            return list(session.scalars(self._listing(actor, filters)))

    def count(self, actor: User, filters: ListFilter = ListFilter()) -> int:
        query = self._listing(actor, filters).limit(None).offset(None).order_by(None)
        with self.db.read() as session:
            return session.scalar(select(func.count()).select_from(query.subquery())) or 0

    def _listing(self, actor: User, filters: ListFilter) -> Select[Reservation]:
        query = select(Reservation).order_by(Reservation.start, Reservation.id)
        if actor.role != "admin":
            query = query.where(Reservation.owner_id == actor.id)
        elif filters.owner is not None:
            query = query.join(User).where(User.name == filters.owner)
        if filters.states:
            query = query.where(Reservation.state.in_([s.value for s in filters.states]))
        if filters.since is not None:
            query = query.where(Reservation.end > filters.since)
        if filters.until is not None:
            query = query.where(Reservation.start < filters.until)
        return query.limit(filters.limit).offset(filters.offset)

    # -- reservations: change ----------------------------------------------------------------

    def modify(self, actor: User, reservation_id: int, change: ReservationChange) -> Reservation:
        """Change the end or the bandwidth: on the same path if it still fits, else on a new
        one. If nothing fits, or the network refuses, the reservation stays as it was."""
        if change.end is None and change.bandwidth_mbps is None:
            raise InputError("body", "nothing to change: give end, bandwidth_mbps or both")
        now = self.clock()
        with self.db.write() as session:
            reservation = self._load(session, actor, reservation_id)
            state = State(reservation.state)
            if change.version is not None and change.version != reservation.version:
                raise StaleVersionError(reservation_id, reservation.version, change.version)
            if state in ENDED or state in (State.RELEASING, State.FAILED):
                raise ConflictError(f"a {state.value} reservation cannot be modified")
            end = change.end or reservation.end
            mbps = change.bandwidth_mbps or reservation.bandwidth_mbps
            if end <= reservation.start:
                raise InputError(
                    "end", f"must be after the start ({format_instant(reservation.start)})"
                )
            if state in (State.PROVISIONING, State.ACTIVE) and end <= now:
                raise InputError("end", "must be in the future for a reservation that has begun")
            old_path = self.path_of(reservation)
            avail = self._availability(session, without=reservation)
            to_us(end, "end")  # in the years the schedule holds, before any limit
            limits = self.policy.limits(actor.name, actor.role)  # the one asking
            policy.check(limits, mbps, end - reservation.start, end - now, 0)
            path = self._readmit(reservation, avail, old_path, mbps, end)
            before = self.circuit(reservation)
            what = _describe_change(reservation, end, mbps, path != old_path)
            reservation.end, reservation.bandwidth_mbps, reservation.updated_at = end, mbps, now
            reservation.path_start, reservation.path_links = path.nodes[0], list(path.link_ids)
            self.ledger.changed(session, reservation)
            self._record(session, reservation, state, state, what, actor.name)
            if state in (State.PROVISIONING, State.ACTIVE):
                try:
                    self.driver.modify(self.circuit(reservation), before)
                except DriverError as exc:
                    raise NetworkError(
                        f"the network refused the change ({exc}); nothing changed"
                    ) from exc
            session.flush()
        self.on_change(reservation.end)
        return reservation

    def _readmit(
        self, reservation: Reservation, avail: Availability, old: Path, mbps: int, end: datetime
    ) -> Path:
        same = avail.fixed_slot(
            old.nodes[0], old.nodes[-1], mbps, reservation.start, end, route=old.link_ids
        )
        if same is not None:
            return same
        if reservation.route is None:
            src, dst = (
                _end_text(reservation.src_node, reservation.src_port),
                _end_text(reservation.dst_node, reservation.dst_port),
            )
            other = avail.fixed_slot(src, dst, mbps, reservation.start, end)
            if other is not None:
                return other
        widest = avail.max_bandwidth(
            old.nodes[0], old.nodes[-1], reservation.start, end, route=old.link_ids
        )
        raise UnavailableError(
            f"{mbps:,} Mb/s until {format_instant(end)} does not fit; the reservation is unchanged",
            None,
            widest,
        )

    def cancel(self, actor: User, reservation_id: int, version: int | None = None) -> Reservation:
        """Cancel in any state (tearing down what is up); with `version`, only if the
        reservation is still at it."""
        now = self.clock()
        with self.db.write() as session:
            reservation = self._load(session, actor, reservation_id)
            if version is not None and version != reservation.version:
                raise StaleVersionError(reservation_id, reservation.version, version)
            state = State(reservation.state)
            if state in ENDED:
                raise ConflictError(f"reservation {reservation_id} has {state.value} already")
            reservation.cancelled_at = now
            if state is State.RELEASING:
                self._record(
                    session, reservation, state, state, "cancel asked while releasing", actor.name
                )
            else:
                self._fire(session, reservation, Event.CANCEL, "cancelled", actor.name)
        if reservation.state == State.RELEASING:
            self.on_change(None)  # tear it down now
        return reservation

    def retry(self, actor: User, reservation_id: int) -> Reservation:
        """Repeat what failed: provisioning (if the slot has not ended) or releasing."""
        now = self.clock()
        with self.db.write() as session:
            reservation = self._load(session, actor, reservation_id)
            if reservation.state != State.FAILED:
                raise ConflictError(
                    f"only a failed reservation can be retried; this one is {reservation.state}"
                )
            failed_in = _failed_in(reservation)
            if failed_in is State.RELEASING or reservation.cancelled_at is not None:
                event = Event.RETRY_RELEASE
            elif reservation.end <= now:
                raise ConflictError(
                    "its slot has ended, so there is nothing to provision; an admin can clear it"
                )
            else:
                event = Event.RETRY_PROVISION
            self._fire(session, reservation, event, "retry", actor.name)
        self.on_change(None)
        return reservation

    def clear(self, actor: User, reservation_id: int) -> Reservation:
        """An admin declares a failed reservation holds nothing in the network any more."""
        if actor.role != "admin":
            raise ForbiddenError("only an admin can clear a failed reservation")
        with self.db.write() as session:
            reservation = self._load(session, actor, reservation_id)
            self._fire(session, reservation, Event.CLEAR, "cleared by an admin", actor.name)
        return reservation

    # -- the work the runner does --------------------------------------------------------------

    def due(self, now: datetime, busy: set[int]) -> list[tuple[int, str]]:
        """(reservation id, job) for everything due at `now`, except reservations in `busy`."""
        due_states = [State.SCHEDULED, State.PROVISIONING, State.ACTIVE, State.RELEASING]
        query = select(Reservation.id, Reservation.state, Reservation.start, Reservation.end).where(
            Reservation.state.in_([s.value for s in due_states]),
            or_(
                Reservation.state.in_([State.PROVISIONING.value, State.RELEASING.value]),
                Reservation.start <= now,
            ),
        )
        jobs = []
        with self.db.read() as session:
            for rid, state, start, end in session.execute(query):
                if rid in busy:
                    continue
                job = _job_for(State(state), start, end, now)
                if job is not None:
                    jobs.append((rid, job))
        return jobs

    def next_due(self, now: datetime) -> datetime | None:
        """The next instant something becomes due (a start, or an end) after `now`."""
        with self.db.read() as session:
            starts = session.scalar(
                select(func.min(Reservation.start)).where(
                    Reservation.state == State.SCHEDULED.value, Reservation.start > now
                )
            )
            ends = session.scalar(
                select(func.min(Reservation.end)).where(
                    Reservation.state.in_([State.ACTIVE.value, State.PROVISIONING.value]),
                    Reservation.end > now,
                )
            )
        found = [t for t in (starts, ends) if t is not None]
        return min(found) if found else None

    def begin(self, reservation_id: int, job: str) -> Circuit | None:
        """Move a reservation into the state its job works in; its circuit, or None if the
        job is done already (or was overtaken)."""
        now = self.clock()
        with self.db.write() as session:
            reservation = session.get(Reservation, reservation_id)
            if reservation is None:
                return None
            state = State(reservation.state)
            if _job_for(state, reservation.start, reservation.end, now) != job:
                return None
            if job == Job.MISSED:
                self._fire(
                    session,
                    reservation,
                    Event.MISSED,
                    "its slot passed while longhaul was down",
                    SCHEDULER,
                )
                return None
            if job == Job.END:
                self._fire(
                    session, reservation, Event.END, "its slot ended while provisioning", SCHEDULER
                )
                return self.circuit(reservation)
            if job == Job.PROVISION and state is State.SCHEDULED:
                late = now - reservation.start
                why = "start"
                if late > LATE:
                    why = (
                        f"late start, {format_duration(late)} after the slot began: "
                        "longhaul was not running"
                    )
                self._fire(session, reservation, Event.START, why, SCHEDULER)
            elif job == Job.RELEASE and state is State.ACTIVE:
                self._fire(session, reservation, Event.END, "end of the slot", SCHEDULER)
            return self.circuit(reservation)

    def finish(self, reservation_id: int, job: str, error: str | None) -> None:
        """Record how a driver call for `job` went, unless the reservation moved on meanwhile."""
        with self.db.write() as session:
            reservation = session.get(Reservation, reservation_id)
            if reservation is None:
                return
            state = State(reservation.state)
            if job == Job.PROVISION and state is State.PROVISIONING:
                event = Event.PROVISIONED if error is None else Event.PROVISION_FAILED
            elif job in (Job.RELEASE, Job.END) and state is State.RELEASING:
                if error is not None:
                    event = Event.RELEASE_FAILED
                elif reservation.cancelled_at is not None:
                    event = Event.RELEASED_CANCELLED
                else:
                    event = Event.RELEASED
            else:
                return
            self._fire(session, reservation, event, error or "done", SCHEDULER)

    # -- helpers ---------------------------------------------------------------------------------

    def path_of(self, reservation: Reservation) -> Path:
        return self.topology.walk(reservation.path_start, reservation.path_links)

    def circuit(self, reservation: Reservation) -> Circuit:
        path = self.path_of(reservation)
        return Circuit(
            reservation_id=reservation.id,
            bandwidth_mbps=reservation.bandwidth_mbps,
            path=path,
            src_port=reservation.src_port if path.nodes[0] == reservation.src_node else None,
            dst_port=reservation.dst_port if path.nodes[-1] == reservation.dst_node else None,
        )

    def _load(self, session: Session, actor: User, reservation_id: int) -> Reservation:
        reservation = session.get(Reservation, reservation_id)
        if reservation is None or (actor.role != "admin" and reservation.owner_id != actor.id):
            raise NotFoundError(f"no reservation {reservation_id}")
        return reservation

    def _fire(
        self, session: Session, reservation: Reservation, event: Event, reason: str, actor: str
    ) -> None:
        before = State(reservation.state)
        after = next_state(before, event)
        reservation.state = after.value
        if (before in HOLDS_BANDWIDTH) != (after in HOLDS_BANDWIDTH):
            self.ledger.changed(session, reservation)
        reservation.updated_at = self.clock()
        self._record(session, reservation, before, after, reason, actor)

    def _record(
        self,
        session: Session,
        reservation: Reservation,
        before: State | None,
        after: State,
        reason: str,
        actor: str,
    ) -> None:
        # A plain INSERT: the ORM would load the history to append to it.
        row = self._change_row(reservation, before, after, reason, actor)
        session.execute(insert(STATE_CHANGES), [row])

    def _change_row(
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

    def _unavailable(
        self,
        session: Session,
        request: ReservationRequest,
        start: datetime,
        duration: timedelta,
        route: Sequence[str] | None,
    ) -> UnavailableError:
        avail = self._availability(session)
        earliest = avail.earliest_start(
            request.src, request.dst, request.bandwidth_mbps, duration, start, route
        )
        widest = avail.max_bandwidth(request.src, request.dst, start, start + duration, route)
        return UnavailableError(
            f"{request.bandwidth_mbps:,} Mb/s is not free from {request.src} to {request.dst} "
            f"for {format_duration(duration)} from {format_instant(start)}",
            earliest,
            widest,
        )

    def _start(self, request: ReservationRequest, now: datetime) -> datetime:
        # "Now" is the current whole second: a start a fraction of a second early changes
        # nothing, and every time shown stays readable.
        this_second = now.replace(microsecond=0)
        if request.start is None:
            return this_second
        if request.start.tzinfo is None:
            raise InputError("start", "needs a time zone, e.g. 2030-01-07T09:00:00Z")
        to_us(request.start, "start")  # in the years the schedule holds
        if request.start < now - PAST_START_TOLERANCE and not request.asap:
            raise InputError("start", f"{format_instant(request.start)} is in the past; use 'now'")
        return max(request.start, this_second) if request.asap else request.start

    def _duration(self, request: ReservationRequest, start: datetime) -> timedelta:
        if (request.end is None) == (request.duration is None):
            raise InputError("end", "give either end or duration, not both")
        if request.end is not None:
            if request.end.tzinfo is None:
                raise InputError("end", "needs a time zone, e.g. 2030-01-07T11:00:00Z")
            to_us(request.end, "end")  # in the years the schedule holds
            if request.end <= start:
                raise InputError("end", f"must be after the start ({format_instant(start)})")
            return request.end - start
        assert request.duration is not None
        if request.duration <= timedelta(0):
            raise InputError("duration", "must be positive")
        if request.duration > LATEST - start:
            raise InputError("duration", f"{request.duration} ends after the years {YEARS}")
        return request.duration

    def _route(self, request: ReservationRequest) -> Sequence[str] | None:
        if request.route is not None and request.loop is not None:
            raise InputError("loop", "give route or loop, not both")
        if request.loop is not None:
            return self.topology.loop_links(request.loop)
        return request.route


def _job_for(state: State, start: datetime, end: datetime, now: datetime) -> str | None:
    if state is State.SCHEDULED and start <= now:
        return Job.MISSED if end <= now else Job.PROVISION
    if state is State.PROVISIONING:
        return Job.END if end <= now else Job.PROVISION
    if state is State.ACTIVE and end <= now:
        return Job.RELEASE
    if state is State.RELEASING:
        return Job.RELEASE
    return None


def _failed_in(reservation: Reservation) -> State | None:
    for change in reversed(reservation.history):
        if change.to_state == State.FAILED.value and change.from_state is not None:
            return State(change.from_state)
    return None


def _end_text(node: str, port: str | None) -> str:
    return node if port is None else f"{node}:{port}"


def _describe_change(reservation: Reservation, end: datetime, mbps: int, rerouted: bool) -> str:
    parts = []
    if end != reservation.end:
        parts.append(f"end {format_instant(reservation.end)} → {format_instant(end)}")
    if mbps != reservation.bandwidth_mbps:
        parts.append(f"bandwidth {reservation.bandwidth_mbps:,} → {mbps:,} Mb/s")
    if rerouted:
        parts.append("re-routed")
    return "modified: " + ("; ".join(parts) or "no change")
