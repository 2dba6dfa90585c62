"""`/api/v1/nsi/soap`: the NSI CS v2 SOAP binding (GFD.212). A real SOAP client (zeep)
loads the WSDL from a real server and drives a connection through its life; a requester
endpoint receives the confirmations sent to replyTo; the XML mapping is checked on the
OGF's example messages and against the shipped schemas."""

from __future__ import annotations

import http.server
import queue
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from importlib import resources
from pathlib import Path
from typing import Any

import httpx
import pytest
import requests
import zeep
from lxml import etree
from zeep.exceptions import Fault
from zeep.transports import Transport

from longhaul.control.api import nsi_soap
from longhaul.control.errors import ConflictError, NotFoundError, UnavailableError
from longhaul.control.nsi import soap as nsi_xml
from longhaul.control.nsi.aggregator import Aggregate, SegmentView
from longhaul.control.nsi.provider import default_network
from longhaul.control.nsi.soap import (
    HEADERS,
    P2P,
    SOAP_ENV,
    TYPES,
    Act,
    Child,
    Criteria,
    Modify,
    NsiError,
    NsiHeader,
    Query,
    Reserve,
    ServiceException,
    Summary,
    Variable,
)
from longhaul.control.nsi.states import (
    ConnectionStates,
    LifecycleState,
    ProvisionState,
    ReservationState,
)
from longhaul.db.throwaway import free_port
from longhaul.errors import InputError
from longhaul.topology import usn

from ..conftest import T0
from ..live import LiveServer
from .conftest import auth

NETWORK = default_network(usn())
XSI = "http://www.w3.org/2001/XMLSchema-instance"
FIXTURES = Path(__file__).parent / "fixtures" / "nsi"
SCHEMAS = Path(str(resources.files("longhaul") / "data" / "nsi"))
WSDL_PATH = "/api/v1/nsi/soap/provider"
REQUESTER = "urn:ogf:network:example.org:2026:nsa:requester"
PROVIDER = "urn:ogf:network:longhaul.local:2026:nsa"
HOUR = timedelta(hours=1)


def _figure(number: int) -> bytes:
    (path,) = FIXTURES.glob(f"*figure_{number}_*.xml")
    return path.read_bytes()


def _tree(xml: bytes) -> tuple[Any, ...]:
    """A document as names, attributes, text and children: what it says, not how it is
    written (prefixes, spacing, comments, the examples' xsi:schemaLocation)."""

    def node(element: etree._Element) -> tuple[Any, ...]:
        attributes = sorted(
            (k, v) for k, v in element.attrib.items() if k != f"{{{XSI}}}schemaLocation"
        )
        children = [node(c) for c in element if isinstance(c.tag, str)]
        return (element.tag, attributes, (element.text or "").strip(), children)

    return node(etree.fromstring(xml))


def _paths(element: etree._Element) -> list[str]:
    """Each element under `element` as the local names leading to it, in document order."""

    def walk(parent: etree._Element, prefix: str) -> Iterator[str]:
        for child in parent:
            if isinstance(child.tag, str):
                path = prefix + etree.QName(child).localname
                yield path
                yield from walk(child, path + "/")

    return list(walk(element, ""))


# -- the pure mapping, on the OGF's examples ----------------------------------------------


def test_a_reserve_of_the_ogf_examples_is_read_whole():
    header, element = nsi_xml.parse_envelope(_figure(143))
    assert header == NsiHeader(
        correlation_id="urn:uuid:390be79e-5b49-4688-9280-e49b139595e2",
        requester_nsa="urn:ogf:network:es.net:2013:nsa:nsi-requester",
        provider_nsa="urn:ogf:network:es.net:2013:nsa:nsi-aggr-west",
        protocol_version="application/vnd.ogf.nsi.cs.v2.provider+soap",
        reply_to="https://nsi-aggr-west.es.net/requester/reply",
    )
    reserve = nsi_xml.parse_request(element)
    assert reserve == Reserve(
        source_stp="urn:ogf:network:kddilabs.jp:2013:topology:bi-ps?vlan=1780-1782",
        dest_stp="urn:ogf:network:uvalight.net:2013:topology:ps?vlan=1780-1782",
        capacity_mbps=10000,
        start=datetime(2015, 8, 15, 9, 30, 10, tzinfo=UTC),
        end=datetime(2015, 8, 15, 10, 30, 10, tzinfo=UTC),
        global_reservation_id="urn:uuid:83fe4f36-5b38-41b6-bc46-a362a06a54ee",
        description="My example reservation using NSI CS 2.1.",
        directionality="Bidirectional",
        ero=("urn:ogf:network:icair.org:2013:topology:netherlight?vlan=1782",),
        version=1,
    )
    # longhaul chooses its own path: an ero it cannot honour is refused, not ignored.
    refused = nsi_xml.unsupported(reserve)
    assert refused is not None and refused.error_id == "00102"
    assert nsi_xml.unsupported(Reserve("a", "b", 1, T0)) is None


def test_the_modifies_of_the_ogf_examples():
    _, capacity = nsi_xml.parse_envelope(_figure(149))
    assert nsi_xml.parse_request(capacity) == Modify(
        connection_id="urn:uuid:4b4a71d0-3c71-47cf-a646-beacb14a4c72",
        capacity_mbps=500,
        version=2,
    )
    _, start = nsi_xml.parse_envelope(_figure(150))
    # A nil startTime: start now. Asked of longhaul, it is refused (the start cannot move).
    assert nsi_xml.parse_request(start) == Modify(
        connection_id="urn:uuid:4b4a71d0-3c71-47cf-a646-beacb14a4c72",
        start_given=True,
        start=None,
        version=3,
    )


def test_the_other_requests_are_read():
    def read(body: str) -> object:
        return nsi_xml.parse_request(nsi_xml.parse_envelope(_envelope(body))[1])

    for operation in ("reserveCommit", "reserveAbort", "provision", "release", "terminate"):
        body = f"<nsi:{operation}><connectionId>c-1</connectionId></nsi:{operation}>"
        assert read(body) == Act(operation, "c-1")
    ids = "<connectionId>c-1</connectionId><connectionId>c-2</connectionId>"
    assert read(f"<nsi:querySummarySync>{ids}</nsi:querySummarySync>") == Query(
        "querySummarySync", ("c-1", "c-2")
    )
    grid = "<globalReservationId>urn:uuid:1</globalReservationId>"
    assert read(f"<nsi:querySummary>{grid}</nsi:querySummary>") == Query(
        "querySummary", global_reservation_ids=("urn:uuid:1",)
    )
    with pytest.raises(NsiError) as refused:
        read("<nsi:provision/>")
    assert refused.value.error_id == "00101"


def test_a_reserve_response_is_the_ogf_examples():
    header, _ = nsi_xml.parse_envelope(_figure(144))
    built = nsi_xml.envelope(
        nsi_xml.header_element(header, header.protocol_version),
        nsi_xml.reserve_response("urn:uuid:4b4a71d0-3c71-47cf-a646-beacb14a4c72"),
    )
    assert _tree(built) == _tree(_figure(144))


def test_a_service_exception_is_the_ogf_examples():
    example = etree.fromstring(_figure(147)).find(f".//{{{TYPES}}}reserveFailed/serviceException")
    assert example is not None
    for feedback in example.findall(".//feedback"):  # NSI CS 2.1's, not in v2.0's schema
        feedback.getparent().remove(feedback)
    built = nsi_xml.service_exception_element(
        ServiceException(
            nsa_id="urn:ogf:network:icair.org:2013:nsa",
            connection_id="urn:uuid:92d54ff8-dec2-4be8-ae9e-3c0244f2c82b",
            service_type="http://services.ogf.org/nsi/2013/12/descriptions/EVTS.A-GOLE",
            error_id="00705",
            text="CAPACITY_UNAVAILABLE: Insufficient capacity available for reservation "
            "(10000 mb/s).",
            variables=(
                Variable("capacity", "10000", P2P),
                Variable(
                    "destSTP", "urn:ogf:network:icair.org:2013:topology:netherlight?vlan=1782", P2P
                ),
            ),
        ),
        qualified=False,
    )
    assert _tree(etree.tostring(built)) == _tree(etree.tostring(example))


def test_a_reserve_confirmed_has_the_ogf_examples_shape():
    """What longhaul confirms is the example's, less what it does not do (an ero, a
    parameter, symmetricPath)."""
    body = etree.fromstring(_figure(145)).find(f".//{{{TYPES}}}reserveConfirmed")
    assert body is not None
    built = nsi_xml.reserve_confirmed(_summary(held=False))
    dropped = {"symmetricPath", "ero", "orderedSTP", "stp", "parameter"}
    assert _paths(built) == [p for p in _paths(body) if not dropped & set(p.split("/"))]


def _summary(held: bool, children: tuple[Child, ...] = ()) -> Summary:
    criteria = Criteria(
        version=0,
        start=T0 + HOUR,
        end=T0 + 3 * HOUR,
        capacity_mbps=1000,
        source_stp=f"{NETWORK}:ORNL?vlan=1779",
        dest_stp=f"{NETWORK}:SUNNYVALE?vlan=1779",
        children=children,
    )
    versions = (criteria, Criteria(1, T0 + HOUR, T0 + 4 * HOUR, 2000, *_stps(criteria)))
    return Summary(
        connection_id=str(uuid.uuid4()),
        requester_nsa=REQUESTER,
        states=ConnectionStates(
            ReservationState.HELD, None, LifecycleState.CREATED, data_plane_active=False
        ),
        criteria=versions if held else versions[:1],
        global_reservation_id="urn:uuid:83fe4f36-5b38-41b6-bc46-a362a06a54ee",
        description="a test",
    )


def _stps(criteria: Criteria) -> tuple[str, str]:
    return criteria.source_stp, criteria.dest_stp


@pytest.fixture(scope="module")
def schema() -> etree.XMLSchema:
    """The shipped schemas, the p2p service's included (a criteria's p2ps is validated
    where its schema is known)."""
    imports = "".join(
        f'<xsd:import namespace="{ns}" schemaLocation="{(SCHEMAS / name).as_uri()}"/>'
        for ns, name in (
            (TYPES, "ogf_nsi_connection_types_v2_0.xsd"),
            (P2P, "ogf_nsi_services_p2p_v2_0.xsd"),
            (HEADERS, "ogf_nsi_framework_headers_v2_0.xsd"),
        )
    )
    wrapper = (
        '<xsd:schema xmlns:xsd="http://www.w3.org/2001/XMLSchema" '
        f'targetNamespace="urn:longhaul:test">{imports}</xsd:schema>'
    )
    return etree.XMLSchema(etree.fromstring(wrapper))


def test_what_the_binding_builds_is_valid_by_the_shipped_schemas(schema):
    child = Child(0, "c-1", "urn:ogf:network:es.net:2026:esnet", "urn:a:1", "urn:a:2", 1000)
    built = [
        nsi_xml.reserve_response("c-1"),
        nsi_xml.acknowledgment(),
        nsi_xml.generic_confirmed("provisionConfirmed", "c-1"),
        nsi_xml.reserve_confirmed(_summary(held=True)),
        nsi_xml.query_summary_confirmed(
            "querySummarySyncConfirmed",
            [_summary(held=False), _summary(held=True), _summary(False, (child,))],
        ),
        nsi_xml.service_exception_element(
            ServiceException(
                "urn:x", "00203", "no connection c-1", "c-1", None, (Variable("a", "b"),)
            )
        ),
        nsi_xml.header_element(
            NsiHeader("urn:uuid:" + str(uuid.uuid4()), REQUESTER, PROVIDER), "v"
        ),
    ]
    for element in built:
        assert schema.validate(etree.fromstring(etree.tostring(element))), schema.error_log
    # Figure 145 is valid too: the schemas judge as the OGF's examples expect.
    example = etree.fromstring(_figure(145)).find(f".//{{{TYPES}}}reserveConfirmed")
    assert schema.validate(example), schema.error_log


@pytest.mark.parametrize(
    ("message", "error_id"),
    [
        (b"<not xml", "00100"),
        (b"<a/>", "00100"),
        (b'<s:Envelope xmlns:s="%s"><s:Body/></s:Envelope>' % SOAP_ENV.encode(), "00101"),
    ],
)
def test_a_message_that_is_not_an_nsi_request_is_refused(message, error_id):
    with pytest.raises(NsiError) as refused:
        nsi_xml.parse_envelope(message)
    assert refused.value.error_id == error_id


def test_entities_are_not_expanded():
    message = (
        b'<?xml version="1.0"?><!DOCTYPE s [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
        b'<s:Envelope xmlns:s="%s"><s:Header><h:nsiHeader xmlns:h="%s">'
        b"<correlationId>&x;</correlationId></h:nsiHeader></s:Header>"
        b"<s:Body><n:querySummarySync xmlns:n='%s'/></s:Body></s:Envelope>"
    ) % (SOAP_ENV.encode(), HEADERS.encode(), TYPES.encode())
    with pytest.raises(NsiError) as refused:  # the entity stays unexpanded: no correlationId
        nsi_xml.parse_envelope(message)
    assert refused.value.error_id == "00101"


def test_what_each_refusal_is_called():
    def error_id(exc: BaseException) -> str:
        return nsi_soap.service_exception(exc, "urn:x").error_id

    assert error_id(NotFoundError("no connection x")) == "00203"
    assert error_id(ConflictError("terminated already")) == "00201"
    assert error_id(UnavailableError("full", None, None)) == "00705"
    assert error_id(InputError("source_stp", "not of this network")) == "00701"
    assert error_id(InputError("end", "must be after the start")) == "00101"
    assert error_id(RuntimeError("a bug")) == "00500"
    assert "a bug" not in nsi_soap.service_exception(RuntimeError("a bug"), "urn:x").text


# -- in process: raw messages, and a stand-in aggregator --------------------------------


def _envelope(body: str, reply_to: str | None = None) -> bytes:
    cid = f"urn:uuid:{uuid.uuid4()}"
    reply = f"<replyTo>{reply_to}</replyTo>" if reply_to else ""
    return (
        f'<soapenv:Envelope xmlns:soapenv="{SOAP_ENV}" xmlns:header="{HEADERS}" '
        f'xmlns:nsi="{TYPES}" xmlns:p2p="{P2P}"><soapenv:Header><header:nsiHeader>'
        "<protocolVersion>application/vnd.ogf.nsi.cs.v2.provider+soap</protocolVersion>"
        f"<correlationId>{cid}</correlationId><requesterNSA>{REQUESTER}</requesterNSA>"
        f"<providerNSA>{PROVIDER}</providerNSA>{reply}</header:nsiHeader></soapenv:Header>"
        f"<soapenv:Body>{body}</soapenv:Body></soapenv:Envelope>"
    ).encode()


def _reserve_body(source: str, dest: str, mbps: int = 1000) -> str:
    return (
        "<nsi:reserve><criteria><schedule>"
        f"<startTime>{(T0 + HOUR).isoformat()}</startTime>"
        f"<endTime>{(T0 + 3 * HOUR).isoformat()}</endTime></schedule>"
        f"<p2p:p2ps><capacity>{mbps}</capacity><sourceSTP>{source}</sourceSTP>"
        f"<destSTP>{dest}</destSTP></p2p:p2ps></criteria></nsi:reserve>"
    )


def _post(api, account, message: bytes) -> tuple[int, etree._Element]:
    headers = {"Content-Type": "text/xml; charset=utf-8"}
    if account is not None:
        headers |= auth(account)
    answer = api.post(WSDL_PATH, content=message, headers=headers)
    return answer.status_code, etree.fromstring(answer.content)


def _error_id(answer: etree._Element) -> str | None:
    return answer.findtext(".//detail//errorId")


def test_refusals_are_faults_with_gfd_212_error_ids(api, alice):
    assert _error_id(_post(api, alice, b"<not xml")[1]) == "00100"
    status, answer = _post(api, alice, _envelope("<nsi:queryRecursive/>"))
    assert (status, _error_id(answer)) == (500, "00103")
    # querySummary answers at replyTo only.
    assert _error_id(_post(api, alice, _envelope("<nsi:querySummary/>"))[1]) == "00101"
    # The provider posts to replyTo: only to an http(s) URL.
    elsewhere = _envelope("<nsi:querySummary/>", reply_to="file:///etc/passwd")
    assert _error_id(_post(api, alice, elsewhere)[1]) == "00102"
    status, answer = _post(api, None, _envelope("<nsi:querySummarySync/>"))
    assert (status, _error_id(answer)) == (401, "00301")
    status, answer = _post(api, alice, _envelope(_reserve_body(f"{NETWORK}:NOWHERE", "x")))
    assert (status, _error_id(answer)) == (500, "00701")
    assert answer.findtext(".//faultcode") == "soapenv:Client"
    # Each Fault echoes the header it answers.
    assert answer.findtext(f".//{{{HEADERS}}}nsiHeader/requesterNSA") == REQUESTER


def test_the_start_of_a_connection_cannot_be_modified(api, alice):
    body = _reserve_body(f"{NETWORK}:ORNL?vlan=1779", f"{NETWORK}:SUNNYVALE?vlan=1779-1799")
    _, answer = _post(api, alice, _envelope(body))
    cid = answer.findtext(f".//{{{TYPES}}}reserveResponse/connectionId")
    assert cid
    commit = f"<nsi:reserveCommit><connectionId>{cid}</connectionId></nsi:reserveCommit>"
    assert _post(api, alice, _envelope(commit))[0] == 200
    moved = (T0 + 2 * HOUR).isoformat()
    modify = (
        f"<nsi:reserve><connectionId>{cid}</connectionId><criteria version='1'>"
        f"<schedule><startTime>{moved}</startTime></schedule></criteria></nsi:reserve>"
    )
    status, answer = _post(api, alice, _envelope(modify))
    assert (status, _error_id(answer)) == (500, "00102")
    assert answer.findtext(".//detail//connectionId") == cid
    # Its own start again, with a new capacity: a modify like any other.
    same = modify.replace(moved, (T0 + HOUR).isoformat()).replace(
        "</criteria>", "<p2p:capacity>1500</p2p:capacity></criteria>"
    )
    status, answer = _post(api, alice, _envelope(same))
    assert status == 200, etree.tostring(answer)


@dataclass
class FakeAggregator:
    """Stands for `Aggregator`: a connection across domains, without the other domains."""

    aggregate: Aggregate
    asked: list[tuple[str, ...]]

    def is_remote(self, stp: str) -> bool:
        return not stp.startswith(NETWORK + ":")

    def has(self, connection_id: str) -> bool:
        return connection_id == self.aggregate.connection_id

    def reserve(self, actor: Any, request: Any) -> Aggregate:
        self.asked.append(("reserve", request.source_stp, request.dest_stp))
        return self.aggregate

    def act(self, actor: Any, what: str, connection_id: str) -> Aggregate:
        self.asked.append((what, connection_id))
        return self.aggregate

    def get(self, actor: Any, connection_id: str) -> Aggregate:
        return self.aggregate

    def aggregates(self, actor: Any, limit: int, offset: int) -> list[Aggregate]:
        return [self.aggregate][offset : offset + limit]


def test_a_connection_across_domains_goes_to_the_aggregator(api, alice):
    far = "urn:ogf:network:es.net:2026:esnet"
    states = ConnectionStates(
        ReservationState.HELD, ProvisionState.RELEASED, LifecycleState.CREATED, False
    )
    segments = (
        SegmentView(
            NETWORK, "s-1", f"{NETWORK}:ORNL?vlan=1779", f"{NETWORK}:SUNNYVALE?vlan=3020", states
        ),
        SegmentView(far, "s-2", f"{far}:SUNN?vlan=3020", f"{far}:NERSC?vlan=200", states),
    )
    aggregate = Aggregate(
        "agg-1", "", REQUESTER, segments[0].source_stp, segments[1].dest_stp, 1000,
        T0 + HOUR, T0 + 3 * HOUR, segments, states,
    )  # fmt: skip
    fake = FakeAggregator(aggregate, [])
    api.app.state.nsi_aggregator = fake
    _, answer = _post(
        api,
        alice,
        _envelope(_reserve_body(f"{NETWORK}:ORNL?vlan=1779", f"{far}:NERSC?vlan=200-209")),
    )
    assert answer.findtext(f".//{{{TYPES}}}reserveResponse/connectionId") == "agg-1"
    _post(
        api,
        alice,
        _envelope("<nsi:reserveCommit><connectionId>agg-1</connectionId></nsi:reserveCommit>"),
    )
    assert fake.asked == [
        ("reserve", f"{NETWORK}:ORNL?vlan=1779", f"{far}:NERSC?vlan=200-209"),
        ("reserve-commit", "agg-1"),
    ]
    _, answer = _post(
        api,
        alice,
        _envelope(
            "<nsi:querySummarySync><connectionId>agg-1</connectionId></nsi:querySummarySync>"
        ),
    )
    children = answer.findall(".//reservation/criteria/children/child")
    assert [c.findtext("connectionId") for c in children] == ["s-1", "s-2"]
    assert [c.get("order") for c in children] == ["0", "1"]
    assert children[1].findtext("providerNSA") == far


def test_the_wsdl_names_this_server_and_its_imports_are_beside_it(api):
    answer = api.get(WSDL_PATH, params={"wsdl": ""})
    assert answer.status_code == 200
    wsdl = etree.fromstring(answer.content)
    (address,) = wsdl.iterfind(".//{http://schemas.xmlsoap.org/wsdl/soap/}address")
    assert address.get("location") == "http://testserver/api/v1/nsi/soap/provider"
    assert api.get("/api/v1/nsi/soap/provider.wsdl").content == answer.content
    for name in nsi_soap.SCHEMAS[1:]:
        served = api.get(f"/api/v1/nsi/soap/{name}")
        assert served.status_code == 200
        assert served.content == (SCHEMAS / name).read_bytes()  # unchanged
    assert api.get("/api/v1/nsi/soap/..%2f..%2fetc%2fpasswd").status_code == 404
    assert api.get("/api/v1/nsi/soap/README").status_code == 404


# -- a real SOAP client against a real server ---------------------------------------------


class Requester:
    """The requester's SOAP endpoint, where the provider sends confirmations: records
    each, answers with an acknowledgment."""

    def __init__(self) -> None:
        self.received: queue.Queue[etree._Element] = queue.Queue()
        requester = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                requester.received.put(etree.fromstring(self.rfile.read(length)))
                body = nsi_xml.envelope(None, nsi_xml.acknowledgment())
                self.send_response(200)
                self.send_header("Content-Type", "text/xml; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/nsi/requester"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def next(self, timeout_s: float = 15) -> etree._Element:
        return self.received.get(timeout=timeout_s)

    def __enter__(self) -> Requester:
        self.thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


@dataclass
class Soap:
    server: LiveServer
    token: str
    client: zeep.Client
    requester: Requester

    def header(self, reply_to: str | None = None) -> Any:
        make = self.client.get_element(f"{{{HEADERS}}}nsiHeader")
        return make(
            protocolVersion="application/vnd.ogf.nsi.cs.v2.provider+soap",
            correlationId=f"urn:uuid:{uuid.uuid4()}",
            requesterNSA=REQUESTER,
            providerNSA=PROVIDER,
            replyTo=reply_to,
        )

    def call(self, operation: str, reply_to: str | None = None, **body: Any) -> Any:
        header = self.header(reply_to)
        answer = getattr(self.client.service, operation)(**body, _soapheaders=[header])
        # Every answer echoes the request's header, correlationId first of all.
        echoed = answer.header.header  # the WSDL's header part, an nsiHeader
        assert echoed.correlationId == header.correlationId
        assert echoed.requesterNSA == REQUESTER
        return answer.body

    def p2ps(self, source: str, dest: str, mbps: int) -> Any:
        element = self.client.get_element(f"{{{P2P}}}p2ps")
        value = element(
            capacity=mbps, directionality="Bidirectional", sourceSTP=source, destSTP=dest
        )
        return zeep.xsd.AnyObject(element, value)

    def reserve(
        self, mbps: int = 1000, reply_to: str | None = None, days: int = 0, **extra: Any
    ) -> str:
        """A reserve from 1 to 3 hours ahead, `days` later (each test its own days: what
        one leaves held cannot refuse another)."""
        start = datetime.now(UTC).replace(microsecond=0) + timedelta(days=days) + HOUR
        criteria = {
            "schedule": {"startTime": start, "endTime": start + 2 * HOUR},
            "serviceType": nsi_xml.SERVICE_TYPE,
            "_value_1": self.p2ps(
                f"{NETWORK}:ORNL?vlan=1779", f"{NETWORK}:SUNNYVALE?vlan=1779-1799", mbps
            ),
        }
        body = self.call("reserve", reply_to, criteria=criteria, **extra)
        return str(body.connectionId)

    def summary(self, connection_id: str) -> Any:
        (reservation,) = self.call("querySummarySync", connectionId=[connection_id]).reservation
        return reservation


@pytest.fixture(scope="module")
def soap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Soap]:
    server = LiveServer(tmp_path_factory.mktemp("nsi-soap"), None)
    token = server.add_user("alice")
    with server, Requester() as requester, requests.Session() as session:
        session.headers["Authorization"] = f"Bearer {token}"
        transport = Transport(session=session, timeout=30, operation_timeout=60)
        client = zeep.Client(f"{server.url}{WSDL_PATH}?wsdl", transport=transport)
        # The criteria's p2ps is an xsd:any: its schema, served beside the WSDL, is loaded
        # as any requester of the p2p service would.
        client.wsdl.types.add_document_by_url(
            f"{server.url}/api/v1/nsi/soap/ogf_nsi_services_p2p_v2_0.xsd"
        )
        yield Soap(server, token, client, requester)


def _p2ps(criteria: Any) -> Any:
    """The criteria's p2ps, which the client reads with the p2p schema it loaded."""
    (p2ps,) = criteria._value_1
    return p2ps


def test_the_client_loads_the_wsdl_from_the_server(soap):
    assert soap.client.service._binding_options["address"] == f"{soap.server.url}{WSDL_PATH}"


def test_a_connection_through_its_life(soap):
    cid = soap.reserve(globalReservationId="urn:uuid:0b7c6a1e-1b1c-4c7e-9d9a-1f0f2e3d4c5b")
    held = soap.summary(cid)
    assert held.connectionStates.reservationState == "ReserveHeld"
    assert held.connectionStates.provisionState == "Released"
    assert held.connectionStates.lifecycleState == "Created"
    assert held.requesterNSA == REQUESTER
    assert held.globalReservationId == "urn:uuid:0b7c6a1e-1b1c-4c7e-9d9a-1f0f2e3d4c5b"
    (criteria,) = held.criteria
    p2ps = _p2ps(criteria)
    assert (p2ps.capacity, p2ps.directionality) == (1000, "Bidirectional")
    assert p2ps.sourceSTP == f"{NETWORK}:ORNL?vlan=1779"
    assert p2ps.destSTP == f"{NETWORK}:SUNNYVALE?vlan=1779"  # the lowest of the range

    soap.call("reserveCommit", connectionId=cid)
    assert soap.summary(cid).connectionStates.reservationState == "ReserveStart"
    soap.call("provision", connectionId=cid)
    states = soap.summary(cid).connectionStates
    assert (states.provisionState, states.dataPlaneStatus.active) == ("Provisioned", False)

    # Modify: a reserve naming the connection, held beside the committed version.
    modify = {"version": 1, "_value_1": [_capacity(2000)]}
    assert soap.call("reserve", connectionId=cid, criteria=modify).connectionId == cid
    changing = soap.summary(cid)
    assert changing.connectionStates.reservationState == "ReserveHeld"
    assert [(c.version, _p2ps(c).capacity) for c in changing.criteria] == [(0, 1000), (1, 2000)]
    soap.call("reserveCommit", connectionId=cid)
    changed = soap.summary(cid)
    assert [(c.version, _p2ps(c).capacity) for c in changed.criteria] == [(1, 2000)]
    assert changed.connectionStates.dataPlaneStatus.version == 1

    soap.call("release", connectionId=cid)
    assert soap.summary(cid).connectionStates.provisionState == "Released"
    soap.call("terminate", connectionId=cid)
    assert soap.summary(cid).connectionStates.lifecycleState == "Terminated"
    # A terminated connection cannot be terminated again.
    with pytest.raises(Fault) as refused:
        soap.call("terminate", connectionId=cid)
    assert _fault_error_id(refused.value) == "00201"


def _capacity(mbps: int) -> etree._Element:
    element = etree.Element(f"{{{P2P}}}capacity")
    element.text = str(mbps)
    return element


def _fault_error_id(fault: Fault) -> str | None:
    return None if fault.detail is None else fault.detail.findtext(".//errorId")


def test_a_reserve_that_does_not_fit_is_a_fault(soap):
    with pytest.raises(Fault) as refused:
        soap.reserve(mbps=20000, days=1)
    detail = refused.value.detail.find(f"{{{TYPES}}}serviceException")
    assert detail is not None
    assert detail.findtext("errorId") == "00705"
    assert detail.findtext("nsaId") == PROVIDER
    assert detail.findtext("serviceType") == nsi_xml.SERVICE_TYPE
    assert "Mb/s fit" in detail.findtext("text")


def test_an_unknown_connection_is_a_fault(soap):
    for operation in ("reserveCommit", "reserveAbort", "provision", "release", "terminate"):
        with pytest.raises(Fault) as refused:
            soap.call(operation, connectionId="no-such-connection")
        assert _fault_error_id(refused.value) == "00203"
        assert refused.value.detail.findtext(".//connectionId") == "no-such-connection"
    # A query is a filter: an unknown connection is left out.
    body = soap.call("querySummarySync", connectionId=["no-such-connection"])
    assert not body.reservation


def test_confirmations_go_to_reply_to(soap):
    header = soap.header(soap.requester.url)
    now = datetime.now(UTC).replace(microsecond=0)
    criteria = {
        "schedule": {"startTime": now + 5 * HOUR, "endTime": now + 6 * HOUR},
        "_value_1": soap.p2ps(f"{NETWORK}:ORNL?vlan=1790", f"{NETWORK}:SUNNYVALE?vlan=1790", 500),
    }
    answer = soap.client.service.reserve(criteria=criteria, _soapheaders=[header])
    cid = answer.body.connectionId
    confirmed = soap.requester.next()
    got = confirmed.find(f".//{{{TYPES}}}reserveConfirmed")
    assert got is not None
    assert got.findtext("connectionId") == cid
    sent = confirmed.find(f".//{{{HEADERS}}}nsiHeader")
    assert sent.findtext("correlationId") == header.correlationId
    assert sent.findtext("protocolVersion") == "application/vnd.ogf.nsi.cs.v2.requester+soap"
    assert got.find(f"criteria/{{{P2P}}}p2ps/capacity").text == "500"

    soap.call("reserveAbort", soap.requester.url, connectionId=cid)
    aborted = soap.requester.next().find(f".//{{{TYPES}}}reserveAbortConfirmed")
    assert aborted is not None and aborted.findtext("connectionId") == cid
    # Asynchronous querySummary: acknowledged, answered at replyTo.
    soap.call("querySummary", soap.requester.url, connectionId=[cid])
    summary = soap.requester.next().find(f".//{{{TYPES}}}querySummaryConfirmed")
    assert summary is not None
    assert summary.findtext("reservation/connectionStates/reservationState") == "ReserveStart"


def test_an_unreachable_reply_to_leaves_the_answer_alone(soap):
    nowhere = f"http://127.0.0.1:{free_port()}/gone"
    cid = soap.reserve(reply_to=nowhere, mbps=100, days=2)
    soap.call("reserveAbort", connectionId=cid)
    assert soap.requester.received.empty()
    # The failure is logged, and the server answers on.
    deadline = time.monotonic() + 15
    while "not delivered" not in soap.server.log() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert f"reserveConfirmed to {nowhere} not delivered" in soap.server.log()
    assert httpx.get(f"{soap.server.url}/healthz", timeout=10).status_code == 200


def test_without_a_token_the_client_gets_a_fault(soap):
    with requests.Session() as session:
        transport = Transport(session=session, timeout=30, operation_timeout=60)
        client = zeep.Client(f"{soap.server.url}{WSDL_PATH}?wsdl", transport=transport)
        header = soap.header()
        with pytest.raises(Fault) as refused:
            client.service.querySummarySync(_soapheaders=[header])
    assert _fault_error_id(refused.value) == "00301"
