"""`/api/v1/nsi/connections`: NSI CS v2 requests over HTTP."""

from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest

from longhaul.control.jobs import JobRunner
from longhaul.control.nsi.provider import default_network

from ..conftest import T0, settle
from .conftest import auth, slow_down_changes

HOUR = timedelta(hours=1)


@pytest.fixture
def net(service):
    return default_network(service.topology)


def body(net, mbps=1000, **extra):
    return {
        "source_stp": f"{net}:ORNL?vlan=1779",
        "dest_stp": f"{net}:SUNNYVALE?vlan=1779-1799",
        "capacity_mbps": mbps,
        "start_time": (T0 + HOUR).isoformat(),
        "end_time": (T0 + 3 * HOUR).isoformat(),
        "global_reservation_id": "urn:uuid:0b7c6a1e-1b1c-4c7e-9d9a-1f0f2e3d4c5b",
        **extra,
    }


def run_due(service):
    runner = JobRunner(service, call_timeout_s=5)
    try:
        settle(runner)
    finally:
        runner.stop()


def test_reserve_commit_provision_release_terminate(api, service, alice, clock, net):
    made = api.post("/api/v1/nsi/connections", json=body(net), headers=auth(alice))
    assert made.status_code == 201, made.text
    held = made.json()
    cid = held["connection_id"]
    assert held["reservation_state"] == "ReserveHeld"
    assert held["provision_state"] is None
    assert held["lifecycle_state"] == "Created"
    assert held["held_until"] == (T0 + timedelta(seconds=120)).isoformat().replace("+00:00", "Z")
    assert held["dest_stp"] == f"{net}:SUNNYVALE?vlan=1779"  # the lowest of the range asked

    def post(what):
        answer = api.post(f"/api/v1/nsi/connections/{cid}/{what}", headers=auth(alice))
        assert answer.status_code == 200, answer.text
        return answer.json()

    assert post("reserve-commit")["provision_state"] == "Released"
    clock.advance(hours=1)
    assert post("provision")["provision_state"] == "Provisioned"
    run_due(service)
    got = api.get(f"/api/v1/nsi/connections/{cid}", headers=auth(alice)).json()
    assert got["data_plane_active"] is True
    assert post("release")["provision_state"] == "Releasing"
    run_due(service)
    got = api.get(f"/api/v1/nsi/connections/{cid}", headers=auth(alice)).json()
    assert (got["provision_state"], got["data_plane_active"]) == ("Released", False)
    assert post("terminate")["lifecycle_state"] == "Terminated"
    told = api.get(f"/api/v1/nsi/connections/{cid}/notifications", headers=auth(alice)).json()
    assert [(n["notification_id"], n["kind"], n["detail"]["active"]) for n in told] == [
        (1, "dataPlaneStateChange", True), (2, "dataPlaneStateChange", False),
    ]  # fmt: skip
    assert told[0]["at"] == (T0 + HOUR).isoformat().replace("+00:00", "Z")
    since = api.get(f"/api/v1/nsi/connections/{cid}/notifications?start=2", headers=auth(alice))
    assert [n["notification_id"] for n in since.json()] == [2]
    reservation = api.get(f"/api/v1/reservations/{got['reservation_id']}", headers=auth(alice))
    assert reservation.json()["state"] == "cancelled"
    listed = api.get("/api/v1/nsi/connections", headers=auth(alice)).json()
    assert [c["connection_id"] for c in listed] == [cid]


def test_a_request_its_state_does_not_allow_is_409(api, alice, net):
    cid = api.post("/api/v1/nsi/connections", json=body(net), headers=auth(alice)).json()[
        "connection_id"
    ]
    answer = api.post(f"/api/v1/nsi/connections/{cid}/provision", headers=auth(alice))
    assert answer.status_code == 409
    assert "commit" in answer.json()["detail"]


def test_a_reserve_that_does_not_fit_is_409_with_what_would_and_leaves_nothing(api, alice, net):
    answer = api.post("/api/v1/nsi/connections", json=body(net, mbps=20_000), headers=auth(alice))
    assert answer.status_code == 409, answer.text
    assert answer.json()["suggestions"]["max_bandwidth_mbps"] == 9600
    assert api.get("/api/v1/nsi/connections", headers=auth(alice)).json() == []


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"source_stp": "urn:ogf:network:es.net:2013:x:1"}, "source_stp"),
        ({"dest_stp": "ORNL"}, "dest_stp"),
        ({"capacity_mbps": True}, "capacity_mbps"),
        ({"end_time": "2030-01-07T09:00:00"}, "end_time"),  # no zone
    ],
)
def test_bad_requests_are_4xx_naming_the_field(api, alice, net, change, field):
    answer = api.post("/api/v1/nsi/connections", json=body(net, **change), headers=auth(alice))
    assert 400 <= answer.status_code < 500, answer.text
    assert field in answer.text


def test_another_users_connection_is_not_found(api, alice, bob, net):
    cid = api.post("/api/v1/nsi/connections", json=body(net), headers=auth(alice)).json()[
        "connection_id"
    ]
    for path in (f"/api/v1/nsi/connections/{cid}", f"/api/v1/nsi/connections/{cid}/terminate"):
        call = api.get if path.endswith(cid) else api.post
        assert call(path, headers=auth(bob)).status_code == 404
    notifications = f"/api/v1/nsi/connections/{cid}/notifications"
    assert api.get(notifications, headers=auth(bob)).status_code == 404
    assert api.get(notifications, headers=auth(alice)).json() == []
    assert api.get("/api/v1/nsi/connections").status_code == 401


def test_the_four_queries_in_one_domain(api, alice, net):
    api.post("/api/v1/nsi/connections", json=body(net, mbps=9000), headers=auth(alice))
    ends = {"source_stp": f"{net}:ORNL", "dest_stp": f"{net}:SUNNYVALE"}
    slot = {"start_time": (T0 + HOUR).isoformat(), "end_time": (T0 + 2 * HOUR).isoformat()}

    def query(name, **params):
        answer = api.get(
            f"/api/v1/nsi/availability/{name}", params={**ends, **params}, headers=auth(alice)
        )
        assert answer.status_code == 200, answer.text
        return answer.json()

    # 9,000 held on one of the two ORNL-SUNNYVALE paths: the other is still whole.
    assert query("max-bandwidth", **slot)["capacity_mbps"] == 9600
    assert query("fixed-slot", capacity_mbps=9600, **slot)["available"] is True
    earliest = query("earliest-start", capacity_mbps=9600, duration="1h", not_before=T0.isoformat())
    assert earliest["start_time"] == T0.isoformat().replace("+00:00", "Z")
    assert [s["network"] for s in earliest["segments"]] == [net]
    window = {"window_start": T0.isoformat(), "window_end": (T0 + 4 * HOUR).isoformat()}
    assert query("all-slots", capacity_mbps=100, duration="1h", **window)["slots"]
    bad = api.get(
        "/api/v1/nsi/availability/max-bandwidth",
        params={**ends, "source_stp": "urn:ogf:network:es.net:2013:x:1", **slot},
        headers=auth(alice),
    )
    assert bad.status_code == 422 and "source_stp" in bad.text


def test_committing_a_change_to_a_circuit_that_is_up_leaves_the_server_answering(
    api, service, alice, clock, net
):
    """The commit of a modify waits for the devices of a circuit that is up, inside the
    write transaction, in a worker thread: the server answers meanwhile."""
    cid = api.post("/api/v1/nsi/connections", json=body(net), headers=auth(alice)).json()[
        "connection_id"
    ]
    for what in ("reserve-commit", "provision"):
        api.post(f"/api/v1/nsi/connections/{cid}/{what}", headers=auth(alice))
    clock.advance(hours=1)
    run_due(service)
    asked, answer = slow_down_changes(service)
    modified = api.post(
        f"/api/v1/nsi/connections/{cid}/modify", json={"capacity_mbps": 2000}, headers=auth(alice)
    )
    assert modified.json()["reservation_state"] == "ReserveHeld"
    with ThreadPoolExecutor(2) as pool:
        try:
            commit = pool.submit(
                api.post, f"/api/v1/nsi/connections/{cid}/reserve-commit", headers=auth(alice)
            )
            assert asked.wait(30)
            seen = pool.submit(api.get, f"/api/v1/nsi/connections/{cid}", headers=auth(alice))
            assert seen.result(timeout=30).json()["reservation_state"] == "ReserveHeld"
            assert not commit.done()
        finally:
            answer.set()
        assert commit.result(timeout=30).json()["capacity_mbps"] == 2000
