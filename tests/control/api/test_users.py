"""`/api/v1/users` and `/api/v1/audit`, and what the audit log records of API requests."""

from ..conftest import T0
from .conftest import auth
from .test_routes import body


def test_rotating_your_own_token_takes_effect_at_once(api, alice):
    answer = api.post("/api/v1/users/alice/token", headers=auth(alice))
    assert answer.status_code == 200 and answer.json()["user"] == "alice"
    new = answer.json()["token"]
    assert api.get("/api/v1/reservations", headers=auth(alice)).status_code == 401
    assert api.get("/api/v1/reservations", headers={"Authorization": f"Bearer {new}"}).is_success


def test_revoking_a_token_and_removing_a_user(api, alice, bob, admin):
    assert api.delete("/api/v1/users/bob/token", headers=auth(alice)).status_code == 403
    assert api.delete("/api/v1/users/alice/token", headers=auth(alice)).status_code == 204
    assert api.get("/api/v1/reservations", headers=auth(alice)).status_code == 401
    assert api.delete("/api/v1/users/admin", headers=auth(bob)).status_code == 403
    assert api.delete("/api/v1/users/bob", headers=auth(admin)).status_code == 204
    assert api.get("/api/v1/reservations", headers=auth(bob)).status_code == 401
    missing = api.delete("/api/v1/users/bob", headers=auth(admin))
    assert missing.status_code == 422 and "no user named 'bob'" in missing.json()["detail"]


def test_the_audit_log_records_who_did_what_from_where_and_how_it_ended(api, alice, admin, clock):
    # A second between requests: the log is in time order.
    created = api.post("/api/v1/reservations", json=body(), headers=auth(alice))
    clock.advance(seconds=1)
    refused = api.post("/api/v1/reservations", json=body(bandwidth_mbps=10**6), headers=auth(alice))
    assert created.status_code == 201 and refused.status_code in (409, 422)
    clock.advance(seconds=1)
    api.get("/api/v1/reservations", headers={"Authorization": "Bearer wrong"})
    clock.advance(seconds=1)
    new = api.post("/api/v1/users/alice/token", headers=auth(alice)).json()["token"]
    clock.advance(seconds=1)
    forbidden = api.get("/api/v1/audit", headers={"Authorization": f"Bearer {new}"})
    assert forbidden.status_code == 403
    log = api.get("/api/v1/audit", headers=auth(admin)).json()
    seen = [(e["actor"], e["action"], e["target"], e["outcome"]) for e in log]
    # Newest first; a read is not recorded, a refusal is; the rotation once.
    assert seen[:5] == [
        ("alice", "GET /api/v1/audit", "/api/v1/audit", "403"),
        ("alice", "token.rotate", "alice", "ok"),
        ("-", "GET /api/v1/reservations", "/api/v1/reservations", "401"),
        ("alice", "POST /api/v1/reservations", "/api/v1/reservations", str(refused.status_code)),
        ("alice", "POST /api/v1/reservations", "/api/v1/reservations", "ok"),
    ]
    assert {e["source"] for e in log[:5]} == {"testclient"}
    assert all(e["at"].startswith(T0.date().isoformat()) for e in log[:5])
    only = api.get("/api/v1/audit", params={"action": "token."}, headers=auth(admin)).json()
    assert [e["action"] for e in only] == ["token.rotate"]
