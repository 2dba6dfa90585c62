"""`/api/v1/nsi/connections`: this domain's NSI CS v2 provider as REST.

Each NSI request (GFD.212 §4.1) is a POST on the connection, answered when done: the
confirmation is the 200 answer, a failure a problem+json (409 for a request its state
does not allow, and for a reserve that does not fit, with what would).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Request
from pydantic import AwareDatetime, BaseModel, Field, model_validator
from starlette.concurrency import run_in_threadpool

from longhaul.control.api.auth import CurrentUser
from longhaul.control.api.routes import device_change, in_turn
from longhaul.control.api.schemas import MAX_MBPS, SlotRun, _In
from longhaul.control.db import User
from longhaul.control.nsi import queries
from longhaul.control.nsi.aggregator import (
    Aggregate,
    Aggregator,
    Change,
    LocalAnswers,
    SegmentView,
)
from longhaul.control.nsi.provider import Connection, Provider, ReserveRequest
from longhaul.control.nsi.queries import SegmentAnswers
from longhaul.control.nsi.states import ConnectionStates
from longhaul.control.nsi.stp import parse_stp
from longhaul.parsing import parse_duration

router = APIRouter(prefix="/api/v1/nsi", tags=["nsi"])

Urn = Field(min_length=16, max_length=512, pattern=r"^urn:ogf:network:[\x21-\x7e]+$")


class ReserveIn(_In):
    """A reserve: hold `capacity_mbps` between two STPs of this network from `start_time`
    (now if not given) to `end_time`, until a reserve-commit, a reserve-abort or the hold
    timeout."""

    source_stp: str = Urn
    dest_stp: str = Urn
    capacity_mbps: int = Field(gt=0, le=MAX_MBPS, strict=True)
    start_time: AwareDatetime | None = None
    end_time: AwareDatetime
    global_reservation_id: str = Field(default="", max_length=255)
    description: str = Field(default="", max_length=1000)
    requester_nsa: str = Field(default="", max_length=255)


class ModifyIn(_In):
    """NSI's modify: a new capacity, a new end time, or both; held until a
    reserve-commit, a reserve-abort or the hold timeout."""

    capacity_mbps: int | None = Field(default=None, gt=0, le=MAX_MBPS, strict=True)
    end_time: AwareDatetime | None = None

    @model_validator(mode="after")
    def _something(self) -> ModifyIn:
        if self.capacity_mbps is None and self.end_time is None:
            raise ValueError("give capacity_mbps, end_time or both")
        return self


class SegmentOut(BaseModel):
    """One domain's part of an aggregated connection, as that domain reports it."""

    network: str
    connection_id: str
    source_stp: str
    dest_stp: str
    reservation_state: str
    provision_state: str | None
    lifecycle_state: str
    data_plane_active: bool

    @classmethod
    def of(cls, segment: SegmentView) -> SegmentOut:
        return cls(
            network=segment.network,
            connection_id=segment.connection_id,
            source_stp=segment.source_stp,
            dest_stp=segment.dest_stp,
            **_states(segment.states),
        )


class ConnectionOut(BaseModel):
    connection_id: str
    global_reservation_id: str
    requester_nsa: str
    source_stp: str
    dest_stp: str
    capacity_mbps: int
    start_time: datetime
    end_time: datetime
    reservation_state: str
    provision_state: str | None
    """None until the first commit: the provision state machine starts then."""
    lifecycle_state: str
    data_plane_active: bool
    reservation_id: int | None
    """The longhaul reservation that carries it (`/api/v1/reservations/{id}`); None for a
    connection across domains, whose `segments` each domain carries."""
    held_until: datetime | None
    segments: list[SegmentOut] | None = None
    """Across domains: each domain's connection, in path order."""

    @classmethod
    def of(cls, connection: Connection) -> ConnectionOut:
        reservation, states = connection.reservation, connection.states
        return cls(
            connection_id=connection.connection_id,
            global_reservation_id=connection.global_reservation_id,
            requester_nsa=connection.requester_nsa,
            source_stp=connection.source_stp,
            dest_stp=connection.dest_stp,
            capacity_mbps=reservation.bandwidth_mbps,
            start_time=reservation.start,
            end_time=reservation.end,
            reservation_id=reservation.id,
            held_until=reservation.held_until if states.provision is None else None,
            **_states(states),
        )

    @classmethod
    def of_aggregate(cls, aggregate: Aggregate) -> ConnectionOut:
        return cls(
            connection_id=aggregate.connection_id,
            global_reservation_id=aggregate.global_reservation_id,
            requester_nsa=aggregate.requester_nsa,
            source_stp=aggregate.source_stp,
            dest_stp=aggregate.dest_stp,
            capacity_mbps=aggregate.capacity_mbps,
            start_time=aggregate.start,
            end_time=aggregate.end,
            reservation_id=None,
            held_until=None,
            segments=[SegmentOut.of(segment) for segment in aggregate.segments],
            **_states(aggregate.states),
        )


def _states(states: ConnectionStates) -> dict[str, Any]:
    return {
        "reservation_state": states.reservation.value,
        "provision_state": None if states.provision is None else states.provision.value,
        "lifecycle_state": states.lifecycle.value,
        "data_plane_active": states.data_plane_active,
    }


async def _provider(request: Request) -> Provider:
    provider: Provider = request.app.state.nsi
    return provider


ProviderDep = Annotated[Provider, Depends(_provider)]
ConnectionId = Annotated[str, Path(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9-]+$")]


async def _aggregator(request: Request) -> Aggregator | None:
    aggregator: Aggregator | None = request.app.state.nsi_aggregator
    return aggregator


AggregatorDep = Annotated[Aggregator | None, Depends(_aggregator)]


@router.post("/connections", status_code=201)
async def reserve(
    user: CurrentUser, nsi: ProviderDep, aggregator: AggregatorDep, body: ReserveIn
) -> ConnectionOut:
    """NSI reserve: held until committed, aborted, or the hold times out. Between STPs of
    two domains (with `serve --nsi-peers`), one connection per domain crossed, each held
    in its domain; if any refuses, none is left held."""
    asked = ReserveRequest(
        source_stp=body.source_stp,
        dest_stp=body.dest_stp,
        capacity_mbps=body.capacity_mbps,
        start=body.start_time,
        end=body.end_time,
        global_reservation_id=body.global_reservation_id,
        description=body.description,
        requester_nsa=body.requester_nsa,
    )
    if aggregator is not None and (
        aggregator.is_remote(body.source_stp) or aggregator.is_remote(body.dest_stp)
    ):
        # Other domains are asked over HTTP: in a worker thread, never on the event loop.
        return ConnectionOut.of_aggregate(await run_in_threadpool(aggregator.reserve, user, asked))
    return ConnectionOut.of(await in_turn(nsi.reserve, user, asked))


@router.get("/connections")
async def connections(
    user: CurrentUser,
    nsi: ProviderDep,
    aggregator: AggregatorDep,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Annotated[int, Query(ge=0, le=10**9)] = 0,
) -> list[ConnectionOut]:
    """Your connections (an admin's: everyone's), oldest first (NSI querySummary): this
    domain's, then those it aggregates."""
    found = [ConnectionOut.of(c) for c in nsi.connections(user, limit, offset)]
    if aggregator is not None:
        aggregates = await run_in_threadpool(aggregator.aggregates, user, limit, offset)
        found += [ConnectionOut.of_aggregate(a) for a in aggregates]
    return found


@router.get("/connections/{connection_id}")
async def connection(
    user: CurrentUser, nsi: ProviderDep, aggregator: AggregatorDep, connection_id: ConnectionId
) -> ConnectionOut:
    if aggregator is not None and aggregator.has(connection_id):
        aggregate = await run_in_threadpool(aggregator.get, user, connection_id)
        return ConnectionOut.of_aggregate(aggregate)
    return ConnectionOut.of(nsi.get(user, connection_id))


class NotificationOut(BaseModel):
    """What the provider told the connection's requester unasked (NSI's notifications:
    reserveTimeout, dataPlaneStateChange, errorEvent)."""

    notification_id: int
    kind: str
    at: datetime
    detail: dict[str, Any]
    """reserveTimeout: timeout_s, originating_connection_id, originating_nsa;
    dataPlaneStateChange: active, version, version_consistent; errorEvent: event,
    originating_connection_id, originating_nsa, text."""


@router.get("/connections/{connection_id}/notifications")
async def notifications(
    user: CurrentUser,
    nsi: ProviderDep,
    aggregator: AggregatorDep,
    connection_id: ConnectionId,
    start: Annotated[int | None, Query(ge=1, le=2**31 - 1)] = None,
    end: Annotated[int | None, Query(ge=1, le=2**31 - 1)] = None,
) -> list[NotificationOut]:
    """The connection's notifications, `start` to `end` (notification ids, inclusive;
    by default all), oldest first (NSI queryNotificationSync). A connection across
    domains has none of its own: each domain keeps its segment's."""
    if aggregator is not None and aggregator.has(connection_id):
        aggregator.check_visible(user, connection_id)
        return []
    return [
        NotificationOut(notification_id=n.notification_id, kind=n.kind, at=n.at, detail=n.detail)
        for n in nsi.notifications_of(user, connection_id, start, end)
    ]


@router.post("/connections/{connection_id}/modify")
async def modify(
    user: CurrentUser,
    nsi: ProviderDep,
    aggregator: AggregatorDep,
    connection_id: ConnectionId,
    body: ModifyIn,
) -> ConnectionOut:
    """NSI modify (a reserve on a committed connection): the new version is held, and
    `ReserveHeld`, until a reserve-commit makes it the connection's or a reserve-abort or
    the hold timeout leaves the connection as it was."""
    if aggregator is not None and aggregator.has(connection_id):
        change = Change(body.capacity_mbps, body.end_time)
        done = await run_in_threadpool(aggregator.modify, user, connection_id, change)
        return ConnectionOut.of_aggregate(done)
    held = await in_turn(nsi.modify, user, connection_id, body.capacity_mbps, body.end_time)
    return ConnectionOut.of(held)


def _request(
    name: str, doc: str, call: Callable[[Provider], Callable[[User, str], Connection]]
) -> None:
    async def endpoint(
        user: CurrentUser, nsi: ProviderDep, aggregator: AggregatorDep, connection_id: ConnectionId
    ) -> ConnectionOut:
        # A commit may change a circuit that is up (a modify's), waiting for its devices
        # inside the write transaction: in a worker thread, as routes.device_change says.
        committing = name == "reserve-commit"
        if aggregator is not None and aggregator.has(connection_id):
            # Other domains are asked over HTTP: in a worker thread in any case.
            off_loop = device_change if committing else run_in_threadpool
            return ConnectionOut.of_aggregate(
                await off_loop(aggregator.act, user, name, connection_id)
            )
        run = device_change if committing else in_turn
        return ConnectionOut.of(await run(call(nsi), user, connection_id))

    endpoint.__doc__ = doc
    router.post(f"/connections/{{connection_id}}/{name}", name=name)(endpoint)


_request("reserve-commit", "NSI reserveCommit: keep what is held.", lambda p: p.commit)
_request("reserve-abort", "NSI reserveAbort: give back what is held.", lambda p: p.abort)
_request("provision", "NSI provision: the circuit is up during the slot.", lambda p: p.provision)
_request(
    "release", "NSI release: the circuit goes down, the reservation stays.", lambda p: p.release
)
_request(
    "terminate",
    "NSI terminate: end the connection, tearing down what is up.",
    lambda p: p.terminate,
)


# -- the four queries across domains -------------------------------------------------------

Stp = Annotated[
    str, Query(min_length=16, max_length=512, pattern=r"^urn:ogf:network:[\x21-\x7e]+$")
]
Capacity = Annotated[int, Query(gt=0, le=MAX_MBPS)]
Instant = Annotated[AwareDatetime, Query(description="RFC 3339 with a zone.")]
Duration = Annotated[str, Query(max_length=64, description="2h, 90m, seconds or ISO 8601.")]


class SegmentAnswerOut(BaseModel):
    network: str
    source: str
    dest: str


class NsiFixedSlotOut(BaseModel):
    available: bool
    """Free for the whole slot in every domain the way crosses."""
    segments: list[SegmentAnswerOut]


class NsiMaxBandwidthOut(BaseModel):
    capacity_mbps: int
    """The least of each domain's highest bandwidth free for the slot."""
    segments: list[SegmentAnswerOut]


class NsiEarliestStartOut(BaseModel):
    start_time: datetime | None
    """The earliest start every domain allows; None if one never can."""
    segments: list[SegmentAnswerOut]


class NsiAllSlotsOut(BaseModel):
    slots: list[SlotRun]
    """The starts every domain allows, as runs from the first to the last."""
    segments: list[SegmentAnswerOut]


def _answers(
    nsi: Provider, aggregator: Aggregator | None, source_stp: str, dest_stp: str
) -> list[SegmentAnswers]:
    """Each domain's answerer for its segment: this domain alone without peering."""
    if aggregator is not None:
        return aggregator.answers(source_stp, dest_stp)
    src = parse_stp(source_stp, "source_stp", nsi.network)
    dst = parse_stp(dest_stp, "dest_stp", nsi.network)
    return [LocalAnswers(nsi.network, nsi.service, src.local, dst.local)]


def _segments(answers: list[SegmentAnswers]) -> list[SegmentAnswerOut]:
    return [SegmentAnswerOut(network=a.network, source=a.src, dest=a.dst) for a in answers]


@router.get("/availability/fixed-slot")
def nsi_fixed_slot(
    user: CurrentUser,
    nsi: ProviderDep,
    aggregator: AggregatorDep,
    source_stp: Stp,
    dest_stp: Stp,
    capacity_mbps: Capacity,
    start_time: Instant,
    end_time: Instant,
) -> NsiFixedSlotOut:
    """Query 1 across domains: is the capacity free for the slot in every domain."""
    answers = _answers(nsi, aggregator, source_stp, dest_stp)
    found = queries.fixed_slot(answers, capacity_mbps, start_time, end_time)
    return NsiFixedSlotOut(available=found, segments=_segments(answers))


@router.get("/availability/earliest-start")
def nsi_earliest_start(
    user: CurrentUser,
    nsi: ProviderDep,
    aggregator: AggregatorDep,
    source_stp: Stp,
    dest_stp: Stp,
    capacity_mbps: Capacity,
    duration: Duration,
    not_before: Instant,
) -> NsiEarliestStartOut:
    """Query 2 across domains: the earliest start at or after `not_before` that every
    domain allows for the capacity and duration."""
    answers = _answers(nsi, aggregator, source_stp, dest_stp)
    length = parse_duration(duration, "duration")
    found = queries.earliest_start(answers, capacity_mbps, length, not_before)
    return NsiEarliestStartOut(start_time=found, segments=_segments(answers))


@router.get("/availability/max-bandwidth")
def nsi_max_bandwidth(
    user: CurrentUser,
    nsi: ProviderDep,
    aggregator: AggregatorDep,
    source_stp: Stp,
    dest_stp: Stp,
    start_time: Instant,
    end_time: Instant,
) -> NsiMaxBandwidthOut:
    """Query 3 across domains: the highest capacity free for the slot in every domain."""
    answers = _answers(nsi, aggregator, source_stp, dest_stp)
    found = queries.max_bandwidth(answers, start_time, end_time)
    return NsiMaxBandwidthOut(capacity_mbps=found, segments=_segments(answers))


@router.get("/availability/all-slots")
def nsi_all_slots(
    user: CurrentUser,
    nsi: ProviderDep,
    aggregator: AggregatorDep,
    source_stp: Stp,
    dest_stp: Stp,
    capacity_mbps: Capacity,
    duration: Duration,
    window_start: Instant,
    window_end: Instant,
) -> NsiAllSlotsOut:
    """Query 4 across domains: every start in the window that every domain allows."""
    answers = _answers(nsi, aggregator, source_stp, dest_stp)
    length = parse_duration(duration, "duration")
    runs = queries.all_slots(answers, capacity_mbps, length, window_start, window_end)
    slots = [SlotRun(first_start=first, last_start=last) for first, last in runs]
    return NsiAllSlotsOut(slots=slots, segments=_segments(answers))
