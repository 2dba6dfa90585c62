"""The HTTP API: reservations, the availability endpoints, errors as problem+json."""

from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest

from longhaul.control.work import PROVISION

from ..conftest import T0
from .conftest import auth, slow_down_changes

HOUR = timedelta(hours=1)
PROBLEM = "application/problem+json"


def body(**change):
    data = {
        "src": {"node": "ornl-e300", "port": "1/0"},
        "dst": {"node": "SUNNYVALE"},
        "bandwidth_mbps": 5000,
        "start": (T0 + HOUR).isoformat(),
        "duration": "PT2H",
        "description": "supernova output",
    }
    data.update(change)
    return {k: v for k, v in data.items() if v is not None}


def test_requests_without_a_valid_token_are_refused(api, alice):
    for headers in ({}, {"Authorization": "Bearer nope"}, {"Authorization": "Basic abc"}):
        answer = api.get("/api/v1/reservations", headers=headers)
        assert answer.status_code == 401
        assert answer.headers["content-type"] == PROBLEM
        assert answer.headers["www-authenticate"] == 'Bearer realm="longhaul"'
        assert "longhaul user add" in answer.json()["detail"]


def test_create_get_list_history(api, alice):
    made = api.post("/api/v1/reservations", json=body(), headers=auth(alice))
    assert made.status_code == 201, made.text
    item = made.json()
    assert made.headers["location"] == f"/api/v1/reservations/{item['id']}"
    assert item["state"] == "scheduled" and item["owner"] == "alice" and item["version"] == 1
    assert item["src"] == {"node": "ornl-e300", "port": "1/0"}
    assert item["dst"] == {"node": "sunnyvale-cdci", "port": None}
    assert item["path"]["nodes"][0] == "ornl-host1" and item["path"]["hops"] == 5
    assert item["start"] == "2030-01-07T09:00:00Z" and item["end"] == "2030-01-07T11:00:00Z"
    got = api.get(f"/api/v1/reservations/{item['id']}", headers=auth(alice)).json()
    assert got == item
    page = api.get("/api/v1/reservations", headers=auth(alice)).json()
    assert page["total"] == 1 and page["items"][0]["id"] == item["id"]
    history = api.get(f"/api/v1/reservations/{item['id']}/history", headers=auth(alice)).json()
    assert [(h["from_state"], h["to_state"], h["actor"]) for h in history] == [
        (None, "requested", "alice"),
        ("requested", "scheduled", "alice"),
    ]


def test_unavailable_is_409_with_suggestions(api, alice):
    for _ in range(2):
        assert (
            api.post(
                "/api/v1/reservations",
                json=body(src={"node": "ORNL"}, bandwidth_mbps=9600),
                headers=auth(alice),
            ).status_code
            == 201
        )
    answer = api.post(
        "/api/v1/reservations",
        json=body(src={"node": "ORNL"}, bandwidth_mbps=150),
        headers=auth(alice),
    )
    assert answer.status_code == 409
    assert answer.headers["content-type"] == PROBLEM
    problem = answer.json()
    assert problem["type"] == "tag:longhaul,2026:problem/unavailable"
    assert problem["suggestions"]["earliest_start"]["start"] == "2030-01-07T11:00:00Z"
    assert problem["suggestions"]["max_bandwidth_mbps"] == 0
    assert problem["instance"] == "/api/v1/reservations"


def test_asap_and_now(api, alice, clock):
    made = api.post(
        "/api/v1/reservations",
        json=body(start="asap", not_before=(T0 + 3 * HOUR).isoformat()),
        headers=auth(alice),
    )
    assert made.json()["start"] == "2030-01-07T11:00:00Z"
    now = api.post(
        "/api/v1/reservations", json=body(start="now", duration=600), headers=auth(alice)
    )
    assert (
        now.json()["start"] == "2030-01-07T08:00:00Z"
        and now.json()["end"] == "2030-01-07T08:10:00Z"
    )


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"start": "2030-01-07T09:00:00"}, "start", "timezone"),
        ({"duration": None}, "body", "give either end or duration"),
        ({"end": "2030-01-07T12:00:00Z"}, "body", "give either end or duration"),
        ({"colour": "red"}, "colour", "Extra inputs are not permitted"),
        ({"bandwidth_mbps": 10**30}, "bandwidth_mbps", "less than or equal to 1000000"),
        ({"bandwidth_mbps": "fast"}, "bandwidth_mbps", "valid integer"),
        ({"src": {"node": "ornl-e300", "port": "9/9"}}, "src", "has no port '9/9'"),
        ({"dst": {"node": "NOWHERE"}}, "dst", "no node or site named 'NOWHERE'"),
        ({"start": "2029-01-01T00:00:00Z"}, "start", "is in the past"),
        ({"duration": "P99999999D"}, "duration", ""),
        ({"loop": "Moon"}, "loop", "no loop-back named 'Moon'"),
        ({"route": ["ornl-xc-1"]}, "route", "walk ends at"),
        # Times and durations stay in the years 1970-2200: a booking until 9999 once made
        # another user's asap request fail with an OverflowError.
        ({"start": "9999-12-31T00:00:00Z"}, "start", "outside the years 1970-2200"),
        ({"duration": None, "end": "9999-12-31T23:59:59Z"}, "end", "outside the years"),
        ({"duration": "P3000000D"}, "duration", "ends after the years 1970-2200"),
        ({"start": "asap", "not_before": "9999-12-31T00:00:00Z"}, "start", "outside the years"),
        ({"bandwidth_mbps": True}, "bandwidth_mbps", "valid integer"),  # was booked as 1 Mb/s
        ({"bandwidth_mbps": "5000"}, "bandwidth_mbps", "valid integer"),
        ({"description": "a\x00b"}, "description", "control character '\\x00' at 1"),
    ],
)
def test_bad_input_is_422_naming_the_field(api, alice, change, field, message):
    answer = api.post("/api/v1/reservations", json=body(**change), headers=auth(alice))
    assert answer.status_code == 422, answer.text
    assert answer.headers["content-type"] == PROBLEM
    problem = answer.json()
    assert problem["title"] == "Invalid input"
    assert any(e["field"] == field and message in e["message"] for e in problem["errors"]), problem


def test_malformed_json_is_422(api, alice):
    answer = api.post(
        "/api/v1/reservations",
        content=b"{not json",
        headers={**auth(alice), "content-type": "application/json"},
    )
    assert answer.status_code == 422
    assert answer.headers["content-type"] == PROBLEM
    # The offset pydantic reports is a position in the text, not a field.
    assert answer.json()["errors"] == [
        {
            "field": "body",
            "message": "not valid JSON at character 1: "
            "Expecting property name enclosed in double quotes",
        }
    ]


def test_users_cannot_see_or_touch_each_others(api, alice, bob, admin):
    rid = api.post("/api/v1/reservations", json=body(), headers=auth(alice)).json()["id"]
    for method, path in [("get", ""), ("get", "/history"), ("post", "/cancel"), ("patch", "")]:
        kwargs = {"json": {"bandwidth_mbps": 1}} if method == "patch" else {}
        answer = getattr(api, method)(
            f"/api/v1/reservations/{rid}{path}", headers=auth(bob), **kwargs
        )
        assert answer.status_code == 404, (method, path)
    assert api.get("/api/v1/reservations", headers=auth(bob)).json()["total"] == 0
    assert api.get("/api/v1/reservations", headers=auth(admin)).json()["total"] == 1
    assert api.post(f"/api/v1/reservations/{rid}/clear", headers=auth(alice)).status_code == 403


def test_modify_and_cancel(api, alice):
    rid = api.post("/api/v1/reservations", json=body(), headers=auth(alice)).json()["id"]
    changed = api.patch(
        f"/api/v1/reservations/{rid}",
        json={"bandwidth_mbps": 6000, "version": 1},
        headers=auth(alice),
    )
    assert changed.status_code == 200 and changed.json()["version"] == 2
    stale = api.patch(
        f"/api/v1/reservations/{rid}",
        json={"bandwidth_mbps": 7000, "version": 1},
        headers=auth(alice),
    )
    assert stale.status_code == 409 and "version 2, not 1" in stale.json()["detail"]
    naive = api.patch(
        f"/api/v1/reservations/{rid}", json={"end": "2030-01-07T12:00:00"}, headers=auth(alice)
    )
    assert naive.status_code == 422
    for change, field in [({}, "body"), ({"version": 2}, "body"), ({"bandwidth_mbps": True},
                          "bandwidth_mbps"), ({"end": "2201-01-01T00:00:00Z"}, "end")]:  # fmt: skip
        refused = api.patch(f"/api/v1/reservations/{rid}", json=change, headers=auth(alice))
        assert refused.status_code == 422, (change, refused.text)
        assert refused.json()["errors"][0]["field"] == field
    assert api.get(f"/api/v1/reservations/{rid}", headers=auth(alice)).json()["version"] == 2
    cancelled = api.post(f"/api/v1/reservations/{rid}/cancel", headers=auth(alice))
    assert cancelled.json()["state"] == "cancelled"
    again = api.post(f"/api/v1/reservations/{rid}/cancel", headers=auth(alice))
    assert again.status_code == 409
    assert api.post(f"/api/v1/reservations/{rid}/retry", headers=auth(alice)).status_code == 409
    assert api.get("/api/v1/reservations/999999", headers=auth(alice)).status_code == 404


def test_list_filters(api, alice):
    first = api.post(
        "/api/v1/reservations", json=body(bandwidth_mbps=100), headers=auth(alice)
    ).json()["id"]
    second = api.post(
        "/api/v1/reservations",
        json=body(bandwidth_mbps=100, start=(T0 + 9 * HOUR).isoformat()),
        headers=auth(alice),
    ).json()["id"]
    api.post(f"/api/v1/reservations/{second}/cancel", headers=auth(alice))

    def ids(**q):
        answer = api.get("/api/v1/reservations", params=q, headers=auth(alice))
        return [r["id"] for r in answer.json()["items"]]

    assert ids(state="scheduled") == [first]
    assert ids(state=["scheduled", "cancelled"]) == [first, second]
    assert ids(since="2030-01-07T12:00:00Z") == [second]
    assert ids(until="2030-01-07T12:00:00Z") == [first]
    assert ids(limit=1, offset=1) == [second]
    assert (
        api.get(
            "/api/v1/reservations", params={"state": "sleeping"}, headers=auth(alice)
        ).status_code
        == 422
    )


# -- the four queries --------------------------------------------------------------------------


@pytest.fixture
def busy(api, alice):
    """Both ORNL-Chicago circuits full from 09:00 to 11:00."""
    for _ in range(2):
        api.post(
            "/api/v1/reservations",
            json=body(src={"node": "ORNL"}, dst={"node": "CHICAGO"}, bandwidth_mbps=9600),
            headers=auth(alice),
        )
    return alice


def test_fixed_slot(api, busy):
    q = {"src": "ORNL", "dst": "CHICAGO", "bandwidth_mbps": 150}
    free = api.get(
        "/api/v1/availability/fixed-slot",
        params={**q, "start": "2030-01-07T11:00:00Z", "end": "2030-01-07T12:00:00Z"},
        headers=auth(busy),
    ).json()
    assert free["path"]["links"] == ["ornl-chicago-1"]
    full = api.get(
        "/api/v1/availability/fixed-slot",
        params={**q, "start": "2030-01-07T10:00:00Z", "end": "2030-01-07T12:00:00Z"},
        headers=auth(busy),
    ).json()
    assert full["path"] is None


def test_earliest_start(api, busy):
    q = {
        "src": "ORNL",
        "dst": "CHICAGO",
        "bandwidth_mbps": 9600,
        "duration": "PT30M",
        "not_before": "2030-01-07T08:00:00Z",
    }
    assert (
        api.get("/api/v1/availability/earliest-start", params=q, headers=auth(busy)).json()["start"]
        == "2030-01-07T08:00:00Z"
    )
    q["not_before"] = "2030-01-07T08:45:00Z"
    assert (
        api.get("/api/v1/availability/earliest-start", params=q, headers=auth(busy)).json()["start"]
        == "2030-01-07T11:00:00Z"
    )
    q["bandwidth_mbps"] = 9601
    assert api.get("/api/v1/availability/earliest-start", params=q, headers=auth(busy)).json() == {
        "start": None,
        "path": None,
    }


def test_max_bandwidth(api, busy):
    q = {
        "src": "ORNL",
        "dst": "CHICAGO",
        "start": "2030-01-07T08:00:00Z",
        "end": "2030-01-07T08:30:00Z",
    }
    assert (
        api.get("/api/v1/availability/max-bandwidth", params=q, headers=auth(busy)).json()[
            "bandwidth_mbps"
        ]
        == 9600
    )
    q["end"] = "2030-01-07T09:30:00Z"
    answer = api.get("/api/v1/availability/max-bandwidth", params=q, headers=auth(busy)).json()
    assert answer["bandwidth_mbps"] == 0 and answer["path"] is None


def test_all_slots(api, busy):
    q = {"src": "ORNL", "dst": "CHICAGO", "bandwidth_mbps": 100, "duration": 1800,
         "window_start": "2030-01-07T08:00:00Z", "window_end": "2030-01-07T13:00:00Z"}  # fmt: skip
    slots = api.get("/api/v1/availability/all-slots", params=q, headers=auth(busy)).json()["slots"]
    assert slots == [
        {"first_start": "2030-01-07T08:00:00Z", "last_start": "2030-01-07T08:30:00Z"},
        {"first_start": "2030-01-07T11:00:00Z", "last_start": "2030-01-07T12:30:00Z"},
    ]


def test_loops_and_routes_in_queries(api, alice):
    q = {
        "src": "ornl-e300:1/0",
        "dst": "ornl-e300:1/1",
        "start": "2030-01-07T08:00:00Z",
        "end": "2030-01-07T09:00:00Z",
    }
    looped = api.get(
        "/api/v1/availability/max-bandwidth",
        params={**q, "loop": "ORNL-Chicago x2"},
        headers=auth(alice),
    ).json()
    assert looped["bandwidth_mbps"] == 4800
    assert looped["path"]["length_miles"] == 2800.2
    both = api.get(
        "/api/v1/availability/max-bandwidth",
        params={**q, "loop": "ORNL local", "route": "ornl-xc-1"},
        headers=auth(alice),
    )
    assert both.status_code == 422 and both.json()["errors"][0]["field"] == "loop"


def test_free_bandwidth_of_a_link(api, busy):
    answer = api.get(
        "/api/v1/links/ornl-chicago-1/free",
        params={"start": "2030-01-07T08:00:00Z", "end": "2030-01-07T12:00:00Z"},
        headers=auth(busy),
    ).json()
    assert answer["capacity_mbps"] == 9600
    assert [(s["at"], s["free_mbps"]) for s in answer["steps"]] == [
        ("2030-01-07T08:00:00Z", 9600), ("2030-01-07T09:00:00Z", 0), ("2030-01-07T11:00:00Z", 9600),
    ]  # fmt: skip
    missing = api.get(
        "/api/v1/links/nope/free",
        params={"start": "2030-01-07T08:00:00Z", "end": "2030-01-07T12:00:00Z"},
        headers=auth(busy),
    )
    assert missing.status_code == 422


def test_query_parameters_are_checked(api, alice):
    bad = api.get(
        "/api/v1/availability/fixed-slot",
        params={
            "src": "ORNL",
            "dst": "ORNL",
            "bandwidth_mbps": 1,
            "start": "2030-01-07T08:00:00Z",
            "end": "2030-01-07T07:00:00Z",
        },
        headers=auth(alice),
    )
    assert bad.status_code == 422
    assert {e["field"] for e in bad.json()["errors"]} == {"dst"}
    naive = api.get(
        "/api/v1/availability/fixed-slot",
        params={
            "src": "ORNL",
            "dst": "CHICAGO",
            "bandwidth_mbps": 1,
            "start": "2030-01-07T08:00:00",
            "end": "2030-01-07T09:00:00Z",
        },
        headers=auth(alice),
    )
    assert naive.status_code == 422 and naive.json()["errors"][0]["field"] == "start"


# -- the rest ---------------------------------------------------------------------------------


def test_topology(api, alice):
    data = api.get("/api/v1/topology", headers=auth(alice)).json()
    assert data["name"] == "usn"
    assert {loop["name"]: loop["rtt_ms"] for loop in data["loops"]}["ORNL-Chicago x1"] == 26.708


def test_health_needs_no_token_and_metrics_an_admin_or_a_metrics_reader(api, alice, admin):
    assert api.get("/healthz").json() == {
        "status": "ok",
        "database": api.app.state.service.db.dialect,
        "topology": "usn",
        "driver": "log",
    }
    api.post("/api/v1/reservations", json=body(), headers=auth(alice))
    assert api.get("/metrics").status_code == 401
    assert api.get("/metrics", headers=auth(alice)).status_code == 403
    _, reader = api.app.state.service.accounts.add("prometheus", metrics=True)
    as_reader = {"Authorization": f"Bearer {reader}"}
    assert api.get("/metrics", headers=as_reader).status_code == 200
    # A metrics reader's token reads nothing else.
    assert api.get("/api/v1/reservations", headers=as_reader).status_code == 403
    metrics = api.get("/metrics", headers=auth(admin))
    assert metrics.headers["content-type"].startswith("text/plain")
    text = metrics.text
    assert 'longhaul_reservations{state="scheduled"} 1.0' in text
    assert (
        'longhaul_http_requests_total{method="POST",route="/api/v1/reservations",status="201"} 1.0'
        in text
    )
    assert "longhaul_http_request_duration_seconds_bucket" in text


def test_the_openapi_document_lists_the_endpoints(api):
    paths = set(api.get("/api/v1/openapi.json").json()["paths"])
    assert {
        "/api/v1/topology", "/api/v1/availability/fixed-slot", "/api/v1/availability/earliest-start",
        "/api/v1/availability/max-bandwidth", "/api/v1/availability/all-slots", "/api/v1/reservations",
        "/api/v1/reservations/{reservation_id}", "/api/v1/reservations/{reservation_id}/cancel",
        "/api/v1/reservations/{reservation_id}/history", "/healthz", "/metrics",
    } <= paths  # fmt: skip
    assert not any(p.startswith(("/login", "/reserve")) for p in paths)


def test_unknown_paths_are_problems_too(api):
    answer = api.get("/api/v1/nothing")
    assert answer.status_code == 404 and answer.headers["content-type"] == PROBLEM


def test_an_idempotency_key_makes_one_reservation_however_often_it_is_sent(api, alice, bob):
    key = {"Idempotency-Key": "upload-2030-01-07-a"}
    first = api.post("/api/v1/reservations", json=body(), headers={**auth(alice), **key})
    again = api.post("/api/v1/reservations", json=body(), headers={**auth(alice), **key})
    assert first.status_code == again.status_code == 201
    assert again.json()["id"] == first.json()["id"]
    assert "idempotent-replayed" not in first.headers
    assert again.headers["idempotent-replayed"] == "true"
    listed = api.get("/api/v1/reservations", headers=auth(alice)).json()
    assert listed["total"] == 1
    # The same key with another request is refused, naming the header.
    other = api.post(
        "/api/v1/reservations", json=body(bandwidth_mbps=100), headers={**auth(alice), **key}
    )
    assert other.status_code == 422
    assert other.json()["errors"][0]["field"] == "Idempotency-Key"
    # Keys are per user: bob's request with alice's key is his own.
    bobs = api.post(
        "/api/v1/reservations", json=body(bandwidth_mbps=100), headers={**auth(bob), **key}
    )
    assert bobs.status_code == 201 and bobs.json()["id"] != first.json()["id"]
    # Without a key, two identical POSTs are two reservations, as before.
    plain = [api.post("/api/v1/reservations", json=body(bandwidth_mbps=10), headers=auth(alice))
             for _ in range(2)]  # fmt: skip
    assert plain[0].json()["id"] != plain[1].json()["id"]
    bad = api.post(
        "/api/v1/reservations", json=body(), headers={**auth(alice), "Idempotency-Key": "a b"}
    )
    assert bad.status_code == 422


def test_an_idempotency_key_is_forgotten_after_a_day(api, alice, clock):
    key = {**auth(alice), "Idempotency-Key": "k"}
    first = api.post("/api/v1/reservations", json=body(start=None, duration="PT1H"), headers=key)
    clock.advance(hours=24, seconds=1)
    later = api.post("/api/v1/reservations", json=body(start=None, duration="PT1H"), headers=key)
    assert first.status_code == later.status_code == 201
    assert later.json()["id"] != first.json()["id"] and "idempotent-replayed" not in later.headers


def test_etag_and_if_match_guard_changes(api, alice):
    created = api.post("/api/v1/reservations", json=body(), headers=auth(alice))
    rid = created.json()["id"]
    assert created.headers["etag"] == '"1"'
    shown = api.get(f"/api/v1/reservations/{rid}", headers=auth(alice))
    assert shown.headers["etag"] == '"1"'
    changed = api.patch(f"/api/v1/reservations/{rid}", json={"bandwidth_mbps": 6000},
                        headers={**auth(alice), "If-Match": '"1"'})  # fmt: skip
    assert changed.status_code == 200 and changed.headers["etag"] == '"2"'
    for stale in ('"1"', 'W/"2"', '"1", "7"'):
        refused = api.patch(f"/api/v1/reservations/{rid}", json={"bandwidth_mbps": 7000},
                            headers={**auth(alice), "If-Match": stale})  # fmt: skip
        assert refused.status_code == 412, (stale, refused.text)
        assert refused.json()["title"] == "Precondition failed"
    listed_ok = api.patch(f"/api/v1/reservations/{rid}", json={"bandwidth_mbps": 7000},
                          headers={**auth(alice), "If-Match": '"9", "2"'})  # fmt: skip
    assert listed_ok.status_code == 200 and listed_ok.headers["etag"] == '"3"'
    # The body's version still works, and still answers 409.
    old = api.patch(f"/api/v1/reservations/{rid}", json={"bandwidth_mbps": 100, "version": 1},
                    headers=auth(alice))  # fmt: skip
    assert old.status_code == 409
    cancel = f"/api/v1/reservations/{rid}/cancel"
    assert api.post(cancel, headers={**auth(alice), "If-Match": '"2"'}).status_code == 412
    done = api.post(cancel, headers={**auth(alice), "If-Match": "*"})
    assert done.status_code == 200 and done.json()["state"] == "cancelled"


def test_a_request_over_the_users_limits_is_403_naming_the_limit(api, service, bob):
    from longhaul.control.policy import Limits, Policy  # noqa: PLC0415

    service.policy = Policy(roles={"user": Limits(max_mbps=5000)})
    refused = api.post("/api/v1/reservations", json=body(bandwidth_mbps=6000), headers=auth(bob))
    assert refused.status_code == 403 and refused.headers["content-type"] == PROBLEM
    problem = refused.json()
    assert (problem["title"], problem["limit"], problem["allowed"], problem["asked"]) == (
        "Over your limits", "max_mbps", "5,000 Mb/s", "6,000 Mb/s")  # fmt: skip


def test_metrics_open_to_anyone_when_asked(service):
    from fastapi.testclient import TestClient  # noqa: PLC0415

    from longhaul.control.api.app import create_app  # noqa: PLC0415

    with TestClient(create_app(service, open_metrics=True)) as client:
        assert client.get("/metrics").status_code == 200


def test_a_user_past_the_rate_limit_gets_429_with_retry_after(service, alice, bob):
    from fastapi.testclient import TestClient  # noqa: PLC0415

    from longhaul.control.api.app import create_app  # noqa: PLC0415

    app = create_app(service, rate_limit_per_s=1.0)
    now = [0.0]
    app.state.rate_limit.clock = lambda: now[0]
    with TestClient(app) as client:
        answers = [client.get("/api/v1/reservations", headers=auth(alice)) for _ in range(3)]
        assert [a.status_code for a in answers] == [200, 200, 429]  # a burst of two
        assert answers[2].headers["retry-after"] == "1"
        assert answers[2].json()["title"] == "Too many requests"
        assert client.get("/api/v1/reservations", headers=auth(bob)).status_code == 200
        now[0] = 1.0  # a second on: one more
        assert client.get("/api/v1/reservations", headers=auth(alice)).status_code == 200
        assert client.get("/api/v1/reservations", headers=auth(alice)).status_code == 429


def test_a_change_waiting_for_its_device_leaves_the_server_answering(api, service, alice, clock):
    """A change to a circuit that is up waits for its device inside the write transaction,
    in a worker thread: reads are answered meanwhile, and a booking waits for its turn in
    a worker thread too, not on the event loop."""
    rid = api.post("/api/v1/reservations", json=body(), headers=auth(alice)).json()["id"]
    clock.advance(hours=1)
    service.work.begin(rid, PROVISION)
    service.work.finish(rid, PROVISION, None)
    asked, answer = slow_down_changes(service)
    later = (T0 + 5 * HOUR).isoformat()
    with ThreadPoolExecutor(3) as pool:
        try:
            change = pool.submit(
                api.patch, f"/api/v1/reservations/{rid}", json={"bandwidth_mbps": 6000},
                headers=auth(alice),
            )  # fmt: skip
            assert asked.wait(30)
            read = pool.submit(api.get, f"/api/v1/reservations/{rid}", headers=auth(alice))
            before = read.result(timeout=30).json()
            assert before["state"] == "active"
            booking = pool.submit(
                api.post, "/api/v1/reservations", json=body(start=later), headers=auth(alice)
            )
            assert pool.submit(api.get, "/healthz").result(timeout=30).status_code == 200
            assert not change.done() and not booking.done()
        finally:
            answer.set()
        assert change.result(timeout=30).json()["version"] == before["version"] + 1
        assert booking.result(timeout=30).status_code == 201
