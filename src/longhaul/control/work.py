"""The work the job runner does, one class per kind of job, each owning its whole life
(as SuPA's jobs do): when a reservation's state makes it due (which is also how work
left by a crash is taken up again: the state says what was under way), what it records
as it begins, the driver call it makes, and what it records when that call has ended.

`Work` is the transaction boundary around them: each step is one write transaction,
and the driver is called between two, outside any.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from sqlalchemy import func, or_, select

from longhaul.control.db import Reservation
from longhaul.control.drivers import Circuit, Driver
from longhaul.control.lifecycle import Event, State
from longhaul.control.transitions import Transitions, circuit_of
from longhaul.db import Database
from longhaul.parsing import format_duration
from longhaul.topology import Topology

SCHEDULER = "scheduler"
"""The actor recorded for what the job runner does."""
LATE = timedelta(seconds=2)
"""A runner that is up starts circuits within milliseconds; later than this, it was not."""


class Job:
    """One kind of work on a reservation. Jobs hold no state: the reservation does."""

    name = ""
    calls_driver = True

    def is_due(self, state: State, start: datetime, end: datetime, now: datetime) -> bool:
        raise NotImplementedError

    def beginning(self, reservation: Reservation, now: datetime) -> tuple[Event, str] | None:
        """The event to fire as the job begins, and why; None when the reservation is in
        the job's working state already (the job is being taken up again)."""
        raise NotImplementedError

    def call(self, driver: Driver, circuit: Circuit) -> None:
        """The driver's part; raises `DriverError` when the network refuses."""

    def outcome(self, reservation: Reservation, error: str | None) -> Event | None:
        """The event that records how the driver call went; None when the reservation has
        moved on meanwhile (a cancel while provisioning), so nothing is recorded."""
        del reservation, error
        return None

    def __repr__(self) -> str:
        return self.name


class Missed(Job):
    """A slot that passed entirely while longhaul was down: nothing to set up."""

    name = "missed"
    calls_driver = False

    def is_due(self, state: State, start: datetime, end: datetime, now: datetime) -> bool:
        return state is State.SCHEDULED and end <= now

    def beginning(self, reservation: Reservation, now: datetime) -> tuple[Event, str]:
        return Event.MISSED, "its slot passed while longhaul was down"


class Provision(Job):
    name = "provision"

    def is_due(self, state: State, start: datetime, end: datetime, now: datetime) -> bool:
        if state is State.SCHEDULED:
            return start <= now < end
        return state is State.PROVISIONING and now < end

    def beginning(self, reservation: Reservation, now: datetime) -> tuple[Event, str] | None:
        if reservation.state != State.SCHEDULED:
            return None
        late = now - reservation.start
        if late <= LATE:
            return Event.START, "start"
        why = f"late start, {format_duration(late)} after the slot began: longhaul was not running"
        return Event.START, why

    def call(self, driver: Driver, circuit: Circuit) -> None:
        driver.provision(circuit)

    def outcome(self, reservation: Reservation, error: str | None) -> Event | None:
        if reservation.state != State.PROVISIONING:
            return None
        return Event.PROVISIONED if error is None else Event.PROVISION_FAILED


class Release(Job):
    name = "release"

    def is_due(self, state: State, start: datetime, end: datetime, now: datetime) -> bool:
        return (state is State.ACTIVE and end <= now) or state is State.RELEASING

    def beginning(self, reservation: Reservation, now: datetime) -> tuple[Event, str] | None:
        if reservation.state != State.ACTIVE:
            return None
        return Event.END, "end of the slot"

    def call(self, driver: Driver, circuit: Circuit) -> None:
        driver.release(circuit)

    def outcome(self, reservation: Reservation, error: str | None) -> Event | None:
        if reservation.state != State.RELEASING:
            return None
        if error is not None:
            return Event.RELEASE_FAILED
        if reservation.cancelled_at is not None:
            return Event.RELEASED_CANCELLED
        return Event.RELEASED


class EndWhileProvisioning(Release):
    """A slot that ended before its circuit came up: torn down like any other."""

    name = "end"

    def is_due(self, state: State, start: datetime, end: datetime, now: datetime) -> bool:
        return state is State.PROVISIONING and end <= now

    def beginning(self, reservation: Reservation, now: datetime) -> tuple[Event, str]:
        return Event.END, "its slot ended while provisioning"


MISSED, PROVISION, RELEASE, END = Missed(), Provision(), Release(), EndWhileProvisioning()
JOBS: tuple[Job, ...] = (MISSED, PROVISION, RELEASE, END)
"""Every kind of job; at most one is due for a reservation at any instant."""


def due_job(state: State, start: datetime, end: datetime, now: datetime) -> Job | None:
    return next((job for job in JOBS if job.is_due(state, start, end, now)), None)


class Work:
    """The job runner's side of the database."""

    def __init__(
        self,
        db: Database,
        topology: Topology,
        transitions: Transitions,
        clock: Callable[[], datetime],
    ) -> None:
        self.db, self.topology, self.transitions, self.clock = db, topology, transitions, clock

    def due(self, now: datetime, busy: set[int]) -> list[tuple[int, Job]]:
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
                job = due_job(State(state), start, end, now)
                if job is not None and rid not in busy:
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

    def begin(self, reservation_id: int, job: Job) -> Circuit | None:
        """Move a reservation into the state its job works in; the circuit for the driver,
        or None if there is no call to make (the job is done, or was overtaken)."""
        now = self.clock()
        with self.db.write() as session:
            reservation = session.get(Reservation, reservation_id)
            if reservation is None:
                return None
            state = State(reservation.state)
            if due_job(state, reservation.start, reservation.end, now) is not job:
                return None
            beginning = job.beginning(reservation, now)
            if beginning is not None:
                self.transitions.fire(session, reservation, *beginning, SCHEDULER)
            return circuit_of(self.topology, reservation) if job.calls_driver else None

    def finish(self, reservation_id: int, job: Job, error: str | None) -> None:
        """Record how the driver call for `job` went, unless the reservation moved on."""
        with self.db.write() as session:
            reservation = session.get(Reservation, reservation_id)
            if reservation is None:
                return
            event = job.outcome(reservation, error)
            if event is not None:
                self.transitions.fire(session, reservation, event, error or "done", SCHEDULER)
