"""The emulated driver behind a real server: a reservation becomes a circuit on the
testbed (with the path's delay and the reserved rate), and a cancel removes it."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx

from longhaul.measure.booked import wait_for
from longhaul.testbed import netns

from ...testbed.support import settled_ping
from ..live import LiveServer


def test_a_reservation_becomes_a_circuit_and_a_cancel_removes_it(tmp_path, testbed):
    with LiveServer(tmp_path, None, "--driver", "emulated") as server:
        token = server.add_user("alice")
        with httpx.Client(
            base_url=server.url, headers={"Authorization": f"Bearer {token}"}, timeout=30
        ) as http:
            made = http.post("/api/v1/reservations", json={
                    "src": {"node": "ornl-e300", "port": "1/0"},
                    "dst": {"node": "ornl-e300", "port": "1/1"},
                    "loop": "ORNL-Chicago x1", "bandwidth_mbps": 1000,
                    "start": datetime.now(UTC).isoformat(), "duration": 120,
                }).json()  # fmt: skip
            rid = made["id"]

            def state():
                return http.get(f"/api/v1/reservations/{rid}").json()["state"]

            wait_for(lambda: state() == "active", timeout_s=20)
            circuit = testbed.circuit_of(f"reservation {rid}")
            assert circuit is not None
            assert (circuit.src_host, circuit.dst_host) == ("ornl-host1", "ornl-host2")
            assert circuit.rate_bps == 1_000_000_000
            assert abs(circuit.rtt_ms - 26.708) < 1e-3
            result = settled_ping(circuit.src_ns, circuit.dst_addr)
            assert abs(result.avg_ms - circuit.rtt_ms) <= 0.3, result

            # A bigger bandwidth on the same path changes the circuit in place.
            changed = http.patch(f"/api/v1/reservations/{rid}", json={"bandwidth_mbps": 2400})
            assert changed.status_code == 200, changed.text
            same = testbed.circuit_of(f"reservation {rid}")
            assert same.number == circuit.number and same.rate_bps == 2_400_000_000

            assert http.post(f"/api/v1/reservations/{rid}/cancel").status_code == 200
            wait_for(lambda: state() == "cancelled", timeout_s=20)
            assert testbed.circuit_of(f"reservation {rid}") is None


def test_a_server_that_stops_takes_down_the_testbed_it_built(tmp_path, testbed):
    with LiveServer(tmp_path, None, "--driver", "emulated") as server:
        token = server.add_user("alice")
        with httpx.Client(
            base_url=server.url, headers={"Authorization": f"Bearer {token}"}, timeout=30
        ) as http:
            made = http.post("/api/v1/reservations", json={
                    "src": {"node": "ornl-e300", "port": "1/0"},
                    "dst": {"node": "ornl-e300", "port": "1/1"},
                    "loop": "ORNL-Chicago x1", "bandwidth_mbps": 1000,
                    "start": datetime.now(UTC).isoformat(), "duration": 120,
                }).json()  # fmt: skip
            rid = made["id"]
            wait_for(
                lambda: http.get(f"/api/v1/reservations/{rid}").json()["state"] == "active",
                timeout_s=20,
            )
        assert len(netns.ours()) == 2
        server.stop()  # SIGTERM, as Ctrl-C: the service shuts down
        # Gone at once, not left for the next testbed command's sweep.
        assert netns.ours() == [], server.log()
