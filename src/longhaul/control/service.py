"""The reservation service: admission, reading, and changes users ask for.

Everything that may book bandwidth runs in one `Database.write()` transaction, which no
other writer overlaps: the bookings it reads are all the bookings there are, so two
requests can never together overbook a link. Drivers are called outside transactions
(they may be slow), except to change an active circuit, which must succeed or leave the
reservation as it was. What a request must be is checked before any transaction
(`requests`); what the job runner does is `work`'s; how a reservation moves and is
recorded, `transitions`'.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import Select, delete, func, insert, select
from sqlalchemy.orm import Session

from longhaul.control import policy, requests, rows
from longhaul.control.accounts import Accounts
from longhaul.control.db import (
    IDEMPOTENCY_KEYS,
    RESERVATIONS,
    Reservation,
    StateChange,
    User,
)
from longhaul.control.drivers import Driver, DriverError
from longhaul.control.errors import (
    ConflictError,
    ForbiddenError,
    NetworkError,
    NotFoundError,
    StaleVersionError,
    UnavailableError,
)
from longhaul.control.ledger import BookingLedger
from longhaul.control.lifecycle import (
    CIRCUIT_UP,
    ENDED,
    HOLDS_BANDWIDTH,
    Event,
    State,
    next_state,
)
from longhaul.control.policy import Policy
from longhaul.control.requests import (
    ListFilter,
    ReservationChange,
    ReservationRequest,
    Version,
)
from longhaul.control.transitions import INSERT_STATE_CHANGE, Transitions, circuit_of, path_of
from longhaul.control.work import Work
from longhaul.db import Database
from longhaul.db.prepared import Prepared, made
from longhaul.errors import InputError
from longhaul.parsing import format_duration, format_instant
from longhaul.schedule import Availability
from longhaul.schedule.instants import to_us
from longhaul.topology import Path, Topology

_INSERT_RESERVATION = Prepared.insert(RESERVATIONS, RESERVATIONS.c.id)

IDEMPOTENCY_WINDOW = timedelta(hours=24)
"""How long an idempotency key is remembered (the IETF draft's suggestion, as Stripe's)."""


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Created:
    reservation: Reservation
    replayed: bool
    """True when an earlier request with the same idempotency key made it."""


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
        self.transitions = Transitions(self.ledger, clock)
        self.work = Work(db, topology, self.transitions, clock)
        """What the job runner does."""
        self.on_change: Callable[[datetime | None], None] = lambda _at: None
        """Called after a change with when it may make work due (None: now); the runner listens."""

    # -- availability ----------------------------------------------------------------------

    def availability(self) -> Availability:
        """The free bandwidth given every reservation that holds some, as committed."""
        generation = self.ledger.generation(self.db.engine)
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

    def create_or_replay(
        self,
        actor: User,
        request: ReservationRequest,
        also: Callable[[Session, Reservation], None] | None = None,
    ) -> Created:
        """Admit and store a reservation, or raise `UnavailableError` saying what would fit;
        or, for a request whose idempotency key the user sent with the same request before,
        the reservation that one made (a key sent with another request is an InputError).

        All that needs no lock is done first; inside the write transaction (which every
        other writer waits for) only the query and two INSERTs remain. `also` runs in that
        transaction with the new reservation, to store what names it (an NSI connection).
        """
        now = self.clock()
        checked = requests.check(request, now, self.topology)
        start, duration, route = checked.start, checked.duration, checked.route
        src, dst = (
            self.ledger.idle.end(request.src, "src"),
            self.ledger.idle.end(request.dst, "dst"),
        )
        limits = self.policy.limits(actor.name, actor.role)
        policy.check(limits, request.bandwidth_mbps, duration, timedelta(0), 0)
        admitted = next_state(State.REQUESTED, Event.ADMIT if request.hold is None else Event.HOLD)
        held_until = None if request.hold is None else now + request.hold
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
                "held_until": held_until,
                "held_change": None,
                "provision": request.provision,
                "changed_in": self.ledger.pending_generation(session),
                "created_at": now,
                "updated_at": now,
            }
            # Not through the ORM: its unit of work would double the time holding the lock.
            values["id"] = _INSERT_RESERVATION.scalar(session, **values)
            reservation = made(Reservation, {**values, "owner": actor})
            self.ledger.changed(session, reservation)
            why = f"admitted on {path.hop_count} hops"
            if held_until is not None:
                why = f"held on {path.hop_count} hops until {format_instant(held_until)}"
            INSERT_STATE_CHANGE.later(
                session,
                [
                    self.transitions.row(
                        reservation, None, State.REQUESTED, "requested", actor.name
                    ),
                    self.transitions.row(reservation, State.REQUESTED, admitted, why, actor.name),
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
            if also is not None:
                also(session, reservation)
        self.on_change(reservation.start if held_until is None else held_until)
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
        found = rows.read(self.db.engine, reservation_id, actor)
        return self._visible(actor, reservation_id, found)

    def history(self, actor: User, reservation_id: int) -> list[StateChange]:
        with self.db.read() as session:
            self._load(session, actor, reservation_id)
            return rows.history(session, reservation_id)

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
            if state in ENDED or state in (State.RELEASING, State.FAILED, State.EXPIRED):
                raise ConflictError(f"a {state.value} reservation cannot be modified")
            if reservation.held_change is not None:
                raise ConflictError("a change is held for it: commit or abort that first")
            version, what = self._next_version(session, actor, reservation, change, now)
            self._become(session, actor, reservation, version, what, "nothing changed")
        self.on_change(reservation.end)
        return reservation

    def _next_version(
        self,
        session: Session,
        actor: User,
        reservation: Reservation,
        change: ReservationChange,
        now: datetime,
    ) -> tuple[Version, str]:
        """What `change` makes of `reservation` (on its path if that still fits, else on
        another), checked against the clock, the user's limits and every other booking,
        and how to describe it; the reservation itself is left as it is."""
        end = change.end or reservation.end
        mbps = change.bandwidth_mbps or reservation.bandwidth_mbps
        if end <= reservation.start:
            raise InputError(
                "end", f"must be after the start ({format_instant(reservation.start)})"
            )
        if State(reservation.state) in CIRCUIT_UP and end <= now:
            raise InputError("end", "must be in the future for a reservation that has begun")
        old_path = path_of(self.topology, reservation)
        avail = self._availability(session, without=reservation)
        to_us(end, "end")  # in the years the schedule holds, before any limit
        limits = self.policy.limits(actor.name, actor.role)  # the one asking
        policy.check(limits, mbps, end - reservation.start, end - now, 0)
        path = self._readmit(reservation, avail, old_path, mbps, end)
        what = _describe_change(reservation, end, mbps, path != old_path)
        return Version(end, mbps, path.nodes[0], list(path.link_ids)), what

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
            if reservation.held_change is not None:
                reservation.held_change, reservation.held_until = None, None
            if state is State.RELEASING:
                self.transitions.record(
                    session, reservation, state, state, "cancel asked while releasing", actor.name
                )
            else:
                self.transitions.fire(session, reservation, Event.CANCEL, "cancelled", actor.name)
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
            failed_in = _failed_in(rows.history(session, reservation_id))
            if failed_in is State.RELEASING or reservation.cancelled_at is not None:
                event = Event.RETRY_RELEASE
            elif reservation.end <= now:
                raise ConflictError(
                    "its slot has ended, so there is nothing to provision; an admin can clear it"
                )
            else:
                event = Event.RETRY_PROVISION
            self.transitions.fire(session, reservation, event, "retry", actor.name)
        self.on_change(None)
        return reservation

    def clear(self, actor: User, reservation_id: int) -> Reservation:
        """An admin declares a failed reservation holds nothing in the network any more."""
        if actor.role != "admin":
            raise ForbiddenError("only an admin can clear a failed reservation")
        with self.db.write() as session:
            reservation = self._load(session, actor, reservation_id)
            self.transitions.fire(
                session, reservation, Event.CLEAR, "cleared by an admin", actor.name
            )
        return reservation

    # -- two phases, and the circuit wanted up or not (NSI) ---------------------------------

    def commit(
        self,
        actor: User,
        reservation_id: int,
        also: Callable[[Session, Reservation], None] | None = None,
    ) -> Reservation:
        """Keep a held reservation (it is scheduled like any other), or the change held
        for it (then `also` runs in the same transaction: an NSI connection counts its
        versions). A hold that timed out cannot be committed: it is ended, and
        `ConflictError` says so."""
        with self.db.write() as session:
            reservation = self._load(session, actor, reservation_id)
            state = State(reservation.state)
            changing = reservation.held_change is not None
            if changing:
                self._commit_change(session, actor, reservation)
                if also is not None:
                    also(session, reservation)
            else:
                if state not in (State.HELD, State.EXPIRED):
                    raise ConflictError(f"only a held reservation can be committed; it is {state}")
                if state is State.HELD:
                    reservation.held_until = None  # which is how a commit is known later
                why = "committed" if state is State.HELD else "commit after the hold timed out"
                self.transitions.fire(session, reservation, Event.COMMIT, why, actor.name)
        if changing:
            # A new end may bring the circuit's release sooner than the runner expects.
            self.on_change(reservation.end)
            return reservation
        if state is State.EXPIRED:
            raise ConflictError(
                f"reservation {reservation_id}'s hold timed out before the commit; "
                "nothing is held for it any more: reserve again"
            )
        self.on_change(reservation.start)
        return reservation

    def abort(self, actor: User, reservation_id: int) -> Reservation:
        """Give back what a held reservation holds (or acknowledge a hold that timed out);
        or drop the change held for it, leaving it as it was."""
        with self.db.write() as session:
            reservation = self._load(session, actor, reservation_id)
            state = State(reservation.state)
            if reservation.held_change is not None:
                self.transitions.drop_change(session, reservation, "change aborted", actor.name)
                return reservation
            if state not in (State.HELD, State.EXPIRED):
                raise ConflictError(f"only a held reservation can be aborted; it is {state}")
            self.transitions.fire(session, reservation, Event.ABORT, "aborted", actor.name)
        return reservation

    def hold_change(
        self, actor: User, reservation_id: int, change: ReservationChange, hold: timedelta
    ) -> Reservation:
        """Hold a new end or bandwidth for a committed reservation until `commit` (which
        makes it the reservation), `abort` or `hold` passes (which leave it as it was):
        NSI's modify. Meanwhile it holds the larger of both versions on every link, so
        either can stand; `UnavailableError` if the new version does not fit."""
        if change.end is None and change.bandwidth_mbps is None:
            raise InputError("body", "nothing to change: give end, bandwidth_mbps or both")
        now = self.clock()
        with self.db.write() as session:
            reservation = self._load(session, actor, reservation_id)
            state = State(reservation.state)
            if state not in (State.SCHEDULED, State.PROVISIONING, State.ACTIVE):
                raise ConflictError(
                    f"a {state.value} reservation has no committed version to change"
                )
            if reservation.held_change is not None:
                raise ConflictError("a change is held for it already: commit or abort it first")
            held, what = self._next_version(session, actor, reservation, change, now)
            reservation.held_change, reservation.held_until = held.to_json(), now + hold
            reservation.updated_at = now
            self.ledger.changed(session, reservation)
            why = f"held until {format_instant(now + hold)}, {what}"
            self.transitions.record(session, reservation, state, state, why, actor.name)
        self.on_change(reservation.held_until)
        return reservation

    def _commit_change(self, session: Session, actor: User, reservation: Reservation) -> None:
        """Make the held change the reservation (its devices too, if its circuit is up)."""
        assert reservation.held_change is not None
        held = Version.of(reservation.held_change)
        if reservation.held_until is not None and reservation.held_until <= self.clock():
            raise ConflictError("the change's hold timed out before the commit")
        rerouted = held.path_links != reservation.path_links
        what = "committed: " + _describe_change(reservation, held.end, held.mbps, rerouted)
        reservation.held_change, reservation.held_until = None, None
        self._become(session, actor, reservation, held, what, "the change is still held")

    def _become(
        self,
        session: Session,
        actor: User,
        reservation: Reservation,
        version: Version,
        what: str,
        otherwise: str,
    ) -> None:
        """Make `reservation` this version and record it as `what`. A circuit that is up
        is changed in the network too; if the network refuses, `NetworkError` (saying
        `otherwise`, what stands) rolls the transaction back."""
        state = State(reservation.state)
        before = circuit_of(self.topology, reservation)
        reservation.end, reservation.bandwidth_mbps = version.end, version.mbps
        reservation.path_start, reservation.path_links = version.path_start, version.path_links
        reservation.updated_at = self.clock()
        self.ledger.changed(session, reservation)
        self.transitions.record(session, reservation, state, state, what, actor.name)
        if state in CIRCUIT_UP:
            try:
                self.driver.modify(circuit_of(self.topology, reservation), before)
            except DriverError as exc:
                raise NetworkError(f"the network refused the change ({exc}); {otherwise}") from exc

    def want_up(self, actor: User, reservation_id: int, wanted: bool) -> Reservation:
        """Ask for the circuit to be up during the slot (NSI's provision), or not (its
        release: a circuit that is up is torn down, and the reservation stays)."""
        with self.db.write() as session:
            reservation = self._load(session, actor, reservation_id)
            state = State(reservation.state)
            if state in (State.HELD, State.EXPIRED):
                raise ConflictError("commit the reservation before asking for its circuit")
            if state in ENDED or state is State.FAILED:
                raise ConflictError(f"a {state.value} reservation has no circuit to change")
            if state is State.RELEASING and wanted:
                raise ConflictError("its circuit is being released: ask again once it is down")
            if reservation.provision != wanted:
                reservation.provision = wanted
                why = "provision asked" if wanted else "release asked"
                if not wanted and state in CIRCUIT_UP:
                    self.transitions.fire(session, reservation, Event.RELEASE, why, actor.name)
                else:
                    reservation.updated_at = self.clock()
                    self.transitions.record(session, reservation, state, state, why, actor.name)
        self.on_change(None)
        return reservation

    def _load(self, session: Session, actor: User, reservation_id: int) -> Reservation:
        loaded = rows.load(session, reservation_id, actor)
        return self._visible(actor, reservation_id, loaded)

    @staticmethod
    def _visible(actor: User, reservation_id: int, found: Reservation | None) -> Reservation:
        if found is None or (actor.role != "admin" and found.owner_id != actor.id):
            raise NotFoundError(f"no reservation {reservation_id}")
        return found

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


def _failed_in(history: list[StateChange]) -> State | None:
    for change in reversed(history):
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
