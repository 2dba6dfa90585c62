"""A real server in a subprocess: concurrent admission, a kill -9 and a restart, the CLI
clients, and TLS with client certificates."""

import json
import random
import ssl
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from longhaul.control.audit import overbookings
from longhaul.db import Database
from longhaul.topology import usn

from .live import LiveServer

ENDS = [
    "ORNL",
    "CHICAGO",
    "SEATTLE",
    "SUNNYVALE",
    "ornl-e300:1/0",
    "ornl-e300:1/1",
    "chicago-e300",
    "sunnyvale-e300",
]


def end_json(text):
    node, _, port = text.partition(":")
    return {"node": node, "port": port} if port else {"node": node}


@pytest.mark.parametrize("workers", [1, 2])
def test_concurrent_requests_never_overbook_a_link(tmp_path, db_url, workers):
    """At least 500 requests from 16 threads for overlapping slots, to one server process
    or two; then every stored booking is checked by brute force."""
    with LiveServer(tmp_path, db_url, "--workers", str(workers)) as server:
        token = server.add_user("load")
        base = datetime.now(UTC).replace(microsecond=0) + timedelta(hours=1)
        rng = random.Random(7)
        plan = []
        for _ in range(512):
            src, dst = rng.sample(ENDS, 2)
            plan.append({
                "src": end_json(src), "dst": end_json(dst),
                "bandwidth_mbps": rng.choice([1000, 2400, 3000, 4800, 6000]),
                "start": (base + timedelta(minutes=rng.randrange(0, 180, 15))).isoformat(),
                "duration": rng.choice([900, 1800, 3600, 7200]),
            })  # fmt: skip
        statuses: list[int] = []
        lock = threading.Lock()

        def client(requests):
            with httpx.Client(
                base_url=server.url, headers={"Authorization": f"Bearer {token}"}, timeout=60
            ) as http:
                for body in requests:
                    status = http.post("/api/v1/reservations", json=body).status_code
                    with lock:
                        statuses.append(status)

        with ThreadPoolExecutor(16) as pool:
            list(pool.map(client, [plan[k::16] for k in range(16)]))
    assert len(statuses) == 512
    assert set(statuses) <= {201, 409, 422}, sorted(set(statuses))
    admitted, refused = statuses.count(201), statuses.count(409)
    assert admitted > 50 and refused > 50, (admitted, refused)  # there was contention
    db = Database(db_url)
    assert overbookings(db, usn()) == []
    db.dispose()


def test_a_killed_server_reconciles_when_it_restarts(tmp_path):
    server = LiveServer(tmp_path).start()
    try:
        token = server.add_user("alice")
        start = datetime.now(UTC) + timedelta(seconds=4)
        # The slot outlasts a restart on a loaded machine (a server takes 3-6 s to answer),
        # so the restarted server finds it under way, not missed.
        body = {"src": {"node": "ORNL"}, "dst": {"node": "CHICAGO"}, "bandwidth_mbps": 1000,
                "start": start.isoformat(), "duration": 15}  # fmt: skip
        made = httpx.post(
            f"{server.url}/api/v1/reservations",
            json=body,
            headers={"Authorization": f"Bearer {token}"},
        ).json()
        assert made["state"] == "scheduled"
        server.kill_9()  # between scheduling and the start
        time.sleep(max(0.0, (start - datetime.now(UTC)).total_seconds()) + 1)
        server.start()  # after the start: it must provision late, then finish

        def state():
            return httpx.get(
                f"{server.url}/api/v1/reservations/{made['id']}",
                headers={"Authorization": f"Bearer {token}"},
            ).json()["state"]

        deadline = time.monotonic() + 45
        while time.monotonic() < deadline and state() != "finished":
            time.sleep(0.2)
        history = httpx.get(
            f"{server.url}/api/v1/reservations/{made['id']}/history",
            headers={"Authorization": f"Bearer {token}"},
        ).json()
        assert [h["to_state"] for h in history] == [
            "requested",
            "scheduled",
            "provisioning",
            "active",
            "releasing",
            "finished",
        ]
        assert "late start" in history[2]["reason"]
        driver_log = [
            json.loads(line) for line in (tmp_path / "driver-log.jsonl").read_text().splitlines()
        ]
        assert [entry["op"] for entry in driver_log] == ["provision", "release"]
    finally:
        server.stop()


def test_with_two_workers_one_runs_the_jobs(tmp_path):
    with LiveServer(tmp_path, None, "--workers", "2") as server:
        token = server.add_user("alice")
        with httpx.Client(
            base_url=server.url, headers={"Authorization": f"Bearer {token}"}
        ) as http:
            made = []
            for k in range(4):  # spread over both workers by the kernel's accept balancing
                start = datetime.now(UTC) + timedelta(seconds=1 + k % 2)
                body = {"src": {"node": "ORNL"}, "dst": {"node": "CHICAGO"}, "bandwidth_mbps": 100,
                        "start": start.isoformat(), "duration": 2}  # fmt: skip
                made.append(http.post("/api/v1/reservations", json=body).json()["id"])

            def states():
                return {http.get(f"/api/v1/reservations/{rid}").json()["state"] for rid in made}

            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and states() != {"finished"}:
                time.sleep(0.2)
            assert states() == {"finished"}
            # Both workers answer metrics that add up across them.
            reader = server.add_user("prometheus", "--metrics")
            metrics = http.get("/metrics", headers={"Authorization": f"Bearer {reader}"}).text
        driver_log = (tmp_path / "driver-log.jsonl").read_text().splitlines()
        ops = [(e["reservation"], e["op"]) for e in map(json.loads, driver_log)]
        for rid in made:
            assert [op for r, op in ops if r == rid] == ["provision", "release"], rid
        created = (
            'longhaul_http_requests_total{method="POST",route="/api/v1/reservations",status="201"}'
        )
        assert f"{created} 4.0" in metrics


def test_the_cli_clients(tmp_path):
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config")}
    with LiveServer(tmp_path) as server:
        token = server.add_user("alice")
        login = server.cli("login", "--token", token, env=env)
        assert "Signed in" in login.stdout
        assert (tmp_path / "config" / "longhaul" / "client.toml").stat().st_mode & 0o777 == 0o600
        start = (datetime.now(UTC) + timedelta(hours=2)).replace(microsecond=0).isoformat()
        made = server.cli("reserve", "--src", "ornl-e300:1/0", "--dst", "SUNNYVALE", "--bandwidth", "9000",
                          "--duration", "1h", "--start", start, "--json", env=env)  # fmt: skip
        rid = json.loads(made.stdout)["id"]
        # The host behind port 1/0 has a 10 Gb/s NIC: a second 9,000 from it cannot fit.
        refused = server.cli("reserve", "--src", "ornl-e300:1/0", "--dst", "CHICAGO", "--bandwidth", "9000",
                             "--duration", "1h", "--start", start, env=env, check=False)  # fmt: skip
        assert refused.returncode == 2
        assert (
            "is not free" in refused.stderr
            and "the earliest start with that bandwidth" in refused.stderr
        )
        listing = server.cli("reservations", env=env)
        assert "scheduled" in listing.stdout and "1 of 1" in listing.stdout
        shown = server.cli("show", str(rid), env=env)
        assert "requested" in shown.stdout and "scheduled" in shown.stdout
        # Longer on the same path; then more than the host's NIC can carry, which is refused
        # and leaves the reservation as it was.
        end = (datetime.fromisoformat(start) + timedelta(hours=3)).isoformat()
        longer = server.cli("modify", str(rid), "--end", end, env=env)
        assert "scheduled" in longer.stdout and "to " in longer.stdout
        too_much = server.cli("modify", str(rid), "--bandwidth", "12000", env=env, check=False)
        assert too_much.returncode == 2 and "unchanged" in too_much.stderr
        assert "nothing to change" in server.cli("modify", str(rid), env=env, check=False).stderr
        shown = json.loads(server.cli("show", str(rid), "--json", env=env).stdout)
        assert shown["bandwidth_mbps"] == 9000 and shown["version"] == 2
        assert "cancelled" in server.cli("cancel", str(rid), env=env).stdout
        no_token = server.cli(
            "reservations", env={"XDG_CONFIG_HOME": str(tmp_path / "empty")}, check=False
        )
        assert no_token.returncode == 2 and "longhaul login" in no_token.stderr
    unreachable = server.cli("reservations", env=env, check=False)
    assert unreachable.returncode == 1 and "is `longhaul serve` running?" in unreachable.stderr


def test_tls_with_a_client_certificate(tmp_path):
    from .certificates import issue  # noqa: PLC0415

    # CN first in the certificate, as `openssl req -subj /CN=carol/O=ORNL` makes it (RFC
    # 4514 writes the last first), and the README's spelling for the user: one name.
    ca, client_cert, client_key = issue(tmp_path, "O=ORNL,CN=carol")
    with LiveServer(tmp_path, None, "--tls", "--client-ca", str(ca)) as server:
        server.add_user("carol", "--cert-subject", "CN=carol,O=ORNL")
        server_cert = tmp_path / "tls" / "server.crt"
        assert server_cert.exists()
        signed = ssl.create_default_context(cafile=server_cert)
        signed.load_cert_chain(client_cert, client_key)
        with httpx.Client(base_url=server.url, verify=signed) as http:
            answer = http.get("/api/v1/reservations")
            assert answer.status_code == 200, answer.text
        # The CLI signs in by certificate too.
        env = {"XDG_CONFIG_HOME": str(tmp_path / "config"), "LONGHAUL_CA": str(server_cert),
               "LONGHAUL_CERT": str(client_cert), "LONGHAUL_KEY": str(client_key)}  # fmt: skip
        assert "0 of 0" in server.cli("reservations", env=env).stdout
        with httpx.Client(
            base_url=server.url, verify=ssl.create_default_context(cafile=server_cert)
        ) as anonymous:
            assert anonymous.get("/api/v1/reservations").status_code == 401
        with pytest.raises(httpx.TransportError):
            httpx.get(f"{server.url}/healthz", verify=True)  # not a publicly trusted certificate
        # Bound to its issuer: the test CA signs carol in; a user bound to another CA is
        # refused with the same certificate.
        server.cli("user", "revoke", "carol", "--certificate")
        server.add_user("carol2", "--cert-subject", "CN=carol,O=ORNL",
                        "--cert-issuer", "CN=another CA")  # fmt: skip
        with httpx.Client(base_url=server.url, verify=signed) as http:
            refused = http.get("/api/v1/reservations")
            assert refused.status_code == 401 and "issued by" in refused.text
        server.cli("user", "remove", "carol2")
        server.add_user("carol3", "--cert-subject", "CN=carol,O=ORNL",
                        "--cert-issuer", "cn=longhaul test CA")  # fmt: skip
        with httpx.Client(base_url=server.url, verify=signed) as http:
            assert http.get("/api/v1/reservations").status_code == 200


def test_the_cli_driver_provisions_through_the_simulated_switches(tmp_path):
    """`longhaul serve --driver cli` against `longhaul devices serve`: a reservation that
    starts now is configured on every switch of its path over SSH, and removed when
    cancelled."""
    from longhaul.control.devices.inventory import Inventory  # noqa: PLC0415
    from longhaul.control.drivers import Circuit, CircuitStatus  # noqa: PLC0415
    from longhaul.control.drivers.cli import CliDriver  # noqa: PLC0415
    from longhaul.topology import usn  # noqa: PLC0415

    inventory = tmp_path / "devices.toml"
    devices = subprocess.Popen([sys.executable, "-m", "longhaul", "devices", "serve",
                                "--inventory", str(inventory), "--listen", "127.0.0.1:0"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert devices.stdout is not None
        assert "serving" in devices.stdout.readline(), devices.stderr.read()
        env = {"XDG_CONFIG_HOME": str(tmp_path / "config")}
        with LiveServer(tmp_path, None, "--driver", "cli", "--devices", str(inventory)) as server:
            server.cli("login", "--token", server.add_user("alice"), env=env)
            made = server.cli("reserve", "--src", "ornl-e300:1/0", "--dst", "sunnyvale-e300:1/0",
                              "--bandwidth", "2000", "--duration", "1h", "--json", env=env)  # fmt: skip
            rid = json.loads(made.stdout)["id"]
            shown = _until_state(server, rid, "active", env)
            topology = usn()
            path = topology.walk(shown["path"]["nodes"][0], shown["path"]["links"])
            circuit = Circuit(rid, 2000, path, "1/0", "1/0")
            driver = CliDriver(topology, Inventory.load(inventory))
            assert driver.status(circuit) is CircuitStatus.UP
            server.cli("cancel", str(rid), env=env)
            _until_state(server, rid, "cancelled", env)
            assert driver.status(circuit) is CircuitStatus.DOWN
    finally:
        devices.terminate()
        devices.wait(timeout=15)


def _until_state(server, rid, state, env, timeout_s=60):
    deadline = time.monotonic() + timeout_s
    while True:
        shown = json.loads(server.cli("show", str(rid), "--json", env=env).stdout)
        if shown["state"] == state:
            return shown
        assert shown["state"] not in ("failed",), shown
        assert time.monotonic() < deadline, f"still {shown['state']} after {timeout_s} s"
        time.sleep(0.5)
