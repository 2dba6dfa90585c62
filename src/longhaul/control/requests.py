"""What users ask the reservation service for, and the checks a request passes before
any transaction: pure functions of the request, the clock's reading and the topology."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from longhaul.control.lifecycle import State
from longhaul.errors import InputError
from longhaul.parsing import format_instant
from longhaul.schedule.instants import LATEST, YEARS, to_us
from longhaul.topology import Topology

CONTROL_CHARACTER = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
"""What a description may not hold: control characters other than tab and line breaks."""
PAST_START_TOLERANCE = timedelta(minutes=1)
"""A start this far in the past still counts as now (clocks differ a little)."""


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
    """When given, the same request with the same key within the service's idempotency
    window answers the reservation the first one made instead of making another."""
    hold: timedelta | None = None
    """Admit it `held` for this long: its bandwidth is kept for it until a commit, an
    abort or the hold's timeout (NSI's two-phase reserve). None: scheduled at once."""
    provision: bool = True
    """Whether its circuit is to be set up when its slot begins; False until a provision
    request (NSI's provision and release)."""

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
            "hold_s": None if self.hold is None else self.hold.total_seconds(),
            "provision": self.provision,
        }
        return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class ReservationChange:
    end: datetime | None = None
    bandwidth_mbps: int | None = None
    version: int | None = None
    """When given, the change applies only if the reservation is still at this version."""


@dataclass(frozen=True)
class Version:
    """A reservation's end, bandwidth and path: the ones it has, or a change held for it
    until committed or aborted (NSI's modify)."""

    end: datetime
    mbps: int
    path_start: str
    path_links: list[str]

    def to_json(self) -> dict[str, Any]:
        return {
            "end": self.end.isoformat(),
            "bandwidth_mbps": self.mbps,
            "path_start": self.path_start,
            "path_links": list(self.path_links),
        }

    @classmethod
    def of(cls, data: dict[str, Any]) -> Version:
        return cls(
            datetime.fromisoformat(data["end"]),
            int(data["bandwidth_mbps"]),
            str(data["path_start"]),
            list(data["path_links"]),
        )


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


@dataclass(frozen=True)
class Checked:
    """A request's slot and route as the checks settled them."""

    start: datetime
    duration: timedelta
    route: Sequence[str] | None


def check(request: ReservationRequest, now: datetime, topology: Topology) -> Checked:
    """The request's start, duration and route, or an `InputError` naming the field."""
    start = start_of(request, now)
    checked = Checked(start, duration_of(request, start), route_of(request, topology))
    if control := CONTROL_CHARACTER.search(request.description):
        # PostgreSQL cannot store a NUL, and no control character belongs in a note.
        raise InputError(
            "description",
            f"holds the control character {control.group()!r} at {control.start()}",
        )
    return checked


def start_of(request: ReservationRequest, now: datetime) -> datetime:
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


def duration_of(request: ReservationRequest, start: datetime) -> timedelta:
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


def route_of(request: ReservationRequest, topology: Topology) -> Sequence[str] | None:
    if request.route is not None and request.loop is not None:
        raise InputError("loop", "give route or loop, not both")
    if request.loop is not None:
        return topology.loop_links(request.loop)
    return request.route
