"""The work the job runner does, one class per kind of job, each owning its whole life
(as SuPA's jobs do): when a reservation's state makes it due (which is also how work
left by a crash is taken up again: the state says what was under way), what it records
as it begins, the driver call it makes, and what it records when that call has ended.

`Work` is the transaction boundary around them: each step is one write transaction,
and the driver is called between two, outside any.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import func, or_, select, union_all

from longhaul.control import rows
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


@dataclass(frozen=True)
class Timing:
    """What of a reservation decides which job is due."""

    state: State
    start: datetime
    end: datetime
    held_until: datetime | None = None
    provision: bool = True
    """Whether its circuit is wanted up during the slot (NSI's provision and release)."""
    change_held: bool = False
    """Whether a change is held for it until `held_until` (NSI's modify)."""

    @classmethod
    def of(cls, reservation: Reservation) -> Timing:
        return cls(
            State(reservation.state),
            reservation.start,
            reservation.end,
            reservation.held_until,
            reservation.provision,
            reservation.held_change is not None,
        )


class Job:
    """One kind of work on a reservation. Jobs hold no state: the reservation does."""

    name = ""
    calls_driver = True
    drops_change: str | None = None
    """Why, for a job that drops the change held for a reservation as it begins."""

    def is_due(self, t: Timing, now: datetime) -> bool:
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

    def is_due(self, t: Timing, now: datetime) -> bool:
        return t.state is State.SCHEDULED and t.provision and t.end <= now

    def beginning(self, reservation: Reservation, now: datetime) -> tuple[Event, str]:
        return Event.MISSED, "its slot passed while longhaul was down"


class Provision(Job):
    name = "provision"

    def is_due(self, t: Timing, now: datetime) -> bool:
        if t.state is State.SCHEDULED:
            return t.provision and t.start <= now < t.end
        return t.state is State.PROVISIONING and now < t.end

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

    def is_due(self, t: Timing, now: datetime) -> bool:
        return (t.state is State.ACTIVE and t.end <= now) or t.state is State.RELEASING

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
        if not reservation.provision:
            # NSI's release: down, and still reserved (`Passed` ends it if its slot has).
            return Event.RELEASED_IDLE
        return Event.RELEASED


class EndWhileProvisioning(Release):
    """A slot that ended before its circuit came up: torn down like any other."""

    name = "end"

    def is_due(self, t: Timing, now: datetime) -> bool:
        return t.state is State.PROVISIONING and t.end <= now

    def beginning(self, reservation: Reservation, now: datetime) -> tuple[Event, str]:
        return Event.END, "its slot ended while provisioning"


class HoldExpired(Job):
    """A held reservation nobody committed in time gives its bandwidth back (NSI's
    reserveTimeout, GFD.212 §4.3.1); it then waits for the requester's abort."""

    name = "hold_expired"
    calls_driver = False

    def is_due(self, t: Timing, now: datetime) -> bool:
        return t.state is State.HELD and t.held_until is not None and t.held_until <= now

    def beginning(self, reservation: Reservation, now: datetime) -> tuple[Event, str]:
        return Event.HOLD_EXPIRED, "held, and not committed before the hold timed out"


class Passed(Job):
    """A slot that ended with its circuit never asked up: nothing to tear down."""

    name = "passed"
    calls_driver = False

    def is_due(self, t: Timing, now: datetime) -> bool:
        return t.state is State.SCHEDULED and not t.provision and t.end <= now

    def beginning(self, reservation: Reservation, now: datetime) -> tuple[Event, str]:
        return Event.PASSED, "its slot ended; its circuit was not asked up"


class ChangeExpired(Job):
    """A change held for a reservation (NSI's modify) and not committed in time is
    dropped: the reservation holds its own version only again."""

    name = "change_expired"
    calls_driver = False
    drops_change = "the change held was not committed before its hold timed out"

    def is_due(self, t: Timing, now: datetime) -> bool:
        return t.change_held and t.held_until is not None and t.held_until <= now

    def beginning(self, reservation: Reservation, now: datetime) -> None:
        return None


MISSED, PROVISION, RELEASE, END = Missed(), Provision(), Release(), EndWhileProvisioning()
HOLD_EXPIRED, PASSED, CHANGE_EXPIRED = HoldExpired(), Passed(), ChangeExpired()
JOBS: tuple[Job, ...] = (MISSED, PROVISION, RELEASE, END, HOLD_EXPIRED, PASSED)
"""Every kind of job that moves a reservation's state; at most one is due for a
reservation at any instant."""


def due_job(timing: Timing, now: datetime) -> Job | None:
    # A held change's timeout is settled first: whatever comes next sees the version
    # that stands.
    if CHANGE_EXPIRED.is_due(timing, now):
        return CHANGE_EXPIRED
    return next((job for job in JOBS if job.is_due(timing, now)), None)


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
        r = Reservation
        changed = r.held_change.is_not(None)
        columns = (r.id, r.state, r.start, r.end, r.held_until, r.provision, changed)
        # Three parts, each read through an index (the runner asks after every change, so
        # a scan of every reservation ever made would grow with the calendar): what is
        # under way, what has begun, and holds that have timed out.
        under_way = select(*columns).where(
            r.state.in_([State.PROVISIONING.value, State.RELEASING.value])
        )
        begun = select(*columns).where(
            r.state.in_([State.SCHEDULED.value, State.ACTIVE.value]), r.start <= now
        )
        timed_out = select(*columns).where(
            r.held_until <= now, or_(r.state == State.HELD.value, changed)
        )
        query = union_all(under_way, begun, timed_out)
        jobs = []
        with self.db.read() as session:
            for rid, state, start, end, held_until, provision, change in session.execute(query):
                timing = Timing(State(state), start, end, held_until, provision, bool(change))
                job = due_job(timing, now)
                if job is not None and rid not in busy:
                    jobs.append((rid, job))
        return jobs

    def next_due(self, now: datetime) -> datetime | None:
        """The next instant something becomes due (a start, an end, a hold's timeout)
        after `now`."""
        r = Reservation
        up = [State.ACTIVE.value, State.PROVISIONING.value]
        with self.db.read() as session:
            starts = session.scalar(
                select(func.min(r.start)).where(r.state == State.SCHEDULED.value, r.start > now)
            )
            ends = session.scalar(select(func.min(r.end)).where(r.state.in_(up), r.end > now))
            # A scheduled one's end matters when its circuit is not wanted up (`Passed`).
            passes = session.scalar(
                select(func.min(r.end)).where(
                    r.provision.is_(False), r.end > now, r.state == State.SCHEDULED.value
                )
            )
            holds = session.scalar(
                select(func.min(r.held_until)).where(
                    or_(r.state == State.HELD.value, r.held_change.is_not(None)),
                    r.held_until > now,
                )
            )
        found = [t for t in (starts, ends, passes, holds) if t is not None]
        return min(found) if found else None

    def begin(self, reservation_id: int, job: Job) -> Circuit | None:
        """Move a reservation into the state its job works in; the circuit for the driver,
        or None if there is no call to make (the job is done, or was overtaken)."""
        now = self.clock()
        with self.db.write() as session:
            reservation = rows.load(session, reservation_id)
            if reservation is None:
                return None
            if due_job(Timing.of(reservation), now) is not job:
                return None
            if job.drops_change is not None:
                self.transitions.drop_change(session, reservation, job.drops_change, SCHEDULER)
            beginning = job.beginning(reservation, now)
            if beginning is not None:
                self.transitions.fire(session, reservation, *beginning, SCHEDULER)
            return circuit_of(self.topology, reservation) if job.calls_driver else None

    def finish(self, reservation_id: int, job: Job, error: str | None) -> None:
        """Record how the driver call for `job` went, unless the reservation moved on."""
        with self.db.write() as session:
            reservation = rows.load(session, reservation_id)
            if reservation is None:
                return
            event = job.outcome(reservation, error)
            if event is not None:
                self.transitions.fire(session, reservation, event, error or "done", SCHEDULER)
