"""The XML of the NSI CS v2 SOAP binding (OGF GFD.212: `ogf_nsi_connection_provider_v2_0.wsdl`
and the schemas it imports, shipped in `longhaul/data/nsi`): requests parsed into
dataclasses, answers and Faults built from them. Pure functions, no I/O: the endpoint
(`longhaul.control.api.nsi_soap`) calls the provider with what these give it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final

from lxml import etree

from longhaul.control.api.schemas import MAX_MBPS
from longhaul.control.nsi.notifications import (
    DATA_PLANE_STATE_CHANGE,
    RESERVE_TIMEOUT,
    Notification,
)
from longhaul.control.nsi.provider import (
    Connection,
)
from longhaul.control.nsi.results import Result
from longhaul.control.nsi.states import ConnectionStates, ProvisionState

SOAP_ENV: Final = "http://schemas.xmlsoap.org/soap/envelope/"
TYPES: Final = "http://schemas.ogf.org/nsi/2013/12/connection/types"
HEADERS: Final = "http://schemas.ogf.org/nsi/2013/12/framework/headers"
P2P: Final = "http://schemas.ogf.org/nsi/2013/12/services/point2point"
XSI: Final = "http://www.w3.org/2001/XMLSchema-instance"
ACTIONS: Final = "http://schemas.ogf.org/nsi/2013/12/connection/service/"
"""The WSDLs' soapAction of an operation is this and its name."""
PROVIDER_PROTOCOL: Final = "application/vnd.ogf.nsi.cs.v2.provider+soap"
REQUESTER_PROTOCOL: Final = "application/vnd.ogf.nsi.cs.v2.requester+soap"
SERVICE_TYPE: Final = "http://services.ogf.org/nsi/2013/12/definitions/EVTS.A-GOLE"
"""The Ethernet VLAN Transfer Service of the v2.0 service definition (a-gole-sd.xml in the
OGF repository), a p2ps whose capacity is in Mb/s, as longhaul's bandwidth is."""
_NSMAP: Final = {"soapenv": SOAP_ENV, "header": HEADERS, "nsi": TYPES, "p2p": P2P}

# -- errors (the ids of GFD.212's error table; the OGF repository's NSIErrorCodes wiki page
#    lists it, and a-gole-sd.xml the point-to-point service's own, 007xx) -----------------

PAYLOAD_ERROR = "00100"
MISSING_PARAMETER = "00101"
UNSUPPORTED_PARAMETER = "00102"
NOT_IMPLEMENTED = "00103"
VERSION_NOT_SUPPORTED = "00104"
INVALID_TRANSITION = "00201"
CONNECTION_NONEXISTENT = "00203"
AUTHENTICATION_FAILURE = "00301"
UNAUTHORIZED = "00302"
INTERNAL_ERROR = "00500"
INTERNAL_NRM_ERROR = "00501"
RESOURCE_UNAVAILABLE = "00600"
UNKNOWN_STP = "00701"
STP_UNAVAILABLE = "00704"
CAPACITY_UNAVAILABLE = "00705"


@dataclass(frozen=True)
class Variable:
    """One of a serviceException's `variables`: what was at fault, and its value."""

    type: str
    value: str
    namespace: str | None = None


@dataclass(frozen=True)
class ServiceException:
    """GFD.212's ServiceExceptionType, the detail of every Fault."""

    nsa_id: str
    error_id: str
    text: str
    connection_id: str | None = None
    service_type: str | None = None
    variables: tuple[Variable, ...] = ()


class NsiError(Exception):
    """A request refused by the SOAP binding itself (unreadable, missing a parameter,
    asking for what longhaul does not do), with the error id to answer."""

    def __init__(
        self, error_id: str, text: str, *variables: Variable, service_type: bool = False
    ) -> None:
        super().__init__(text)
        self.error_id = error_id
        self.text = text
        self.variables = variables
        self.service_type = service_type


# -- requests --------------------------------------------------------------------------


@dataclass(frozen=True)
class NsiHeader:
    """The nsiHeader (ogf_nsi_framework_headers_v2_0.xsd): who asks whom, and where the
    confirmation goes."""

    correlation_id: str
    requester_nsa: str
    provider_nsa: str
    protocol_version: str = PROVIDER_PROTOCOL
    reply_to: str | None = None


@dataclass(frozen=True)
class Reserve:
    """A reserve without a connectionId: a new connection with a p2ps criteria."""

    source_stp: str
    dest_stp: str
    capacity_mbps: int
    end: datetime
    start: datetime | None = None
    """None: now (no startTime, or a nil one)."""
    global_reservation_id: str = ""
    description: str = ""
    directionality: str = "Bidirectional"
    ero: tuple[str, ...] = ()
    version: int | None = None


@dataclass(frozen=True)
class Modify:
    """A reserve with a connectionId: a new version of a committed connection."""

    connection_id: str
    capacity_mbps: int | None = None
    end: datetime | None = None
    start_given: bool = False
    """A startTime was sent (`start`, None if nil): only its current value is accepted."""
    start: datetime | None = None
    version: int | None = None


@dataclass(frozen=True)
class Act:
    """reserveCommit, reserveAbort, provision, release or terminate of a connection."""

    operation: str
    connection_id: str


@dataclass(frozen=True)
class Query:
    """querySummary, querySummarySync or queryRecursive: these connections (by id or
    global reservation id), or all of the requester's when neither is given."""

    operation: str
    connection_ids: tuple[str, ...] = ()
    global_reservation_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class RangedQuery:
    """queryNotification(Sync) or queryResult(Sync): a connection's notifications, or the
    confirmations given for its requests, from `first` to `last` (their notificationIds
    or resultIds, inclusive; None: the oldest, the newest)."""

    operation: str
    connection_id: str
    first: int | None = None
    last: int | None = None

    @property
    def of_results(self) -> bool:
        return self.operation in RESULT_QUERIES


NsiRequest = Reserve | Modify | Act | Query | RangedQuery

ACTS: Final = ("reserveCommit", "reserveAbort", "provision", "release", "terminate")
QUERIES: Final = ("querySummary", "querySummarySync", "queryRecursive")
NOTIFICATION_QUERIES: Final = ("queryNotification", "queryNotificationSync")
RESULT_QUERIES: Final = ("queryResult", "queryResultSync")
ANSWERED_AT_REPLY_TO: Final = (
    "querySummary",
    "queryRecursive",
    "queryNotification",
    "queryResult",
)
"""The queries whose answer is a confirmation sent to replyTo, which they need."""
SYNCHRONOUS_QUERIES: Final = ("querySummarySync", "queryNotificationSync", "queryResultSync")
"""The queries answered in the response; their WSDL's Fault is an `nsi:error`."""

_PARSER = etree.XMLParser(
    resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False, remove_comments=True
)
"""Nothing a message names is fetched or expanded (no external entities, no DTD)."""


def parse_envelope(data: bytes) -> tuple[NsiHeader, etree._Element]:
    """The nsiHeader and the request element of a SOAP 1.1 envelope."""
    try:
        root = etree.fromstring(data, _PARSER)
    except etree.XMLSyntaxError as exc:
        raise NsiError(PAYLOAD_ERROR, f"not well-formed XML: {exc}") from exc
    if root.tag != f"{{{SOAP_ENV}}}Envelope":
        raise NsiError(PAYLOAD_ERROR, f"not a SOAP 1.1 Envelope ({SOAP_ENV}): {root.tag}")
    header = _child(root, "Header", SOAP_ENV)
    nsi_header = None if header is None else _child(header, "nsiHeader", HEADERS)
    if nsi_header is None:
        raise NsiError(
            MISSING_PARAMETER, "the SOAP Header carries no nsiHeader", Variable("nsiHeader", "")
        )
    body = _child(root, "Body", SOAP_ENV)
    request = None if body is None else next(_elements(body), None)
    if request is None:
        raise NsiError(PAYLOAD_ERROR, "the SOAP Body carries no request")
    return parse_header(nsi_header), request


def parse_header(element: etree._Element) -> NsiHeader:
    version = _text(element, "protocolVersion") or PROVIDER_PROTOCOL
    if not version.startswith("application/vnd.ogf.nsi.cs.v2"):
        raise NsiError(
            VERSION_NOT_SUPPORTED,
            f"this provider speaks {PROVIDER_PROTOCOL}, not {version}",
            Variable("protocolVersion", version),
        )
    reply_to = _text(element, "replyTo") or None
    if reply_to is not None and not reply_to.startswith(("http://", "https://")):
        raise NsiError(
            UNSUPPORTED_PARAMETER,
            "replyTo must be an http or https URL",
            Variable("replyTo", reply_to),
        )
    return NsiHeader(
        correlation_id=_required(element, "correlationId"),
        requester_nsa=_text(element, "requesterNSA") or "",
        provider_nsa=_text(element, "providerNSA") or "",
        protocol_version=version,
        reply_to=reply_to,
    )


def parse_request(element: etree._Element) -> NsiRequest:
    """The request a body element asks for; `NsiError` if longhaul cannot tell or does
    not do it."""
    name = etree.QName(element)
    if name.namespace != TYPES:
        raise NsiError(PAYLOAD_ERROR, f"not an NSI CS v2 request: {element.tag}")
    operation = name.localname
    if operation == "reserve":
        return parse_reserve(element)
    if operation in ACTS:
        return Act(operation, _required(element, "connectionId"))
    if operation in QUERIES:
        return Query(
            operation,
            connection_ids=tuple(_texts(element, "connectionId")),
            global_reservation_ids=tuple(_texts(element, "globalReservationId")),
        )
    if operation in NOTIFICATION_QUERIES or operation in RESULT_QUERIES:
        ids = "ResultId" if operation in RESULT_QUERIES else "NotificationId"
        return RangedQuery(
            operation,
            _required(element, "connectionId"),
            first=_optional_integer(element, f"start{ids}"),
            last=_optional_integer(element, f"end{ids}"),
        )
    raise NsiError(PAYLOAD_ERROR, f"{operation} is not a request a provider answers")


def parse_reserve(element: etree._Element) -> Reserve | Modify:
    """A reserve: a new connection, or with a connectionId a modify (whose criteria
    carries what changes: a `p2p:capacity`, a schedule, or a whole p2ps, of which only
    the capacity is read: a connection's STPs do not change)."""
    criteria = _child(element, "criteria")
    if criteria is None:
        raise NsiError(MISSING_PARAMETER, "a reserve needs a criteria", Variable("criteria", ""))
    version_text = criteria.get("version")
    version = None if version_text is None else _integer(version_text, "version")
    schedule = _child(criteria, "schedule")
    start_el = None if schedule is None else _child(schedule, "startTime")
    end_el = None if schedule is None else _child(schedule, "endTime")
    start = None if start_el is None else _instant_of(start_el)
    end = None if end_el is None else _instant_of(end_el)
    p2ps = _child(criteria, "p2ps", P2P)
    connection_id = _text(element, "connectionId")
    if connection_id:
        capacity_el = _child(criteria, "capacity", P2P)
        if capacity_el is None and p2ps is not None:
            capacity_el = _child(p2ps, "capacity")
        return Modify(
            connection_id=connection_id,
            capacity_mbps=None if capacity_el is None else _capacity(capacity_el.text),
            end=end,
            start_given=start_el is not None,
            start=start,
            version=version,
        )
    if p2ps is None:
        raise NsiError(
            MISSING_PARAMETER,
            f"a new reserve's criteria needs a p2ps element ({P2P})",
            Variable("p2ps", "", P2P),
        )
    if end is None:
        # GFD.212 allows an open end; a longhaul reservation always has one.
        raise NsiError(
            MISSING_PARAMETER,
            "give the schedule's endTime: longhaul reserves for a bounded slot",
            Variable("endTime", ""),
        )
    ero = _child(p2ps, "ero")
    return Reserve(
        source_stp=_required(p2ps, "sourceSTP"),
        dest_stp=_required(p2ps, "destSTP"),
        capacity_mbps=_capacity(_required(p2ps, "capacity")),
        start=start,
        end=end,
        global_reservation_id=_text(element, "globalReservationId") or "",
        description=_text(element, "description") or "",
        directionality=_text(p2ps, "directionality") or "Bidirectional",
        ero=() if ero is None else tuple(_deep_texts(ero, "stp")),
        version=version,
    )


def unsupported(request: NsiRequest) -> NsiError | None:
    """What a well-formed request asks that longhaul cannot honour, if anything."""
    if isinstance(request, Reserve) and request.ero:
        return NsiError(
            UNSUPPORTED_PARAMETER,
            "longhaul chooses the path itself: an ero cannot be honoured",
            Variable("ero", " ".join(request.ero), P2P),
            service_type=True,
        )
    if isinstance(request, Reserve) and request.directionality not in (
        "Bidirectional",
        "Unidirectional",
    ):
        return NsiError(
            UNSUPPORTED_PARAMETER,
            f"directionality is Bidirectional or Unidirectional, not {request.directionality}",
            Variable("directionality", request.directionality, P2P),
            service_type=True,
        )
    return None


# -- answers ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Criteria:
    """One version of a connection (GFD.212's criteria), as the p2p service describes it."""

    version: int
    start: datetime
    end: datetime
    capacity_mbps: int
    source_stp: str
    dest_stp: str
    children: tuple[Child, ...] = ()


@dataclass(frozen=True)
class Child:
    """A segment of a connection across domains, as its domain reported it."""

    order: int
    connection_id: str
    provider_nsa: str
    source_stp: str
    dest_stp: str
    capacity_mbps: int
    states: ConnectionStates | None = None
    """Its states, as its domain reported them (what queryRecursive tells of a child)."""


@dataclass(frozen=True)
class Summary:
    """A connection as querySummary and reserveConfirmed describe it."""

    connection_id: str
    requester_nsa: str
    states: ConnectionStates
    criteria: tuple[Criteria, ...]
    """The committed version first, then one held (a modify) if any; a connection never
    committed has only the version held."""
    global_reservation_id: str = ""
    description: str = ""

    @property
    def version(self) -> int:
        return self.criteria[0].version if self.criteria else 0


def header_element(header: NsiHeader, protocol_version: str) -> etree._Element:
    """The nsiHeader of an answer or a confirmation: the request's, correlationId and
    all, without replyTo."""
    element = etree.Element(f"{{{HEADERS}}}nsiHeader", nsmap={"header": HEADERS})
    _add(element, "protocolVersion", protocol_version)
    _add(element, "correlationId", header.correlation_id)
    _add(element, "requesterNSA", header.requester_nsa)
    _add(element, "providerNSA", header.provider_nsa)
    return element


def envelope(header: etree._Element | None, body: etree._Element) -> bytes:
    root = etree.Element(f"{{{SOAP_ENV}}}Envelope", nsmap=_NSMAP)
    if header is not None:
        etree.SubElement(root, f"{{{SOAP_ENV}}}Header").append(header)
    etree.SubElement(root, f"{{{SOAP_ENV}}}Body").append(body)
    return bytes(etree.tostring(root, xml_declaration=True, encoding="UTF-8"))


def reserve_response(connection_id: str) -> etree._Element:
    element = _nsi("reserveResponse")
    _add(element, "connectionId", connection_id)
    return element


def acknowledgment() -> etree._Element:
    return _nsi("acknowledgment")


def generic_confirmed(name: str, connection_id: str) -> etree._Element:
    """reserveCommitConfirmed, reserveAbortConfirmed, provisionConfirmed,
    releaseConfirmed, terminateConfirmed (GenericConfirmedType)."""
    element = _nsi(name)
    _add(element, "connectionId", connection_id)
    return element


def reserve_confirmed(summary: Summary) -> etree._Element:
    """reserveConfirmed: the version just held (the last criteria)."""
    element = _nsi("reserveConfirmed")
    _add(element, "connectionId", summary.connection_id)
    _add_optional(element, "globalReservationId", summary.global_reservation_id)
    _add_optional(element, "description", summary.description)
    element.append(criteria_element(summary.criteria[-1]))
    return element


def query_summary_confirmed(name: str, summaries: Iterable[Summary]) -> etree._Element:
    """querySummaryConfirmed or querySummarySyncConfirmed (QuerySummaryConfirmedType)."""
    return _reservations(name, summaries, criteria_element)


def query_recursive_confirmed(summaries: Iterable[Summary]) -> etree._Element:
    """queryRecursiveConfirmed (QueryRecursiveConfirmedType): as a summary, each child of
    a connection across domains with its own states and criteria. Every domain longhaul
    aggregates is a provider of one segment (none aggregates further), so the tree is one
    level deep."""
    return _reservations("queryRecursiveConfirmed", summaries, recursive_criteria_element)


def _reservations(
    name: str, summaries: Iterable[Summary], criteria_of: Callable[[Criteria], etree._Element]
) -> etree._Element:
    element = _nsi(name)
    for summary in summaries:
        reservation = etree.SubElement(element, "reservation")
        _add(reservation, "connectionId", summary.connection_id)
        _add_optional(reservation, "globalReservationId", summary.global_reservation_id)
        _add_optional(reservation, "description", summary.description)
        for criteria in summary.criteria:
            reservation.append(criteria_of(criteria))
        _add(reservation, "requesterNSA", summary.requester_nsa)
        reservation.append(states_element(summary.states, summary.version))
    return element


def recursive_criteria_element(criteria: Criteria) -> etree._Element:
    """A QueryRecursiveResultCriteriaType: a summary's criteria whose children carry their
    states and their own criteria (same schedule, their STPs)."""
    element = _criteria_head(criteria)
    if criteria.children:
        children = etree.SubElement(element, "children")
        for child in criteria.children:
            entry = _child_entry(children, child)
            if child.states is None:
                raise ValueError(f"child {child.connection_id} has no states to report")
            entry.append(states_element(child.states, criteria.version))
            own = Criteria(
                criteria.version,
                criteria.start,
                criteria.end,
                child.capacity_mbps,
                child.source_stp,
                child.dest_stp,
            )
            entry.append(recursive_criteria_element(own))
    element.append(p2ps_element(criteria.capacity_mbps, criteria.source_stp, criteria.dest_stp))
    return element


def notification_element(notification: Notification) -> etree._Element:
    """A reserveTimeout, dataPlaneStateChange or errorEvent (NotificationBaseType and its
    extensions): the request sent to a requester, or an entry of a queryNotification's
    confirmation."""
    element = _nsi(notification.kind)
    _add(element, "connectionId", notification.connection_id)
    _add(element, "notificationId", str(notification.notification_id))
    _add(element, "timeStamp", instant(notification.at))
    detail = notification.detail
    if notification.kind == DATA_PLANE_STATE_CHANGE:
        status = etree.SubElement(element, "dataPlaneStatus")
        _add(status, "active", "true" if detail["active"] else "false")
        _add(status, "version", str(detail["version"]))
        _add(status, "versionConsistent", "true" if detail["version_consistent"] else "false")
        return element
    if notification.kind == RESERVE_TIMEOUT:
        _add(element, "timeoutValue", str(detail["timeout_s"]))
    else:
        _add(element, "event", detail["event"])
    _add(element, "originatingConnectionId", detail["originating_connection_id"])
    _add(element, "originatingNSA", detail["originating_nsa"])
    return element


def query_notification_confirmed(
    name: str, notifications: Iterable[Notification]
) -> etree._Element:
    """queryNotificationConfirmed or queryNotificationSyncConfirmed
    (QueryNotificationConfirmedType): the notifications, oldest first."""
    element = _nsi(name)
    for notification in notifications:
        element.append(notification_element(notification))
    return element


def query_result_confirmed(name: str, results: Iterable[Result]) -> etree._Element:
    """queryResultConfirmed or queryResultSyncConfirmed (QueryResultConfirmedType): each
    confirmation as it was given, with its resultId, correlationId and time."""
    element = _nsi(name)
    for result in results:
        entry = etree.SubElement(element, "result")
        _add(entry, "resultId", str(result.result_id))
        _add(entry, "correlationId", result.correlation_id)
        _add(entry, "timeStamp", instant(result.at))
        entry.append(etree.fromstring(result.confirmation, _PARSER))
    return element


def criteria_element(criteria: Criteria) -> etree._Element:
    element = _criteria_head(criteria)
    if criteria.children:
        children = etree.SubElement(element, "children")
        for child in criteria.children:
            entry = _child_entry(children, child)
            _add(entry, "serviceType", SERVICE_TYPE)
            entry.append(p2ps_element(child.capacity_mbps, child.source_stp, child.dest_stp))
    element.append(p2ps_element(criteria.capacity_mbps, criteria.source_stp, criteria.dest_stp))
    return element


def _child_entry(children: etree._Element, child: Child) -> etree._Element:
    """A child's order, connectionId and providerNSA: what both kinds of child begin with."""
    entry = etree.SubElement(children, "child", order=str(child.order))
    _add(entry, "connectionId", child.connection_id)
    _add(entry, "providerNSA", child.provider_nsa)
    return entry


def _criteria_head(criteria: Criteria) -> etree._Element:
    """A criteria's version, schedule and service type: what every kind of it begins with."""
    element = etree.Element("criteria", version=str(criteria.version))
    schedule = etree.SubElement(element, "schedule")
    _add(schedule, "startTime", instant(criteria.start))
    _add(schedule, "endTime", instant(criteria.end))
    _add(element, "serviceType", SERVICE_TYPE)
    return element


def p2ps_element(capacity_mbps: int, source_stp: str, dest_stp: str) -> etree._Element:
    element = etree.Element(f"{{{P2P}}}p2ps", nsmap={"p2p": P2P})
    _add(element, "capacity", str(capacity_mbps))
    # A longhaul circuit carries both directions (the emulator's links are full duplex).
    _add(element, "directionality", "Bidirectional")
    _add(element, "sourceSTP", source_stp)
    _add(element, "destSTP", dest_stp)
    return element


def states_element(states: ConnectionStates, version: int) -> etree._Element:
    element = etree.Element("connectionStates")
    _add(element, "reservationState", states.reservation.value)
    # The final v2.0 schema creates the provision machine with the other two (issue 113 of
    # the OGF repository), so it is Released, not absent, before the first commit.
    provision = states.provision or ProvisionState.RELEASED
    _add(element, "provisionState", provision.value)
    _add(element, "lifecycleState", states.lifecycle.value)
    data_plane = etree.SubElement(element, "dataPlaneStatus")
    _add(data_plane, "active", "true" if states.data_plane_active else "false")
    _add(data_plane, "version", str(version))
    # One reservation carries every version longhaul keeps of a connection: the network
    # never runs another one than the version reported.
    _add(data_plane, "versionConsistent", "true")
    return element


def service_exception_element(
    exception: ServiceException, name: str = "serviceException", qualified: bool = True
) -> etree._Element:
    """A ServiceExceptionType: the `nsi:serviceException` of a Fault's detail, or the
    unqualified one inside an `nsi:error`."""
    element = _nsi(name) if qualified else etree.Element(name)
    _add(element, "nsaId", exception.nsa_id)
    _add_optional(element, "connectionId", exception.connection_id or "")
    _add_optional(element, "serviceType", exception.service_type or "")
    _add(element, "errorId", exception.error_id)
    _add(element, "text", exception.text)
    if exception.variables:
        variables = etree.SubElement(element, "variables")
        for variable in exception.variables:
            entry = etree.SubElement(variables, "variable", type=variable.type)
            if variable.namespace is not None:
                entry.set("namespace", variable.namespace)
            _add(entry, "value", variable.value)
    return element


def fault(exception: ServiceException, synchronous_query: bool = False) -> etree._Element:
    """A SOAP 1.1 Fault whose detail is the serviceException; the synchronous queries
    declare theirs as an `nsi:error` wrapping it (their WSDL fault is `error`)."""
    element = etree.Element(f"{{{SOAP_ENV}}}Fault")
    # SOAP 1.1 §4.4.1: Client when the message itself is at fault, Server otherwise.
    client = exception.error_id.startswith(("001", "002", "003", "007"))
    _add(element, "faultcode", "soapenv:Client" if client else "soapenv:Server")
    _add(element, "faultstring", exception.text)
    detail = etree.SubElement(element, "detail")
    if synchronous_query:
        error = detail.makeelement(f"{{{TYPES}}}error", nsmap={"nsi": TYPES})
        error.append(service_exception_element(exception, qualified=False))
        detail.append(error)
    else:
        detail.append(service_exception_element(exception))
    return element


def instant(value: datetime) -> str:
    """ogf_nsi_framework_types' DateTimeType: with a zone, here always Z."""
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _nsi(name: str) -> etree._Element:
    return etree.Element(f"{{{TYPES}}}{name}", nsmap={"nsi": TYPES})


def _add(parent: etree._Element, name: str, text: str) -> etree._Element:
    child = etree.SubElement(parent, name)
    child.text = text
    return child


def _add_optional(parent: etree._Element, name: str, text: str) -> None:
    if text:
        _add(parent, name, text)


def _elements(parent: etree._Element) -> Iterator[etree._Element]:
    return (child for child in parent if isinstance(child.tag, str))


def _child(
    parent: etree._Element, name: str, namespace: str | None = None
) -> etree._Element | None:
    """The first child named `name`. The NSI schemas leave local elements unqualified;
    one qualified by mistake is read too, as long as its local name is right."""
    for child in _elements(parent):
        qname = etree.QName(child)
        if qname.localname == name and (namespace is None or qname.namespace == namespace):
            return child
    return None


def _text(parent: etree._Element, name: str) -> str | None:
    child = _child(parent, name)
    return None if child is None else (child.text or "").strip()


def _texts(parent: etree._Element, name: str) -> list[str]:
    return [
        (child.text or "").strip()
        for child in _elements(parent)
        if etree.QName(child).localname == name
    ]


def _deep_texts(parent: etree._Element, name: str) -> list[str]:
    return [
        (child.text or "").strip()
        for child in parent.iter()
        if isinstance(child.tag, str) and etree.QName(child).localname == name
    ]


def _required(parent: etree._Element, name: str) -> str:
    text = _text(parent, name)
    if not text:
        raise NsiError(
            MISSING_PARAMETER,
            f"{etree.QName(parent).localname} needs a {name}",
            Variable(name, ""),
        )
    return text


def _instant_of(element: etree._Element) -> datetime | None:
    """A DateTimeType (with a zone); None if nil (GFD.212: a nil startTime is now)."""
    name = etree.QName(element).localname
    if element.get(f"{{{XSI}}}nil") in ("true", "1"):
        return None
    text = (element.text or "").strip()
    try:
        value = datetime.fromisoformat(text)
    except ValueError as exc:
        raise NsiError(
            MISSING_PARAMETER, f"{name} is not a date and time: {text!r}", Variable(name, text)
        ) from exc
    if value.tzinfo is None:
        raise NsiError(
            MISSING_PARAMETER,
            f"{name} needs a time zone, e.g. 2030-01-07T09:00:00Z",
            Variable(name, text),
        )
    return value


def _integer(text: str | None, name: str) -> int:
    try:
        return int((text or "").strip())
    except ValueError as exc:
        raise NsiError(
            MISSING_PARAMETER, f"{name} is not an integer: {text!r}", Variable(name, text or "")
        ) from exc


def _optional_integer(parent: etree._Element, name: str) -> int | None:
    text = _text(parent, name)
    return None if text is None else _integer(text, name)


def _capacity(text: str | None) -> int:
    mbps = _integer(text, "capacity")
    if not 0 < mbps <= MAX_MBPS:
        raise NsiError(
            MISSING_PARAMETER,
            f"capacity is in Mb/s, 1 to {MAX_MBPS}; got {mbps}",
            Variable("capacity", str(mbps), P2P),
            service_type=True,
        )
    return mbps


def stps_of(connection: Connection) -> tuple[str, str]:
    return connection.source_stp, connection.dest_stp
