"""The XML of the NSI CS v2 SOAP binding (`control/nsi/soap.py`): the OGF's example
messages read whole, what is built shaped as they are and valid by the shipped schemas,
and malformed or hostile messages refused."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from lxml import etree

from longhaul.control.nsi import soap as nsi_xml
from longhaul.control.nsi.notifications import (
    DATA_PLANE_STATE_CHANGE,
    ERROR_EVENT,
    RESERVE_TIMEOUT,
    Notification,
)
from longhaul.control.nsi.results import Result
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
    RangedQuery,
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

from ..conftest import T0
from .messages import NETWORK, PROVIDER, REQUESTER, envelope

XSI = "http://www.w3.org/2001/XMLSchema-instance"
FIXTURES = Path(__file__).parent / "fixtures"
SCHEMAS = Path(str(resources.files("longhaul") / "data" / "nsi"))
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
        return nsi_xml.parse_request(nsi_xml.parse_envelope(envelope(body))[1])

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
    ranged = "<connectionId>c-1</connectionId><startNotificationId>2</startNotificationId>"
    assert read(f"<nsi:queryNotificationSync>{ranged}</nsi:queryNotificationSync>") == (
        RangedQuery("queryNotificationSync", "c-1", first=2)
    )
    whole = "<connectionId>c-1</connectionId><endNotificationId>7</endNotificationId>"
    assert read(f"<nsi:queryNotification>{whole}</nsi:queryNotification>") == (
        RangedQuery("queryNotification", "c-1", last=7)
    )
    with pytest.raises(NsiError) as refused:
        read("<nsi:queryNotificationSync/>")
    assert refused.value.error_id == "00101"
    results = "<connectionId>c-1</connectionId><endResultId>3</endResultId>"
    assert read(f"<nsi:queryResultSync>{results}</nsi:queryResultSync>") == (
        RangedQuery("queryResultSync", "c-1", last=3)
    )


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


NOTIFICATIONS = [
    Notification("c-1", 1, RESERVE_TIMEOUT, T0, {
        "timeout_s": 120, "originating_connection_id": "c-1", "originating_nsa": PROVIDER,
    }),
    Notification("c-1", 2, DATA_PLANE_STATE_CHANGE, T0, {
        "active": True, "version": 3, "version_consistent": True,
    }),
    Notification("c-1", 3, ERROR_EVENT, T0, {
        "event": "deactivateFailed", "originating_connection_id": "c-1",
        "originating_nsa": PROVIDER, "text": "session lost",
    }),
]  # fmt: skip


RESULTS = [
    Result(1, f"urn:uuid:{uuid.uuid4()}", T0, etree.tostring(nsi_xml.reserve_confirmed(
        _summary(held=True)))),
    Result(2, f"urn:uuid:{uuid.uuid4()}", T0, etree.tostring(nsi_xml.generic_confirmed(
        "reserveCommitConfirmed", "c-1"))),
]  # fmt: skip


def test_notifications_carry_what_their_types_define():
    timeout, up, failed = (nsi_xml.notification_element(n) for n in NOTIFICATIONS)
    assert etree.QName(timeout).localname == "reserveTimeout"
    assert [c.tag for c in timeout] == [
        "connectionId", "notificationId", "timeStamp", "timeoutValue",
        "originatingConnectionId", "originatingNSA",
    ]  # fmt: skip
    assert timeout.findtext("timeoutValue") == "120"
    assert timeout.findtext("timeStamp") == "2030-01-07T08:00:00Z"
    assert up.findtext("dataPlaneStatus/active") == "true"
    assert up.findtext("dataPlaneStatus/version") == "3"
    assert failed.findtext("event") == "deactivateFailed"


def test_what_the_binding_builds_is_valid_by_the_shipped_schemas(schema):
    up = ConnectionStates(ReservationState.START, ProvisionState.PROVISIONED,
                          LifecycleState.CREATED, True)  # fmt: skip
    child = Child(0, "c-1", "urn:ogf:network:es.net:2026:esnet", "urn:a:1", "urn:a:2", 1000, up)
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
        *(nsi_xml.notification_element(n) for n in NOTIFICATIONS),
        nsi_xml.query_notification_confirmed("queryNotificationSyncConfirmed", NOTIFICATIONS),
        nsi_xml.query_notification_confirmed("queryNotificationConfirmed", []),
        nsi_xml.query_result_confirmed("queryResultSyncConfirmed", RESULTS),
        nsi_xml.query_recursive_confirmed([_summary(False, (child,)), _summary(held=True)]),
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


def test_query_recursive_gives_each_child_its_states_and_criteria():
    up = ConnectionStates(ReservationState.START, ProvisionState.PROVISIONED,
                          LifecycleState.CREATED, True)  # fmt: skip
    child = Child(1, "c-9", "urn:ogf:network:es.net:2026:esnet", "urn:a:1", "urn:a:2", 500, up)
    built = nsi_xml.query_recursive_confirmed([_summary(False, (child,))])
    entry = built.find("reservation/criteria/children/child")
    assert entry.get("order") == "1"
    assert entry.findtext("providerNSA") == "urn:ogf:network:es.net:2026:esnet"
    assert entry.findtext("connectionStates/provisionState") == "Provisioned"
    assert entry.findtext("connectionStates/dataPlaneStatus/active") == "true"
    assert entry.find(f"criteria/{{{P2P}}}p2ps/sourceSTP").text == "urn:a:1"
    assert entry.findtext("criteria/schedule/startTime") == built.findtext(
        "reservation/criteria/schedule/startTime"
    )
