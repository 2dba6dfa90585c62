"""Recurring campaigns (perfSONAR's regular testing): a campaign file run every so often,
each round on circuits it books itself (`measure.booked`) and stored as a campaign of its
own (`NAME-round-N`), so rounds compare with each other like any two campaigns.

The schedule is kept in the project database; `longhaul campaign scheduler` runs the
rounds that are due. A round that fails is noted and the schedule goes on.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import Float, Integer, String, Text, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from longhaul.db import Base, Database
from longhaul.errors import InputError

ACTIVE = "active"
CANCELLED = "cancelled"
SHORTEST_EVERY = timedelta(minutes=1)
"""Rounds closer than this would overlap their own bookings."""


class ScheduleRecord(Base):
    __tablename__ = "campaign_schedules"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(128))
    spec: Mapped[str] = mapped_column(Text)
    every_s: Mapped[float] = mapped_column(Float)
    next_at: Mapped[datetime]
    rounds: Mapped[int] = mapped_column(Integer, default=0)
    state: Mapped[str] = mapped_column(String(16), default=ACTIVE)
    last_note: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime]


@dataclass(frozen=True)
class Schedule:
    id: int
    name: str
    spec: str
    every: timedelta
    next_at: datetime
    rounds: int
    state: str
    last_note: str

    @property
    def next_campaign(self) -> str:
        """The name the next round is stored under."""
        return round_name(self.name, self.rounds + 1)


def round_name(name: str, number: int) -> str:
    return f"{name}-round-{number}"


class Schedules:
    def __init__(self, db: Database) -> None:
        self.db = db

    def add(self, name: str, spec: str, every: timedelta, first_at: datetime) -> Schedule:
        if every < SHORTEST_EVERY:
            raise InputError("every", f"at least {SHORTEST_EVERY}: rounds book circuits")
        with self.db.write() as session:
            record = ScheduleRecord(
                name=name, spec=spec, every_s=every.total_seconds(), next_at=first_at,
                rounds=0, state=ACTIVE, last_note="", created_at=datetime.now(UTC),
            )  # fmt: skip
            session.add(record)
            session.flush()
            return _schedule(record)

    def all(self) -> list[Schedule]:
        with self.db.read() as session:
            return [
                _schedule(r)
                for r in session.scalars(select(ScheduleRecord).order_by(ScheduleRecord.id))
            ]

    def cancel(self, number: int) -> Schedule:
        with self.db.write() as session:
            found = _record(session, number)
            found.state = CANCELLED
            return _schedule(found)

    def due(self, now: datetime) -> list[Schedule]:
        with self.db.read() as session:
            query = select(ScheduleRecord).where(
                ScheduleRecord.state == ACTIVE, ScheduleRecord.next_at <= now
            )
            return [_schedule(r) for r in session.scalars(query.order_by(ScheduleRecord.next_at))]

    def finished_round(self, number: int, note: str, now: datetime) -> Schedule:
        """Count the round and set the next one: the first due time after `now` (rounds
        missed while nothing ran are skipped, not run back to back)."""
        with self.db.write() as session:
            found = _record(session, number)
            found.rounds += 1
            found.last_note = note
            every = timedelta(seconds=found.every_s)
            while found.next_at <= now:
                found.next_at += every
            return _schedule(found)


def _record(session: Session, number: int) -> ScheduleRecord:
    found = session.get(ScheduleRecord, number)
    if found is None:
        raise InputError(
            "schedule", f"no schedule {number}: `longhaul campaign schedules` lists them"
        )
    return found


def _schedule(record: ScheduleRecord) -> Schedule:
    return Schedule(
        id=record.id,
        name=record.name,
        spec=record.spec,
        every=timedelta(seconds=record.every_s),
        next_at=record.next_at,
        rounds=record.rounds,
        state=record.state,
        last_note=record.last_note,
    )
