"""NSI notifications: which transitions they are, stored as they happen, numbered per
connection, read back by range, and sent to the requester's replyTo in order (retried,
given up), on SQLite and PostgreSQL."""

import http.server
import threading
from dataclasses import replace
from datetime import timedelta

import httpx
import pytest
from lxml import etree
from sqlalchemy import select

from longhaul.control.db import NSI_NOTIFICATIONS
from longhaul.control.errors import NotFoundError
from longhaul.control.jobs import JobRunner
from longhaul.control.lifecycle import State
from longhaul.control.nsi import notifier as sending
from longhaul.control.nsi import soap
from longhaul.control.nsi.notifications import (
    ACTIVATE_FAILED,
    DATA_PLANE_STATE_CHANGE,
    DEACTIVATE_FAILED,
    ERROR_EVENT,
    RESERVE_TIMEOUT,
    Noticed,
    noticed,
)
from longhaul.control.nsi.notifier import Notifier
from longhaul.control.nsi.provider import Provider
from longhaul.control.requests import ReservationRequest
from longhaul.control.work import CHANGE_EXPIRED
from longhaul.db.throwaway import free_port

from ..conftest import T0, settle
from .test_provider import HOUR, NET, ask

S = State


@pytest.mark.parametrize(
    ("before", "after", "reason", "expected"),
    [
        (S.HELD, S.EXPIRED, "held, and not committed", Noticed(RESERVE_TIMEOUT)),
        (S.SCHEDULED, S.SCHEDULED, CHANGE_EXPIRED.drops_change, Noticed(RESERVE_TIMEOUT)),
        (S.SCHEDULED, S.SCHEDULED, "change aborted", None),
        (S.PROVISIONING, S.ACTIVE, "up", Noticed(DATA_PLANE_STATE_CHANGE, active=True)),
        (S.ACTIVE, S.RELEASING, "release asked", Noticed(DATA_PLANE_STATE_CHANGE, active=False)),
        (S.ACTIVE, S.ACTIVE, "provision asked", None),
        (S.PROVISIONING, S.FAILED, "port down", Noticed(ERROR_EVENT, event=ACTIVATE_FAILED)),
        (S.SCHEDULED, S.FAILED, "missed", Noticed(ERROR_EVENT, event=ACTIVATE_FAILED)),
        (S.RELEASING, S.FAILED, "lost", Noticed(ERROR_EVENT, event=DEACTIVATE_FAILED)),
        (S.HELD, S.SCHEDULED, "committed", None),
        (S.SCHEDULED, S.PROVISIONING, "its slot began", None),
        (S.RELEASING, S.FINISHED, "down", None),
        (None, S.REQUESTED, "requested", None),
    ],
)
def test_which_transitions_are_notifications(before, after, reason, expected):
    assert noticed(before, after, reason) == expected


NSA = "urn:ogf:network:ornl.gov:2026:nsa:longhaul"


@pytest.fixture
def provider(service, driver):
    return Provider(service, NET, hold=timedelta(seconds=60), nsa_id=NSA)


@pytest.fixture
def runner(service, driver):
    runner = JobRunner(service, call_timeout_s=5)
    yield runner
    runner.stop()


def kinds(notifications):
    return [(n.notification_id, n.kind) for n in notifications]


def test_a_hold_that_times_out_is_a_reserve_timeout(provider, runner, alice, clock):
    held = provider.reserve(alice.user, ask())
    clock.advance(seconds=61)
    settle(runner)
    (timeout,) = provider.notifications_of(alice.user, held.connection_id)
    assert (timeout.notification_id, timeout.kind, timeout.at) == (1, RESERVE_TIMEOUT, clock())
    assert timeout.detail == {
        "timeout_s": 60,
        "originating_connection_id": held.connection_id,
        "originating_nsa": NSA,  # as configured (serve --nsi-nsa-id)
    }


def test_a_circuit_up_down_and_failing_and_a_modify_timing_out(
    provider, runner, driver, alice, clock
):
    cid = provider.reserve(alice.user, ask(start=T0 + HOUR)).connection_id
    provider.commit(alice.user, cid)
    provider.provision(alice.user, cid)
    assert provider.notifications_of(alice.user, cid) == []
    clock.advance(hours=1)
    settle(runner)  # up
    provider.modify(alice.user, cid, capacity_mbps=2000)
    clock.advance(seconds=61)
    settle(runner)  # the change held times out
    driver.fail_release = 99
    provider.release(alice.user, cid)  # down: asked, and failing
    settle(runner)
    found = provider.notifications_of(alice.user, cid)
    assert kinds(found) == [
        (1, DATA_PLANE_STATE_CHANGE), (2, RESERVE_TIMEOUT), (3, DATA_PLANE_STATE_CHANGE),
        (4, ERROR_EVENT),
    ]  # fmt: skip
    assert found[0].detail == {"active": True, "version": 0, "version_consistent": True}
    assert found[2].detail["active"] is False
    assert found[3].detail["event"] == DEACTIVATE_FAILED
    assert "session lost" in found[3].detail["text"]
    # By range, as queryNotification asks: inclusive, either end left open.
    assert kinds(provider.notifications_of(alice.user, cid, 2, 3)) == [
        (2, RESERVE_TIMEOUT), (3, DATA_PLANE_STATE_CHANGE),
    ]  # fmt: skip
    assert kinds(provider.notifications_of(alice.user, cid, first=4)) == [(4, ERROR_EVENT)]
    assert kinds(provider.notifications_of(alice.user, cid, last=1)) == [
        (1, DATA_PLANE_STATE_CHANGE)
    ]


def test_a_circuit_that_cannot_come_up_is_an_error_event(provider, runner, driver, alice, clock):
    driver.fail_provision = 99
    cid = provider.reserve(alice.user, ask(start=T0 + HOUR)).connection_id
    provider.commit(alice.user, cid)
    provider.provision(alice.user, cid)
    clock.advance(hours=1)
    settle(runner)
    (failed,) = provider.notifications_of(alice.user, cid)
    assert (failed.kind, failed.detail["event"]) == (ERROR_EVENT, ACTIVATE_FAILED)


def test_a_reservation_without_a_connection_has_none(service, provider, runner, alice, clock):
    service.create(
        alice.user,
        ReservationRequest(
            src="ORNL", dst="SUNNYVALE", bandwidth_mbps=500, start=T0 + HOUR, duration=HOUR
        ),
    )
    clock.advance(hours=1)
    settle(runner)
    with service.db.read() as session:
        assert session.execute(select(NSI_NOTIFICATIONS)).all() == []


def test_only_who_may_see_the_connection_reads_them(provider, alice, bob, admin):
    cid = provider.reserve(alice.user, ask()).connection_id
    with pytest.raises(NotFoundError):
        provider.notifications_of(bob.user, cid)
    assert provider.notifications_of(admin.user, cid) == []


class Requester:
    """A requester's endpoint: records what it is sent; refuses while `refusing`."""

    def __init__(self) -> None:
        self.received: list[etree._Element] = []
        self.refusing = False
        requester = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if requester.refusing:
                    self.send_response(503)
                    self.end_headers()
                    return
                requester.received.append(etree.fromstring(body))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *_args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/nsi/requester"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def requester():
    found = Requester()
    yield found
    found.close()


def test_they_are_sent_to_the_reserve_s_reply_to_in_order_and_retried(
    provider, runner, requester, alice, clock
):
    asked = replace(ask(start=T0 + HOUR), notify_to=requester.url)
    cid = provider.reserve(alice.user, asked).connection_id
    quiet = provider.reserve(alice.user, ask(start=T0 + 5 * HOUR)).connection_id  # no replyTo
    provider.commit(alice.user, cid)
    provider.provision(alice.user, cid)
    clock.advance(hours=1)
    settle(runner)  # cid up (1)
    clock.advance(seconds=61)
    settle(runner)  # quiet's hold times out: stored, not sent anywhere
    notifier = Notifier(provider.notifications, clock, timeout_s=5)
    with httpx.Client(timeout=5) as client:
        requester.refusing = True
        assert notifier.send_due(client) == 0
        provider.release(alice.user, cid)
        settle(runner)  # cid down (2): waits behind 1, which failed
        clock.advance(seconds=1)
        assert notifier.send_due(client) == 0  # tried again after 1 s, refused again
        requester.refusing = False
        assert notifier.send_due(client) == 0  # the next wait is 2 s
        clock.advance(seconds=2)
        assert notifier.send_due(client) == 2
        assert notifier.send_due(client) == 0  # nothing twice
    sent = [m.find(f".//{{{soap.TYPES}}}dataPlaneStateChange") for m in requester.received]
    assert [(m.findtext("notificationId"), m.findtext("dataPlaneStatus/active")) for m in sent] == [
        ("1", "true"), ("2", "false"),
    ]  # fmt: skip
    header = requester.received[0].find(f".//{{{soap.HEADERS}}}nsiHeader")
    assert header.findtext("providerNSA") == NSA
    assert header.findtext("requesterNSA") == asked.requester_nsa
    assert header.findtext("protocolVersion") == soap.REQUESTER_PROTOCOL
    assert len(provider.notifications_of(alice.user, quiet)) == 1


def test_one_that_is_never_accepted_is_given_up(provider, runner, requester, alice, clock):
    held = provider.reserve(alice.user, replace(ask(), notify_to=requester.url))
    clock.advance(seconds=61)
    settle(runner)
    requester.refusing = True
    notifier = Notifier(provider.notifications, clock, timeout_s=5)
    with httpx.Client(timeout=5) as client:
        for _ in range(sending.MAX_ATTEMPTS + 2):
            notifier.send_due(client)
            clock.advance(seconds=2**sending.MAX_ATTEMPTS)
    with provider.service.db.read() as session:
        (attempts,) = session.execute(select(NSI_NOTIFICATIONS.c.attempts)).one()
    assert attempts == sending.MAX_ATTEMPTS
    # Still there to be asked for.
    assert kinds(provider.notifications_of(alice.user, held.connection_id)) == [
        (1, RESERVE_TIMEOUT)
    ]
