"""`/api/v1/nsi/soap`: this domain's NSI CS v2 provider in the SOAP binding OGF GFD.212
defines (`ogf_nsi_connection_provider_v2_0.wsdl` and the schemas it imports, shipped
unchanged in `longhaul/data/nsi`).

- `GET /api/v1/nsi/soap/provider?wsdl` (or `.../provider.wsdl`): the provider's WSDL, its
  service address this server's; the schemas it imports are served beside it by their
  file names, so a SOAP client can load the whole of it from here.
- `POST /api/v1/nsi/soap/provider`: SOAP 1.1 requests (reserve, reserveCommit,
  reserveAbort, provision, release, terminate, querySummary(Sync), queryRecursive,
  queryNotification(Sync), queryResult(Sync)), signed in as the REST API is (a bearer
  token or a client certificate).

Each request is the same Provider (or Aggregator) call `/api/v1/nsi/connections` makes,
done before it is answered: a refusal is a SOAP Fault carrying a `serviceException`,
and the answer (reserveResponse, acknowledgment) means the work is done. NSI is
asynchronous, so with a `replyTo` in the header the confirmation is then sent there as
a SOAP request of its own; without one the requester polls with querySummarySync.

A refusal is known before the answer, and nothing is left of what was refused (the
provider creates no connection in ReserveFailed), so the Fault is the whole of it: no
reserveFailed or reserveCommitFailed follows at replyTo.

What happens to a connection later, unasked (a hold timing out, the circuit coming up or
down, failing), is a notification (`longhaul.control.nsi.notifications`): sent to the
replyTo of the connection's reserve, if it had one, and read back with
queryNotification(Sync).

Each confirmation of a request naming a connection is also kept, as sent, and read back
with queryResult(Sync) (`longhaul.control.nsi.results`).

queryRecursive answers as querySummary does, at replyTo, each child of a connection
across domains with its states and criteria (one level: a peer domain aggregates
nothing further).

Not done: a connection across domains has no notifications of its own (each domain
keeps its segment's); an ero is refused (longhaul chooses the path); a modify changes the
capacity and the end time only (the STPs of a p2ps in it are not read); the version
numbers a requester sends are not kept (longhaul numbers versions itself: 0, then one
more per modify committed).

The XML mapping is `longhaul.control.nsi.soap`'s pure functions, from elements to
dataclasses and back; this module is the endpoint that calls the provider with them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from datetime import datetime
from functools import cache
from importlib import resources
from typing import Any, Final, TypeGuard

import httpx
from fastapi import APIRouter, HTTPException, Request, Response
from fastapi.routing import APIRoute
from lxml import etree
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool

from longhaul.control.api.auditing import AUDITED
from longhaul.control.api.auth import CurrentUser
from longhaul.control.api.problems import UnauthorizedError
from longhaul.control.api.ratelimit import RateLimitedError
from longhaul.control.api.routes import device_change, in_turn
from longhaul.control.audit_log import NOBODY, Entry
from longhaul.control.db import User
from longhaul.control.errors import (
    ConflictError,
    ForbiddenError,
    NetworkError,
    NotFoundError,
    UnavailableError,
)
from longhaul.control.lifecycle import TransitionError
from longhaul.control.nsi import soap
from longhaul.control.nsi.aggregator import Aggregate, Aggregator, Change, PeerError
from longhaul.control.nsi.provider import (
    Connection,
    Provider,
    ReserveRequest,
    VlanUnavailableError,
)
from longhaul.control.policy import PolicyError
from longhaul.control.requests import Version
from longhaul.errors import InputError
from longhaul.topology.network import UnknownNameError

log = logging.getLogger(__name__)


MAX_BODY = 1 << 20
"""A request bigger than this is refused unread: NSI messages are a few kilobytes."""
REPLY_TIMEOUT_S = 10.0
"""How long a confirmation may take to be delivered to replyTo before it is given up."""

SCHEMAS: Final = (
    "ogf_nsi_connection_provider_v2_0.wsdl",
    "ogf_nsi_connection_requester_v2_0.wsdl",
    "ogf_nsi_connection_interface_v2_0.wsdl",
    "ogf_nsi_connection_types_v2_0.xsd",
    "ogf_nsi_framework_headers_v2_0.xsd",
    "ogf_nsi_framework_types_v2_0.xsd",
    "ogf_nsi_services_p2p_v2_0.xsd",
    "ogf_nsi_services_types_v2_0.xsd",
    "saml-schema-assertion-2.0.xsd",
    "xenc-schema.xsd",
    "xmldsig-core-schema.xsd",
)
PROVIDER_WSDL: Final = SCHEMAS[0]
_SHIPPED_ADDRESS: Final = b"https://localhost:8443/nsi-v2/ConnectionServiceProvider"
"""The provider WSDL's placeholder service address, replaced by this server's."""
ENDPOINT: Final = "nsi_soap_provider"


def service_exception(
    exc: BaseException, nsa_id: str, connection_id: str | None = None
) -> soap.ServiceException:
    """What GFD.212 calls the refusal `exc` is (None of the ids fits: INTERNAL_ERROR)."""
    error_id, service_type = soap.INTERNAL_ERROR, False
    variables: tuple[soap.Variable, ...] = ()
    text = str(exc)
    match exc:
        case soap.NsiError():
            error_id, variables, service_type = exc.error_id, exc.variables, exc.service_type
        case UnknownNameError():
            error_id, service_type = soap.UNKNOWN_STP, True
            variables = (soap.Variable(_NSI_NAMES.get(exc.field, exc.field), "", soap.P2P),)
        case InputError() if exc.field in ("source_stp", "dest_stp"):
            error_id, service_type = soap.UNKNOWN_STP, True
            variables = (soap.Variable(_NSI_NAMES[exc.field], "", soap.P2P),)
        case InputError():
            error_id = soap.MISSING_PARAMETER
            variables = (soap.Variable(_NSI_NAMES.get(exc.field, exc.field), ""),)
        case VlanUnavailableError():
            error_id, service_type = soap.STP_UNAVAILABLE, True
            variables = (soap.Variable(_NSI_NAMES.get(exc.field, exc.field), "", soap.P2P),)
        case UnavailableError():
            error_id, service_type = soap.CAPACITY_UNAVAILABLE, True
            if exc.widest is not None:
                text += f" (at most {exc.widest.bandwidth_mbps} Mb/s fit the slot)"
        case NotFoundError():
            error_id = soap.CONNECTION_NONEXISTENT
        case PeerError():
            error_id = soap.RESOURCE_UNAVAILABLE if 400 <= exc.status < 500 else soap.INTERNAL_ERROR
            variables = (soap.Variable("network", exc.network),)
        case ConflictError() | TransitionError():
            error_id = soap.INVALID_TRANSITION
        case PolicyError() | ForbiddenError():
            error_id = soap.UNAUTHORIZED
        case UnauthorizedError():
            error_id = soap.AUTHENTICATION_FAILURE
        case NetworkError():
            error_id = soap.INTERNAL_NRM_ERROR
        case _:
            text = "an unexpected error; see the provider's log"
    return soap.ServiceException(
        nsa_id=nsa_id,
        error_id=error_id,
        text=text,
        connection_id=connection_id,
        service_type=soap.SERVICE_TYPE if service_type else None,
        variables=variables,
    )


_NSI_NAMES: Final = {
    "source_stp": "sourceSTP",
    "dest_stp": "destSTP",
    "src": "sourceSTP",
    "dst": "destSTP",
    "start": "startTime",
    "end": "endTime",
    "bandwidth_mbps": "capacity",
}
"""longhaul's names of a request's fields, as NSI calls them."""


def summary_of(connection: Connection) -> soap.Summary:
    reservation, version = connection.reservation, connection.version
    current = soap.Criteria(
        version=version,
        start=reservation.start,
        end=reservation.end,
        capacity_mbps=reservation.bandwidth_mbps,
        source_stp=connection.source_stp,
        dest_stp=connection.dest_stp,
    )
    criteria = [current]
    if reservation.held_change is not None:
        held = Version.of(reservation.held_change)
        criteria.append(
            soap.Criteria(
                version + 1, current.start, held.end, held.mbps, *soap.stps_of(connection)
            )
        )
    return soap.Summary(
        connection_id=connection.connection_id,
        requester_nsa=connection.requester_nsa,
        states=connection.states,
        criteria=tuple(criteria),
        global_reservation_id=connection.global_reservation_id,
        description=reservation.description,
    )


def summary_of_aggregate(aggregate: Aggregate) -> soap.Summary:
    children = tuple(
        # A peer is known by its network's identifier; its NSA's is not recorded.
        soap.Child(
            order,
            s.connection_id,
            s.network,
            s.source_stp,
            s.dest_stp,
            aggregate.capacity_mbps,
            s.states,
        )
        for order, s in enumerate(aggregate.segments)
    )
    criteria = soap.Criteria(
        version=0,
        start=aggregate.start,
        end=aggregate.end,
        capacity_mbps=aggregate.capacity_mbps,
        source_stp=aggregate.source_stp,
        dest_stp=aggregate.dest_stp,
        children=children,
    )
    return soap.Summary(
        connection_id=aggregate.connection_id,
        requester_nsa=aggregate.requester_nsa,
        states=aggregate.states,
        criteria=(criteria,),
        global_reservation_id=aggregate.global_reservation_id,
    )


# -- the endpoint ----------------------------------------------------------------------


class _SoapRoute(APIRoute):
    """Refusals met before the endpoint runs (signing in, rate limits) are Faults too,
    so a SOAP client reads them as it reads any other."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def soap_handler(request: Request) -> Response:
            try:
                response: Response = await handler(request)
            except (UnauthorizedError, ForbiddenError, RateLimitedError) as exc:
                detail = service_exception(exc, request.app.state.nsi.nsa_id)
                headers: dict[str, str] = {}
                status = 403
                if isinstance(exc, UnauthorizedError):
                    status, headers = 401, {"WWW-Authenticate": 'Bearer realm="longhaul"'}
                elif isinstance(exc, RateLimitedError):
                    status, headers = 429, {"Retry-After": str(max(1, round(exc.retry_after_s)))}
                return _xml(soap.envelope(None, soap.fault(detail)), status, headers)
            return response

        return soap_handler


router = APIRouter(prefix="/api/v1/nsi/soap", tags=["nsi"], route_class=_SoapRoute)


@cache
def _schema(name: str) -> bytes:
    return (resources.files("longhaul") / "data" / "nsi" / name).read_bytes()


def provider_wsdl(address: str) -> bytes:
    """The provider WSDL, its service at `address`."""
    shipped = _schema(PROVIDER_WSDL)
    if shipped.count(_SHIPPED_ADDRESS) != 1:
        raise RuntimeError(f"{PROVIDER_WSDL} no longer has one service address to replace")
    return shipped.replace(_SHIPPED_ADDRESS, address.encode())


@router.get("/provider", include_in_schema=False)
async def wsdl(request: Request) -> Response:
    """The provider's WSDL (asked for as `?wsdl`, as SOAP clients do)."""
    return _xml(provider_wsdl(str(request.url_for(ENDPOINT))))


@router.get("/{name}", include_in_schema=False)
async def schema(request: Request, name: str) -> Response:
    """`provider.wsdl`, or a file the WSDL imports, by its name."""
    if name in ("provider.wsdl", PROVIDER_WSDL):
        return await wsdl(request)
    if name not in SCHEMAS:
        raise HTTPException(404, f"no schema {name!r}; the WSDL is at provider.wsdl")
    return _xml(_schema(name))


@router.post("/provider", include_in_schema=False, name=ENDPOINT)
async def provider_endpoint(request: Request, user: CurrentUser) -> Response:
    """One SOAP request: parsed, done by the provider, answered; then, with a replyTo,
    confirmed there."""
    nsi: Provider = request.app.state.nsi
    aggregator: Aggregator | None = request.app.state.nsi_aggregator
    header: soap.NsiHeader | None = None
    call: soap.NsiRequest | None = None
    try:
        header, element = soap.parse_envelope(await _body(request))
        call = soap.parse_request(element)
        refused = soap.unsupported(call)
        if refused is not None:
            raise refused
        if _is_query(call) and call.operation in soap.ANSWERED_AT_REPLY_TO and not header.reply_to:
            raise soap.NsiError(
                soap.MISSING_PARAMETER,
                f"{call.operation} answers at replyTo: give one, or use {call.operation}Sync",
                soap.Variable("replyTo", ""),
            )
        if header.reply_to and not nsi.reply_to.permits(header.reply_to):
            raise soap.NsiError(
                soap.UNAUTHORIZED,
                f"this provider sends confirmations only where its operator allows "
                f"(longhaul serve --nsi-reply-to), and not to {header.reply_to}: "
                "leave replyTo out and poll with querySummarySync",
                soap.Variable("replyTo", header.reply_to),
            )
        answer, confirmation = await _perform(nsi, aggregator, user, header, call)
    except Exception as exc:
        return _refusal(exc, nsi, header, call)
    _audit(request, user, call, header)
    if confirmation is not None and not _is_query(call):
        await _keep_result(request, nsi, call, header, confirmation)
    response = _xml(soap.envelope(soap.header_element(header, header.protocol_version), answer))
    if header.reply_to and confirmation is not None:
        message = soap.envelope(soap.header_element(header, soap.REQUESTER_PROTOCOL), confirmation)
        action = soap.ACTIONS + etree.QName(confirmation).localname
        # Once the answer is sent, and apart from the request: a slow requester must not
        # hold this connection's next request (GFD.212's requesters accept a confirmation
        # before the answer anyway, but the answer first is the order they expect).
        response.background = BackgroundTask(_confirm_later, header.reply_to, message, action)
    return response


def _refusal(
    exc: Exception, nsi: Provider, header: soap.NsiHeader | None, call: soap.NsiRequest | None
) -> Response:
    """A Fault for `exc`, naming this provider by its NSA identifier."""
    detail = service_exception(exc, nsi.nsa_id, _connection_id(call))
    if detail.error_id == soap.INTERNAL_ERROR and not isinstance(exc, soap.NsiError | PeerError):
        log.exception("NSI SOAP request failed")
    sync_query = call is not None and _is_query(call) and call.operation in soap.SYNCHRONOUS_QUERIES
    answered = None if header is None else soap.header_element(header, header.protocol_version)
    return _xml(soap.envelope(answered, soap.fault(detail, sync_query)), 500)


async def _perform(
    nsi: Provider,
    aggregator: Aggregator | None,
    user: User,
    header: soap.NsiHeader,
    call: soap.NsiRequest,
) -> tuple[etree._Element, etree._Element | None]:
    """The provider's (or aggregator's) work for `call`, as REST does it: the answer, and
    the confirmation for replyTo."""
    if isinstance(call, soap.Reserve):
        asked = ReserveRequest(
            source_stp=call.source_stp,
            dest_stp=call.dest_stp,
            capacity_mbps=call.capacity_mbps,
            start=call.start,
            end=call.end,
            global_reservation_id=call.global_reservation_id,
            description=call.description,
            requester_nsa=header.requester_nsa,
            notify_to=header.reply_to,
        )
        if aggregator is not None and (
            aggregator.is_remote(call.source_stp) or aggregator.is_remote(call.dest_stp)
        ):
            # Other domains are asked over HTTP: in a worker thread, never on the event loop.
            aggregate = await run_in_threadpool(aggregator.reserve, user, asked)
            summary = summary_of_aggregate(aggregate)
        else:
            summary = summary_of(await in_turn(nsi.reserve, user, asked))
        return soap.reserve_response(summary.connection_id), soap.reserve_confirmed(summary)
    if isinstance(call, soap.Modify):
        summary = await _modify(nsi, aggregator, user, call)
        return soap.reserve_response(call.connection_id), soap.reserve_confirmed(summary)
    if isinstance(call, soap.Act):
        if aggregator is not None and aggregator.has(call.connection_id):
            what = _REST_NAMES[call.operation]
            await run_in_threadpool(aggregator.act, user, what, call.connection_id)
        else:
            # A commit may change a circuit that is up (see routes.device_change).
            run = device_change if call.operation == "reserveCommit" else in_turn
            await run(_provider_call(nsi, call.operation), user, call.connection_id)
        return soap.acknowledgment(), soap.generic_confirmed(
            f"{call.operation}Confirmed", call.connection_id
        )
    if isinstance(call, soap.RangedQuery):
        return await _ranged(nsi, aggregator, user, call)
    summaries = await _summaries(nsi, aggregator, user, call)
    if call.operation == "queryRecursive":
        return soap.acknowledgment(), soap.query_recursive_confirmed(summaries)
    if call.operation == "querySummarySync":
        return soap.query_summary_confirmed("querySummarySyncConfirmed", summaries), None
    return soap.acknowledgment(), soap.query_summary_confirmed("querySummaryConfirmed", summaries)


async def _ranged(
    nsi: Provider, aggregator: Aggregator | None, user: User, query: soap.RangedQuery
) -> tuple[etree._Element, etree._Element | None]:
    """queryNotification(Sync) or queryResult(Sync): the answer, and the confirmation for
    replyTo. A connection this domain aggregates keeps the results of its requests here
    but no notifications of its own (its domains keep their segments')."""
    cid, first, last = query.connection_id, query.first, query.last
    if aggregator is not None and aggregator.has(cid):
        aggregator.check_visible(user, cid)
        found: list[Any] = nsi.results.of(cid, first, last) if query.of_results else []
    elif query.of_results:
        found = nsi.results_of(user, cid, first, last)
    else:
        found = nsi.notifications_of(user, cid, first, last)
    build = soap.query_result_confirmed if query.of_results else soap.query_notification_confirmed
    confirmed = build(f"{query.operation}Confirmed", found)
    if query.operation in soap.SYNCHRONOUS_QUERIES:
        return confirmed, None
    return soap.acknowledgment(), confirmed


async def _modify(
    nsi: Provider, aggregator: Aggregator | None, user: User, call: soap.Modify
) -> soap.Summary:
    if aggregator is not None and aggregator.has(call.connection_id):
        if call.start_given:
            before = await run_in_threadpool(aggregator.get, user, call.connection_id)
            _same_start(call, before.start)
        change = Change(call.capacity_mbps, call.end)
        done = await run_in_threadpool(aggregator.modify, user, call.connection_id, change)
        summary = summary_of_aggregate(done)
        # The aggregate reports its committed version; the confirmation is of the held one.
        committed = summary.criteria[0]
        held = soap.Criteria(
            committed.version + 1,
            committed.start,
            call.end or committed.end,
            call.capacity_mbps or committed.capacity_mbps,
            committed.source_stp,
            committed.dest_stp,
            committed.children,
        )
        return soap.Summary(
            summary.connection_id,
            summary.requester_nsa,
            summary.states,
            (committed, held),
            summary.global_reservation_id,
        )
    current = nsi.get(user, call.connection_id)
    _same_start(call, current.reservation.start)
    held_connection = await in_turn(
        nsi.modify, user, call.connection_id, call.capacity_mbps, call.end
    )
    return summary_of(held_connection)


def _same_start(call: soap.Modify, start: datetime) -> None:
    if call.start_given and call.start != start:
        raise soap.NsiError(
            soap.UNSUPPORTED_PARAMETER,
            "longhaul changes a connection's capacity and end time, not its start",
            soap.Variable("startTime", "" if call.start is None else soap.instant(call.start)),
        )


async def _summaries(
    nsi: Provider, aggregator: Aggregator | None, user: User, query: soap.Query
) -> list[soap.Summary]:
    """The connections a query names, those the user may see (GFD.212: no names, all of
    the requester's; names of unknown connections are left out, as a filter would)."""
    found: list[soap.Summary] = []
    if query.connection_ids:
        local: list[Connection] = []
        for connection_id in dict.fromkeys(query.connection_ids):
            if aggregator is not None and aggregator.has(connection_id):
                try:
                    aggregate = await run_in_threadpool(aggregator.get, user, connection_id)
                except NotFoundError:
                    continue
                found.append(summary_of_aggregate(aggregate))
                continue
            try:
                local.append(nsi.get(user, connection_id))
            except NotFoundError:
                continue
        return [summary_of(c) for c in local] + found
    wanted = set(query.global_reservation_ids)
    connections = [c for c in _every(nsi, user) if not wanted or c.global_reservation_id in wanted]
    if aggregator is not None:
        aggregates = await run_in_threadpool(_every_aggregate, aggregator, user)
        found = [
            summary_of_aggregate(a)
            for a in aggregates
            if not wanted or a.global_reservation_id in wanted
        ]
    return [summary_of(c) for c in connections] + found


PAGE = 1000


def _every(nsi: Provider, user: User) -> list[Connection]:
    found: list[Connection] = []
    while True:
        page = nsi.connections(user, PAGE, len(found))
        found += page
        if len(page) < PAGE:
            return found


def _every_aggregate(aggregator: Aggregator, user: User) -> list[Aggregate]:
    found: list[Aggregate] = []
    while True:
        page = aggregator.aggregates(user, PAGE, len(found))
        found += page
        if len(page) < PAGE:
            return found


_REST_NAMES: Final = {
    "reserveCommit": "reserve-commit",
    "reserveAbort": "reserve-abort",
    "provision": "provision",
    "release": "release",
    "terminate": "terminate",
}
"""The aggregator knows each request by the name of its REST endpoint."""


def _provider_call(nsi: Provider, operation: str) -> Callable[[User, str], Connection]:
    calls: dict[str, Callable[[User, str], Connection]] = {
        "reserveCommit": nsi.commit,
        "reserveAbort": nsi.abort,
        "provision": nsi.provision,
        "release": nsi.release,
        "terminate": nsi.terminate,
    }
    return calls[operation]


async def _keep_result(
    request: Request,
    nsi: Provider,
    call: soap.NsiRequest,
    header: soap.NsiHeader,
    confirmation: etree._Element,
) -> None:
    """Keep the confirmation for queryResult, as sent (or as it would have been, without a
    replyTo). The request is done whatever happens here: a failure is logged, not
    answered as the request's."""
    connection_id = _connection_id(call) or confirmation.findtext("connectionId") or ""
    at = request.app.state.service.clock()
    kept = etree.tostring(confirmation)
    try:
        await run_in_threadpool(nsi.results.add, connection_id, header.correlation_id, at, kept)
    except Exception:
        log.exception("keeping the result of %s for %s failed", _operation(call), connection_id)


def _is_query(call: soap.NsiRequest) -> TypeGuard[soap.Query | soap.RangedQuery]:
    return isinstance(call, soap.Query | soap.RangedQuery)


def _connection_id(call: soap.NsiRequest | None) -> str | None:
    named = soap.Modify | soap.Act | soap.RangedQuery
    return call.connection_id if isinstance(call, named) else None


async def _body(request: Request) -> bytes:
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY:
        raise soap.NsiError(soap.PAYLOAD_ERROR, f"a request is at most {MAX_BODY} bytes")
    data = bytearray()
    async for chunk in request.stream():
        data += chunk
        if len(data) > MAX_BODY:
            raise soap.NsiError(soap.PAYLOAD_ERROR, f"a request is at most {MAX_BODY} bytes")
    return bytes(data)


def _audit(request: Request, user: User, call: soap.NsiRequest, header: soap.NsiHeader) -> None:
    """One audit event naming the NSI request, instead of the middleware's bare POST."""
    client = request.client
    target = _connection_id(call) or ""
    entry = Entry(
        actor=user.name,
        action=f"SOAP {_operation(call)}",
        target=target or request.url.path,
        source=client.host if client else NOBODY,
        detail=f"correlationId {header.correlation_id}",
    )
    request.app.state.audit_writer.put(request.app.state.service.clock(), entry)
    request.scope[AUDITED] = True


def _operation(call: soap.NsiRequest) -> str:
    if isinstance(call, soap.Reserve):
        return "reserve"
    if isinstance(call, soap.Modify):
        return "reserve (modify)"
    return call.operation


_PENDING: set[asyncio.Task[bool]] = set()
"""Confirmations on their way (the event loop keeps only weak references to tasks)."""


async def _confirm_later(reply_to: str, message: bytes, action: str) -> None:
    task = asyncio.create_task(send_confirmation(reply_to, message, action))
    _PENDING.add(task)
    task.add_done_callback(_PENDING.discard)


async def send_confirmation(
    reply_to: str, message: bytes, action: str, timeout_s: float = REPLY_TIMEOUT_S
) -> bool:
    """POST a confirmation to the requester's replyTo, best effort: a failure is logged,
    and the requester can still learn the outcome with querySummarySync."""
    headers = {"Content-Type": "text/xml; charset=utf-8", "SOAPAction": f'"{action}"'}
    try:
        async with httpx.AsyncClient(timeout=timeout_s) as client:
            answer = await client.post(reply_to, content=message, headers=headers)
    except httpx.HTTPError as exc:
        log.warning("NSI confirmation %s to %s not delivered: %s", action, reply_to, exc)
        return False
    if answer.status_code >= 300:
        log.warning(
            "NSI confirmation %s to %s refused: %s %s",
            action,
            reply_to,
            answer.status_code,
            answer.text[:200],
        )
        return False
    return True


# -- XML helpers -----------------------------------------------------------------------


def _xml(content: bytes, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(content, status, headers, media_type="text/xml; charset=utf-8")
