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
from longhaul.control.nsi.soap import (
    HEADERS,
    P2P,
    TYPES,
)
from longhaul.control.nsi.states import (
    ConnectionStates,
    LifecycleState,
    ProvisionState,
    ReservationState,
)
from longhaul.db.throwaway import free_port
from longhaul.errors import InputError

from ..conftest import T0
from ..live import LiveServer
from ..nsi.messages import NETWORK, PROVIDER, REQUESTER, envelope
from .conftest import auth

XSI = "http://www.w3.org/2001/XMLSchema-instance"
FIXTURES = Path(__file__).parent / "fixtures" / "nsi"
SCHEMAS = Path(str(resources.files("longhaul") / "data" / "nsi"))
WSDL_PATH = "/api/v1/nsi/soap/provider"
HOUR = timedelta(hours=1)


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
    status, answer = _post(api, alice, envelope("<nsi:reserveConfirmed/>"))
    assert (status, _error_id(answer)) == (500, "00100")  # a requester's, not a request
    # queryRecursive answers at replyTo only.
    assert _error_id(_post(api, alice, envelope("<nsi:queryRecursive/>"))[1]) == "00101"
    # querySummary and queryNotification answer at replyTo only.
    assert _error_id(_post(api, alice, envelope("<nsi:querySummary/>"))[1]) == "00101"
    notifications = "<nsi:queryNotification><connectionId>c</connectionId></nsi:queryNotification>"
    assert _error_id(_post(api, alice, envelope(notifications))[1]) == "00101"
    # queryNotificationSync of a connection there is not: the sync queries' Fault.
    notifications = notifications.replace("queryNotification>", "queryNotificationSync>")
    status, answer = _post(api, alice, envelope(notifications))
    assert (status, _error_id(answer)) == (500, "00203")
    assert answer.find(f".//detail/{{{TYPES}}}error") is not None
    # The provider posts to replyTo: only to an http(s) URL.
    elsewhere = envelope("<nsi:querySummary/>", reply_to="file:///etc/passwd")
    assert _error_id(_post(api, alice, elsewhere)[1]) == "00102"
    # ... and only where the operator allows (this app: nowhere).
    metadata = envelope("<nsi:querySummary/>", reply_to="http://169.254.169.254/latest/")
    status, answer = _post(api, alice, metadata)
    assert (status, _error_id(answer)) == (500, "00302")
    assert "--nsi-reply-to" in answer.findtext(".//detail//text")
    status, answer = _post(api, None, envelope("<nsi:querySummarySync/>"))
    assert (status, _error_id(answer)) == (401, "00301")
    status, answer = _post(api, alice, envelope(_reserve_body(f"{NETWORK}:NOWHERE", "x")))
    assert (status, _error_id(answer)) == (500, "00701")
    assert answer.findtext(".//faultcode") == "soapenv:Client"
    # Each Fault echoes the header it answers.
    assert answer.findtext(f".//{{{HEADERS}}}nsiHeader/requesterNSA") == REQUESTER


def test_the_start_of_a_connection_cannot_be_modified(api, alice):
    body = _reserve_body(f"{NETWORK}:ORNL?vlan=1779", f"{NETWORK}:SUNNYVALE?vlan=1779-1799")
    _, answer = _post(api, alice, envelope(body))
    cid = answer.findtext(f".//{{{TYPES}}}reserveResponse/connectionId")
    assert cid
    commit = f"<nsi:reserveCommit><connectionId>{cid}</connectionId></nsi:reserveCommit>"
    assert _post(api, alice, envelope(commit))[0] == 200
    moved = (T0 + 2 * HOUR).isoformat()
    modify = (
        f"<nsi:reserve><connectionId>{cid}</connectionId><criteria version='1'>"
        f"<schedule><startTime>{moved}</startTime></schedule></criteria></nsi:reserve>"
    )
    status, answer = _post(api, alice, envelope(modify))
    assert (status, _error_id(answer)) == (500, "00102")
    assert answer.findtext(".//detail//connectionId") == cid
    # Its own start again, with a new capacity: a modify like any other.
    same = modify.replace(moved, (T0 + HOUR).isoformat()).replace(
        "</criteria>", "<p2p:capacity>1500</p2p:capacity></criteria>"
    )
    status, answer = _post(api, alice, envelope(same))
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

    def check_visible(self, actor: Any, connection_id: str) -> None:
        pass

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
        envelope(_reserve_body(f"{NETWORK}:ORNL?vlan=1779", f"{far}:NERSC?vlan=200-209")),
    )
    assert answer.findtext(f".//{{{TYPES}}}reserveResponse/connectionId") == "agg-1"
    _post(
        api,
        alice,
        envelope("<nsi:reserveCommit><connectionId>agg-1</connectionId></nsi:reserveCommit>"),
    )
    assert fake.asked == [
        ("reserve", f"{NETWORK}:ORNL?vlan=1779", f"{far}:NERSC?vlan=200-209"),
        ("reserve-commit", "agg-1"),
    ]
    # Its notifications and results: none of its own kept here for the first, the
    # confirmations this provider gave for the second.
    ask = "<connectionId>agg-1</connectionId>"
    _, told = _post(
        api, alice, envelope(f"<nsi:queryNotificationSync>{ask}</nsi:queryNotificationSync>")
    )
    assert told.find(f".//{{{TYPES}}}queryNotificationSyncConfirmed") is not None
    assert len(told.find(f".//{{{TYPES}}}queryNotificationSyncConfirmed")) == 0
    _, kept = _post(api, alice, envelope(f"<nsi:queryResultSync>{ask}</nsi:queryResultSync>"))
    results = kept.find(f".//{{{TYPES}}}queryResultSyncConfirmed")
    assert [r.findtext("resultId") for r in results.findall("result")] == ["1", "2"]
    assert results.find(f"result/{{{TYPES}}}reserveCommitConfirmed") is not None
    _, answer = _post(
        api,
        alice,
        envelope("<nsi:querySummarySync><connectionId>agg-1</connectionId></nsi:querySummarySync>"),
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
    # Confirmations may go to this machine's loopback (the Requester below), any port.
    # The requesters here name the provider PROVIDER: it is told that is its NSA id.
    server = LiveServer(
        tmp_path_factory.mktemp("nsi-soap"),
        None,
        "--nsi-reply-to",
        "http://127.0.0.1:*",
        "--nsi-nsa-id",
        PROVIDER,
    )
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


def test_a_reply_to_not_allowed_is_refused_before_anything_is_done(soap):
    before = soap.call("querySummarySync").reservation or []
    with pytest.raises(Fault) as refused:
        soap.reserve(reply_to="http://localhost:8801/nsi/requester", mbps=100, days=3)
    assert _fault_error_id(refused.value) == "00302"
    assert len(soap.call("querySummarySync").reservation or []) == len(before)
    assert soap.requester.received.empty()


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


def test_notifications_go_to_the_reserve_s_reply_to_and_can_be_asked_for(soap):
    """The circuit coming up and going down, each told to the replyTo the reserve gave
    (the server's own sender), and read back with queryNotificationSync."""
    now = datetime.now(UTC).replace(microsecond=0)
    criteria = {
        "schedule": {"endTime": now + HOUR},  # from now
        "_value_1": soap.p2ps(f"{NETWORK}:ORNL?vlan=1795", f"{NETWORK}:CHICAGO?vlan=1795", 150),
    }
    header = soap.header(soap.requester.url)
    cid = soap.client.service.reserve(criteria=criteria, _soapheaders=[header]).body.connectionId
    assert soap.requester.next().find(f".//{{{TYPES}}}reserveConfirmed") is not None
    soap.call("reserveCommit", connectionId=cid)
    soap.call("provision", connectionId=cid)
    up = soap.requester.next().find(f".//{{{TYPES}}}dataPlaneStateChange")
    assert up is not None
    assert (up.findtext("connectionId"), up.findtext("notificationId")) == (cid, "1")
    assert up.findtext("dataPlaneStatus/active") == "true"
    soap.call("release", connectionId=cid)
    down = soap.requester.next().find(f".//{{{TYPES}}}dataPlaneStateChange")
    assert (down.findtext("notificationId"), down.findtext("dataPlaneStatus/active")) == (
        "2",
        "false",
    )
    answer = soap.call("queryNotificationSync", connectionId=cid)
    told = [(kind, n.notificationId, n.dataPlaneStatus.active)
            for entry in answer._value_1 for kind, n in entry.items()]  # fmt: skip
    assert told == [("dataPlaneStateChange", 1, True), ("dataPlaneStateChange", 2, False)]
    later = soap.call("queryNotificationSync", connectionId=cid, startNotificationId=2)
    assert len(later._value_1) == 1
    soap.call("terminate", connectionId=cid)


def test_each_confirmation_is_kept_for_query_result(soap):
    cid = soap.reserve(mbps=100, days=4)
    commit = soap.header()
    soap.client.service.reserveCommit(connectionId=cid, _soapheaders=[commit])
    answer = soap.call("queryResultSync", connectionId=cid)
    confirmations = ("reserveConfirmed", "reserveCommitConfirmed", "terminateConfirmed")
    kept = [(r.resultId, r.correlationId, next(c for c in confirmations if r[c] is not None))
            for r in answer.result]  # fmt: skip
    assert [(rid, what) for rid, _, what in kept] == [
        (1, "reserveConfirmed"), (2, "reserveCommitConfirmed"),
    ]  # fmt: skip
    assert kept[1][1] == commit.correlationId
    # The reserveConfirmed as it would have been sent: the criteria held, its VLANs chosen.
    criteria = answer.result[0].reserveConfirmed.criteria
    assert _p2ps(criteria).capacity == 100
    later = soap.call("queryResultSync", connectionId=cid, startResultId=2)
    assert [r.resultId for r in later.result] == [2]
    # Asynchronous: acknowledged, answered at replyTo.
    soap.call("queryResult", soap.requester.url, connectionId=cid, endResultId=1)
    confirmed = soap.requester.next().find(f".//{{{TYPES}}}queryResultConfirmed")
    assert [r.findtext("resultId") for r in confirmed.findall("result")] == ["1"]
    soap.call("terminate", connectionId=cid)


def test_query_recursive_answers_at_reply_to(soap):
    cid = soap.reserve(mbps=150, days=5)
    soap.call("queryRecursive", soap.requester.url, connectionId=[cid])
    confirmed = soap.requester.next().find(f".//{{{TYPES}}}queryRecursiveConfirmed")
    (reservation,) = confirmed.findall("reservation")
    assert reservation.findtext("connectionId") == cid
    assert reservation.findtext("connectionStates/reservationState") == "ReserveHeld"
    assert reservation.find(f"criteria/{{{P2P}}}p2ps/capacity").text == "150"
    assert reservation.find("criteria/children") is None  # this domain's alone
    soap.call("reserveAbort", connectionId=cid)
