"""Schemathesis against the OpenAPI document: generated requests, valid and not, must
never make the server fail (5xx). Bounded: SQLite, 60 examples per operation (about 10 s; 300 ran clean too).

(Driven through each operation's Hypothesis strategy rather than schemathesis's pytest
plugin, whose `from_fixture` does not run under pytest 9.)
"""

from datetime import timedelta

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error

from longhaul.control.api.app import create_app
from longhaul.control.drivers import LogDriver
from longhaul.control.requests import ReservationRequest
from longhaul.control.service import Service
from longhaul.db import Database, migrate
from longhaul.topology import usn

from ..conftest import T0, Clock

EXAMPLES_PER_OPERATION = 60


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fuzz")
    db = Database(f"sqlite:///{folder}/longhaul.db")
    migrate(db.engine)
    topology = usn()
    service = Service(db, topology, LogDriver(topology, folder / "driver.jsonl"), clock=Clock())
    user, token = service.accounts.add("fuzzer", admin=True)
    for hours in (1, 3, 5):  # something to find, change and cancel
        start = T0 + timedelta(hours=hours)
        request = ReservationRequest(
            src="ORNL",
            dst="SUNNYVALE",
            bandwidth_mbps=1000,
            start=start,
            duration=timedelta(hours=1),
        )
        service.create(user, request)
    yield create_app(service), token
    db.dispose()


def operations():
    return [
        "GET /api/v1/topology",
        "GET /api/v1/availability/fixed-slot",
        "GET /api/v1/availability/earliest-start",
        "GET /api/v1/availability/max-bandwidth",
        "GET /api/v1/availability/all-slots",
        "GET /api/v1/links/{link_id}/free",
        "POST /api/v1/reservations",
        "GET /api/v1/reservations",
        "GET /api/v1/reservations/{reservation_id}",
        "PATCH /api/v1/reservations/{reservation_id}",
        "POST /api/v1/reservations/{reservation_id}/cancel",
        "POST /api/v1/reservations/{reservation_id}/retry",
        "POST /api/v1/reservations/{reservation_id}/clear",
        "GET /api/v1/reservations/{reservation_id}/history",
        "GET /healthz",
        "GET /metrics",
        "GET /api/v1/audit",
        "POST /api/v1/nsi/connections",
        "GET /api/v1/nsi/connections",
        "GET /api/v1/nsi/connections/{connection_id}",
        "GET /api/v1/nsi/connections/{connection_id}/notifications",
        "POST /api/v1/nsi/connections/{connection_id}/modify",
        "POST /api/v1/nsi/connections/{connection_id}/reserve-commit",
        "POST /api/v1/nsi/connections/{connection_id}/reserve-abort",
        "POST /api/v1/nsi/connections/{connection_id}/provision",
        "POST /api/v1/nsi/connections/{connection_id}/release",
        "POST /api/v1/nsi/connections/{connection_id}/terminate",
        "GET /api/v1/nsi/availability/fixed-slot",
        "GET /api/v1/nsi/availability/earliest-start",
        "GET /api/v1/nsi/availability/max-bandwidth",
        "GET /api/v1/nsi/availability/all-slots",
        # Last: these may rotate or revoke the fuzzer's own token.
        "POST /api/v1/users/{name}/token",
        "DELETE /api/v1/users/{name}/token",
        "DELETE /api/v1/users/{name}",
    ]


def test_every_operation_is_fuzzed(fuzzed):
    app, _ = fuzzed
    schema = schemathesis.openapi.from_asgi("/api/v1/openapi.json", app)
    found = {f"{op.ok().method.upper()} {op.ok().path}" for op in schema.get_all_operations()}
    assert found == set(operations())


@pytest.mark.parametrize("operation", operations())
def test_no_request_makes_the_server_fail(fuzzed, operation):
    app, token = fuzzed
    schema = schemathesis.openapi.from_asgi("/api/v1/openapi.json", app)
    method, path = operation.split(" ", 1)
    strategy = schema[path][method].as_strategy()

    @given(case=strategy)
    @settings(
        max_examples=EXAMPLES_PER_OPERATION,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        database=None,
    )
    def call(case):
        case.call_and_validate(
            headers={"Authorization": f"Bearer {token}"}, checks=[not_a_server_error]
        )

    call()
