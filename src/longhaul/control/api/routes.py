"""`/api/v1`: the topology, the four queries as availability endpoints, and reservations."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, ParamSpec, TypeVar

from fastapi import APIRouter, Depends, Header, Path, Query, Response
from pydantic import AwareDatetime
from starlette.concurrency import run_in_threadpool

from longhaul.control.api.auth import CurrentUser, ServiceDep
from longhaul.control.api.schemas import (
    AllSlotsOut,
    EarliestStartOut,
    FixedSlotOut,
    FreeStep,
    LinkFreeOut,
    MaxBandwidthOut,
    PathOut,
    ReservationIn,
    ReservationOut,
    ReservationPage,
    ReservationPatch,
    SlotRun,
    StateChangeOut,
)
from longhaul.control.db import Reservation, User
from longhaul.control.errors import StaleVersionError
from longhaul.control.lifecycle import CIRCUIT_UP, State
from longhaul.control.requests import ListFilter, ReservationChange, ReservationRequest
from longhaul.control.service import Service
from longhaul.control.transitions import path_of
from longhaul.errors import InputError
from longhaul.parsing import parse_duration, parse_route
from longhaul.topology import topology_to_dict

router = APIRouter(prefix="/api/v1")

# The reservation endpoints below are coroutines that call the service directly, on the
# event loop: a call is a few hundred microseconds of work, writers take turns anyway, and
# reads never wait for writers (WAL). Handing each request to a worker thread and back
# (FastAPI's way with a plain function) cost two fifths of what one process answers: on a
# 2-core machine, `longhaul bench api` saturated at 270-356 requests/s in threads and
# 501-581 on the loop (three runs each), the threads' turns at the interpreter lock
# costing more than the work. What may wait long goes to a worker thread instead: a
# change to a circuit that is up, which waits for its devices inside the write
# transaction, and every write while such a change is under way (`in_turn`). On
# PostgreSQL, whose every statement waits for a round trip, worker threads were tried
# too and gave nothing: the write lock was then held longer, each round trip's end
# waiting its turn at the interpreter lock.

P = ParamSpec("P")
T = TypeVar("T")


@dataclass
class _DeviceChanges:
    """How many changes to circuits that are up are waiting for their devices now. Only
    the event loop's thread counts them, so no lock is needed."""

    waiting: int = 0


_DEVICE_CHANGES = _DeviceChanges()


async def in_turn(call: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """`call` on the event loop, or in a worker thread while a device change may be
    holding the write lock (for as long as the device takes to answer)."""
    if _DEVICE_CHANGES.waiting:
        return await run_in_threadpool(call, *args, **kwargs)
    return call(*args, **kwargs)


async def device_change(call: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """`call`, which waits for a device, in a worker thread."""
    _DEVICE_CHANGES.waiting += 1
    try:
        return await run_in_threadpool(call, *args, **kwargs)
    finally:
        _DEVICE_CHANGES.waiting -= 1


End = Annotated[
    str,
    Query(
        min_length=1,
        max_length=200,
        description="A node, a site (its gateway node) or node:port, e.g. ORNL or ornl-e300:1/0.",
    ),
]
Mbps = Annotated[int, Query(gt=0, le=1_000_000, description="Bandwidth in Mb/s.")]
Instant = Annotated[AwareDatetime, Query(description="RFC 3339 with a zone.")]
Duration = Annotated[
    str, Query(max_length=64, description="2h, 90m, 1h30m, seconds (1800) or ISO 8601 (PT2H).")
]
Route = Annotated[
    str | None,
    Query(max_length=20_000, description="Comma-separated link ids to walk instead of searching."),
]
Loop = Annotated[
    str | None, Query(max_length=128, description="A loop-back of the topology to walk.")
]
ReservationId = Annotated[int, Path(ge=1, le=2**31 - 1, description="The reservation's number.")]
IfMatch = Annotated[
    str | None,
    Header(
        max_length=1000,
        description='Apply only if the reservation\'s ETag (its version, as "3") is one of '
        "these; else 412.",
    ),
]
LinkId = Annotated[str, Path(min_length=1, max_length=128)]


@router.get("/topology", tags=["topology"])
def topology(user: CurrentUser, service: ServiceDep) -> dict[str, Any]:
    """The topology: sites, nodes with ports, links, loop-backs with their RTTs."""
    data = topology_to_dict(service.topology)
    for entry, view in zip(data["loops"], service.topology.loops.values(), strict=True):
        entry["length_miles"] = round(view.length_miles, 3)
        entry["rtt_ms"] = round(view.rtt_ms, 3)
    return data


# -- the four queries -----------------------------------------------------------------------


@dataclass(frozen=True)
class EndsAndRoute:
    """The ends a query is between, and the route to walk if one is asked for."""

    src: str
    dst: str
    route: list[str] | None


def _query(
    service: ServiceDep, src: End, dst: End, route: Route = None, loop: Loop = None
) -> EndsAndRoute:
    return EndsAndRoute(src, dst, parse_route(service.topology, route, loop))


Between = Annotated[EndsAndRoute, Depends(_query)]


@router.get("/availability/fixed-slot", tags=["availability"])
def fixed_slot(
    user: CurrentUser,
    service: ServiceDep,
    q: Between,
    bandwidth_mbps: Mbps,
    start: Instant,
    end: Instant,
) -> FixedSlotOut:
    """Query 1: is `bandwidth_mbps` free from `start` to `end`, and on which path."""
    path = service.availability().fixed_slot(q.src, q.dst, bandwidth_mbps, start, end, q.route)
    return FixedSlotOut(start=start, end=end, bandwidth_mbps=bandwidth_mbps, path=PathOut.of(path))


@router.get("/availability/earliest-start", tags=["availability"])
def earliest_start(
    user: CurrentUser,
    service: ServiceDep,
    q: Between,
    bandwidth_mbps: Mbps,
    duration: Duration,
    not_before: Instant,
) -> EarliestStartOut:
    """Query 2: the earliest start at or after `not_before` for the bandwidth and duration."""
    length = parse_duration(duration, "duration")
    found = service.availability().earliest_start(
        q.src, q.dst, bandwidth_mbps, length, not_before, q.route
    )
    return EarliestStartOut.of(found)


@router.get("/availability/max-bandwidth", tags=["availability"])
def max_bandwidth(
    user: CurrentUser, service: ServiceDep, q: Between, start: Instant, end: Instant
) -> MaxBandwidthOut:
    """Query 3: the highest bandwidth free throughout `start` to `end`, and its path."""
    widest = service.availability().max_bandwidth(q.src, q.dst, start, end, q.route)
    return MaxBandwidthOut.of(widest, start, end)


@router.get("/availability/all-slots", tags=["availability"])
def all_slots(
    user: CurrentUser,
    service: ServiceDep,
    q: Between,
    bandwidth_mbps: Mbps,
    duration: Duration,
    window_start: Instant,
    window_end: Instant,
) -> AllSlotsOut:
    """Query 4: every start within the window at which the bandwidth fits for the duration."""
    length = parse_duration(duration, "duration")
    window = (window_start, window_end)
    slots = service.availability().all_slots(q.src, q.dst, bandwidth_mbps, length, window, q.route)
    return AllSlotsOut(
        window_start=window_start,
        window_end=window_end,
        duration_s=length.total_seconds(),
        bandwidth_mbps=bandwidth_mbps,
        slots=[SlotRun(first_start=lo, last_start=hi) for lo, hi in slots.windows()],
    )


@router.get("/links/{link_id}/free", tags=["availability"])
def link_free(
    user: CurrentUser, service: ServiceDep, link_id: LinkId, start: Instant, end: Instant
) -> LinkFreeOut:
    """The free bandwidth of one link from `start` to `end`, as steps."""
    link = service.topology.links.get(link_id)
    if link is None:
        raise InputError("link_id", f"no link named {link_id!r}")
    steps = service.availability().free_steps(link_id, start, end)
    return LinkFreeOut(
        link=link_id,
        capacity_mbps=link.capacity_mbps,
        steps=[FreeStep(at=at, free_mbps=free) for at, free in steps],
    )


# -- reservations -----------------------------------------------------------------------------


@router.post("/reservations", status_code=201, tags=["reservations"])
async def create_reservation(
    user: CurrentUser,
    service: ServiceDep,
    body: ReservationIn,
    response: Response,
    idempotency_key: Annotated[
        str | None,
        Header(
            min_length=1,
            max_length=255,
            pattern=r"^[\x21-\x7e]+$",
            description="Send the request again with the same key (within 24 h) and get "
            "the reservation the first one made, not a second one (`Idempotent-Replayed: "
            "true`); the same key with another request is 422.",
        ),
    ] = None,
) -> ReservationOut:
    """Book bandwidth. 409 with suggestions (the earliest start, the highest bandwidth)
    when it is not free."""
    request = ReservationRequest(
        src=body.src.text(),
        dst=body.dst.text(),
        bandwidth_mbps=body.bandwidth_mbps,
        start=body.not_before
        if body.start == "asap"
        else None
        if body.start == "now"
        else body.start,
        asap=body.start == "asap",
        end=body.end,
        duration=body.duration,
        route=body.route,
        loop=body.loop,
        description=body.description,
        idempotency_key=idempotency_key,
    )
    created = await in_turn(service.create_or_replay, user, request)
    reservation = created.reservation
    response.headers["Location"] = f"/api/v1/reservations/{reservation.id}"
    if created.replayed:
        response.headers["Idempotent-Replayed"] = "true"
    return _tagged(service, reservation, response)


@router.get("/reservations", tags=["reservations"])
async def list_reservations(
    user: CurrentUser,
    service: ServiceDep,
    state: Annotated[list[State] | None, Query(description="Only these states.")] = None,
    owner: Annotated[str | None, Query(max_length=64, description="Admins: one user's.")] = None,
    since: Annotated[AwareDatetime | None, Query(description="Only those ending after.")] = None,
    until: Annotated[AwareDatetime | None, Query(description="Only those starting before.")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Annotated[int, Query(ge=0, le=10**9)] = 0,
) -> ReservationPage:
    """Your reservations (an admin's: everyone's), by start time."""
    filters = ListFilter(
        states=state or (), owner=owner, since=since, until=until, limit=limit, offset=offset
    )
    items = [_out(service, r) for r in service.reservations(user, filters)]
    return ReservationPage(
        items=items, total=service.count(user, filters), limit=limit, offset=offset
    )


@router.get("/reservations/{reservation_id}", tags=["reservations"])
async def get_reservation(
    user: CurrentUser, service: ServiceDep, reservation_id: ReservationId, response: Response
) -> ReservationOut:
    """The reservation, with its version as an `ETag` for `If-Match`."""
    return _tagged(service, service.get(user, reservation_id), response)


@router.patch("/reservations/{reservation_id}", tags=["reservations"])
async def modify_reservation(
    user: CurrentUser,
    service: ServiceDep,
    reservation_id: ReservationId,
    body: ReservationPatch,
    response: Response,
    if_match: IfMatch = None,
) -> ReservationOut:
    """Change the end or the bandwidth. It stays on its path if that still fits, else moves
    to another; if nothing fits (409) or the network refuses (502), nothing changes."""
    version = _matched_version(service, user, reservation_id, if_match, body.version)
    change = ReservationChange(end=body.end, bandwidth_mbps=body.bandwidth_mbps, version=version)
    if State(service.get(user, reservation_id).state) in CIRCUIT_UP:
        changed = await device_change(service.modify, user, reservation_id, change)
    else:
        changed = await in_turn(service.modify, user, reservation_id, change)
    return _tagged(service, changed, response)


@router.post("/reservations/{reservation_id}/cancel", tags=["reservations"])
async def cancel_reservation(
    user: CurrentUser,
    service: ServiceDep,
    reservation_id: ReservationId,
    response: Response,
    if_match: IfMatch = None,
) -> ReservationOut:
    """Cancel, in any state: before its start it is simply cancelled; after, torn down first."""
    version = _matched_version(service, user, reservation_id, if_match, None)
    cancelled = await in_turn(service.cancel, user, reservation_id, version)
    return _tagged(service, cancelled, response)


@router.post("/reservations/{reservation_id}/retry", tags=["reservations"])
async def retry_reservation(
    user: CurrentUser, service: ServiceDep, reservation_id: ReservationId
) -> ReservationOut:
    """Repeat what failed (provisioning or releasing)."""
    return _out(service, await in_turn(service.retry, user, reservation_id))


@router.post("/reservations/{reservation_id}/clear", tags=["reservations"])
async def clear_reservation(
    user: CurrentUser, service: ServiceDep, reservation_id: ReservationId
) -> ReservationOut:
    """Admins: declare a failed reservation holds nothing in the network any more."""
    return _out(service, await in_turn(service.clear, user, reservation_id))


@router.get("/reservations/{reservation_id}/history", tags=["reservations"])
async def reservation_history(
    user: CurrentUser, service: ServiceDep, reservation_id: ReservationId
) -> list[StateChangeOut]:
    """Every change of state: when, from, to, why, and by whom."""
    return [StateChangeOut.of(c) for c in service.history(user, reservation_id)]


def _tagged(service: Service, reservation: Reservation, response: Response) -> ReservationOut:
    """The reservation's JSON, its version as a strong entity tag in `ETag`."""
    response.headers["ETag"] = f'"{reservation.version}"'
    return _out(service, reservation)


def _matched_version(
    service: Service,
    user: User,
    reservation_id: int,
    if_match: str | None,
    body_version: int | None,
) -> int | None:
    """The version a change may apply to: the one `If-Match` names (RFC 9110 §13.1.1:
    strong comparison, so weak tags never match; `*` any), else the body's `version`.
    The service checks it again inside its transaction; a mismatch is 412 there or here."""
    if if_match is None:
        return body_version
    current = service.get(user, reservation_id).version
    if if_match.strip() == "*":
        return body_version
    tags = {tag.strip() for tag in if_match.split(",")}
    if f'"{current}"' not in tags:
        raise StaleVersionError(reservation_id, current, _first_version(tags))
    if body_version is not None and body_version != current:
        raise StaleVersionError(reservation_id, current, body_version)
    return current


def _first_version(tags: set[str]) -> int:
    """A version named by the tags, for the message (0 when none names one)."""
    for tag in sorted(tags):
        if tag.startswith('"') and tag.endswith('"') and tag[1:-1].isdigit():
            return int(tag[1:-1])
    return 0


def _out(service: Service, reservation: Reservation) -> ReservationOut:
    try:
        path = path_of(service.topology, reservation)
    except ValueError:
        path = None
    return ReservationOut.of(reservation, path)
