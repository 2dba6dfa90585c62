"""Three real servers, one per domain of the shipped demo (CHEETAH, USN, ESnet), and a
circuit stitched across them from the CHEETAH one: reserved, committed, provisioned,
released and terminated in every domain together, VLANs the same on both sides of each
boundary; and a refusal in the middle domain that leaves nothing held anywhere."""

from __future__ import annotations

import contextlib
import itertools
import json
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import requests
import zeep
from lxml import etree
from zeep.transports import Transport

from longhaul.control.nsi.domains import shipped_domains
from longhaul.topology.io import shipped_topology_path

from ..live import LiveServer

DOMAINS = {d.name: d for d in shipped_domains().domains}
CHEETAH, USN, ESNET = (DOMAINS[name].network for name in ("cheetah", "usn", "esnet"))


@dataclass
class Domain:
    server: LiveServer
    token: str
    """A user of this domain: alice on CHEETAH, the aggregator's account elsewhere."""

    def call(self, method: str, path: str, **kwargs: object) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.token}"}
        return httpx.request(method, self.server.url + path, headers=headers, timeout=60, **kwargs)

    def connections(self) -> list[dict[str, object]]:
        answer = self.call("GET", "/api/v1/nsi/connections")
        assert answer.status_code == 200, answer.text
        return answer.json()


def _server(home: Path, name: str, *extra: str) -> LiveServer:
    home.mkdir()
    topology = str(shipped_topology_path(name))
    network = DOMAINS[name].network
    return LiveServer(home, None, "--topology", topology, "--nsi-network", network, *extra)


@pytest.fixture(scope="module")
def domains(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Domain]]:
    root = tmp_path_factory.mktemp("three-domains")
    usn = _server(root / "usn", "usn")
    esnet = _server(root / "esnet", "esnet")
    peers = root / "peers.toml"
    cheetah = _server(root / "cheetah", "cheetah", "--nsi-peers", str(peers))
    tokens = {}
    for name, server in (("usn", usn), ("esnet", esnet)):
        tokens[name] = server.add_user("cheetah-aggregator")
    peers.write_text(
        'domains = "usn-peers"\n'
        + "".join(
            f'[[peers]]\nnetwork = "{network}"\nurl = "{server.url}"\ntoken = "{tokens[name]}"\n'
            for name, network, server in (("usn", USN, usn), ("esnet", ESNET, esnet))
        )
    )
    alice = cheetah.add_user("alice")
    with contextlib.ExitStack() as stack:
        for server in (usn, esnet, cheetah):
            stack.enter_context(server)
        yield {
            "cheetah": Domain(cheetah, alice),
            "usn": Domain(usn, tokens["usn"]),
            "esnet": Domain(esnet, tokens["esnet"]),
        }


def _ask(start: datetime, hours: float = 1, mbps: int = 1000) -> dict[str, object]:
    return {
        "source_stp": f"{CHEETAH}:MCNC?vlan=100",
        "dest_stp": f"{ESNET}:NERSC?vlan=200-209",
        "capacity_mbps": mbps,
        "start_time": start.isoformat(),
        "end_time": (start + timedelta(hours=hours)).isoformat(),
        "global_reservation_id": "urn:uuid:5e1b3c3a-7d0e-4c1b-9f55-2b8f0c7d4e61",
    }


def _until(check, timeout_s: float = 30):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while True:
        found = check()
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def test_a_circuit_across_three_domains(domains: dict[str, Domain]) -> None:
    cheetah, usn, esnet = domains["cheetah"], domains["usn"], domains["esnet"]
    now = datetime.now(UTC).replace(microsecond=0)
    made = cheetah.call("POST", "/api/v1/nsi/connections", json=_ask(now + timedelta(seconds=2)))
    assert made.status_code == 201, made.text
    aggregate = made.json()
    cid = aggregate["connection_id"]
    assert aggregate["reservation_state"] == "ReserveHeld"
    segments = aggregate["segments"]
    assert [s["network"] for s in segments] == [CHEETAH, USN, ESNET]
    assert all(s["reservation_state"] == "ReserveHeld" for s in segments)
    # Each boundary: the same VLAN on both sides, from the range both accept.
    for left, right in itertools.pairwise(segments):
        out_vlan = left["dest_stp"].rsplit("?vlan=", 1)[1]
        in_vlan = right["source_stp"].rsplit("?vlan=", 1)[1]
        assert out_vlan == in_vlan
    assert segments[0]["dest_stp"].endswith("sox-sn16k:2/1?vlan=3020")
    assert segments[1]["dest_stp"].endswith("chicago-e300:1/0?vlan=1779")
    assert segments[2]["dest_stp"].endswith("NERSC?vlan=200")
    # Each domain holds its own segment, owned by whoever asked it.
    assert [c["reservation_state"] for c in usn.connections()] == ["ReserveHeld"]
    assert [c["reservation_state"] for c in esnet.connections()] == ["ReserveHeld"]

    def act(what: str) -> dict[str, object]:
        answer = cheetah.call("POST", f"/api/v1/nsi/connections/{cid}/{what}")
        assert answer.status_code == 200, answer.text
        return answer.json()

    assert act("reserve-commit")["provision_state"] == "Released"
    assert act("provision")["provision_state"] == "Provisioned"

    def aggregate_state() -> dict[str, object]:
        return cheetah.call("GET", f"/api/v1/nsi/connections/{cid}").json()

    up = _until(lambda: aggregate_state()["data_plane_active"])
    assert up, aggregate_state()
    assert all(s["data_plane_active"] for s in aggregate_state()["segments"])
    # Modify while up: held in every domain, then committed in every domain.
    modified = cheetah.call(
        "POST", f"/api/v1/nsi/connections/{cid}/modify", json={"capacity_mbps": 2000}
    )
    assert modified.status_code == 200, modified.text
    assert modified.json()["reservation_state"] == "ReserveHeld"
    assert modified.json()["capacity_mbps"] == 1000  # until committed
    committed = act("reserve-commit")
    assert (committed["reservation_state"], committed["capacity_mbps"]) == ("ReserveStart", 2000)
    for domain, segment in zip((usn, esnet), committed["segments"][1:], strict=True):
        seen = domain.call("GET", f"/api/v1/nsi/connections/{segment['connection_id']}").json()
        assert (seen["capacity_mbps"], seen["data_plane_active"]) == (2000, True)
    act("release")
    down = _until(lambda: aggregate_state()["provision_state"] == "Released")
    assert down, aggregate_state()
    # Each domain told of its own segment's circuit coming up and going down; the
    # aggregate keeps none of its own.
    for domain, segment in zip((usn, esnet), committed["segments"][1:], strict=True):
        path = f"/api/v1/nsi/connections/{segment['connection_id']}/notifications"
        told = _until(lambda path=path, domain=domain: len(domain.call("GET", path).json()) == 2)
        assert told, domain.call("GET", path).text
        active = [n["detail"]["active"] for n in domain.call("GET", path).json()]
        assert active == [True, False]
    assert cheetah.call("GET", f"/api/v1/nsi/connections/{cid}/notifications").json() == []
    assert act("terminate")["lifecycle_state"] in ("Terminating", "Terminated")
    ended = _until(lambda: aggregate_state()["lifecycle_state"] == "Terminated")
    assert ended, aggregate_state()
    for domain in (usn, esnet):
        assert {c["lifecycle_state"] for c in domain.connections()} == {"Terminated"}


def test_a_refusal_in_the_middle_domain_leaves_nothing_held(domains: dict[str, Domain]) -> None:
    cheetah, usn, esnet = domains["cheetah"], domains["usn"], domains["esnet"]
    start = datetime.now(UTC).replace(microsecond=0) + timedelta(days=2)
    # Fill the middle domain's way from Atlanta to Chicago for the slot.
    usn_admin = Domain(usn.server, usn.server.add_user("usn-operator"))
    filler = {
        "src": {"node": "atlanta-edge"},
        "dst": {"node": "chicago-cdci"},
        "bandwidth_mbps": 9600,
        "start": start.isoformat(),
        "duration": 3 * 3600,
    }
    assert usn_admin.call("POST", "/api/v1/reservations", json=filler).status_code == 201
    before = {name: {c["connection_id"] for c in d.connections()} for name, d in domains.items()}
    refused = cheetah.call("POST", "/api/v1/nsi/connections", json=_ask(start))
    assert refused.status_code == 409, refused.text
    problem = refused.json()
    assert problem["network"] == USN
    assert "urn:ogf:network:ornl.gov:2026:usn refused reserve" in problem["detail"]
    # CHEETAH had held its segment: it was aborted. ESnet was never asked.
    (aborted,) = [c for c in cheetah.connections() if c["connection_id"] not in before["cheetah"]]
    assert aborted["segments"] is None  # CHEETAH's own segment; no aggregate was kept
    assert aborted["reservation_state"] == "ReserveStart"
    assert aborted["provision_state"] is None  # never committed
    held = cheetah.call("GET", f"/api/v1/reservations/{aborted['reservation_id']}").json()
    assert held["state"] == "cancelled"
    assert {c["connection_id"] for c in esnet.connections()} == before["esnet"]
    assert {c["connection_id"] for c in usn.connections()} == before["usn"]
    # Each domain answers the four queries for its segment: USN's way is full for 3 h.
    ends = {"source_stp": f"{CHEETAH}:MCNC", "dest_stp": f"{ESNET}:NERSC"}

    def query(name: str, **params: object) -> dict[str, object]:
        answer = cheetah.call("GET", f"/api/v1/nsi/availability/{name}", params={**ends, **params})
        assert answer.status_code == 200, answer.text
        return answer.json()

    hour = timedelta(hours=1)
    slot = {"start_time": start.isoformat(), "end_time": (start + hour).isoformat()}
    widest = query("max-bandwidth", **slot)
    assert widest["capacity_mbps"] == 0
    assert [s["network"] for s in widest["segments"]] == [CHEETAH, USN, ESNET]
    later = {
        "start_time": (start + 3 * hour).isoformat(),
        "end_time": (start + 4 * hour).isoformat(),
    }
    # Then the least of CHEETAH's OC192 (9,600), USN's WAN PHY (9,290), ESnet's 10GigE.
    assert query("max-bandwidth", **later)["capacity_mbps"] == 9290
    assert query("fixed-slot", capacity_mbps=1000, **slot)["available"] is False
    assert query("fixed-slot", capacity_mbps=1000, **later)["available"] is True
    earliest = query(
        "earliest-start", capacity_mbps=1000, duration="1h", not_before=start.isoformat()
    )
    assert datetime.fromisoformat(earliest["start_time"]) == start + 3 * hour
    window = {"window_start": start.isoformat(), "window_end": (start + 6 * hour).isoformat()}
    runs = query("all-slots", capacity_mbps=1000, duration="1h", **window)["slots"]
    assert [datetime.fromisoformat(runs[0]["first_start"]) - start] == [3 * hour]
    assert len(runs) == 1
    # And the bandwidth CHEETAH held is free again: the same request fits there alone.
    local = {
        "source_stp": f"{CHEETAH}:MCNC?vlan=100",
        "dest_stp": f"{CHEETAH}:sox-sn16k:2/1?vlan=3020",
        "capacity_mbps": 9600,
        "start_time": start.isoformat(),
        "end_time": (start + timedelta(hours=1)).isoformat(),
    }
    again = cheetah.call("POST", "/api/v1/nsi/connections", json=local)
    assert again.status_code == 201, again.text
    assert (
        cheetah.call(
            "POST", f"/api/v1/nsi/connections/{again.json()['connection_id']}/reserve-abort"
        ).status_code
        == 200
    )


def test_the_nsi_commands_across_the_domains(domains: dict[str, Domain]) -> None:
    cheetah = domains["cheetah"]
    env = {"LONGHAUL_TOKEN": cheetah.token}
    start = datetime.now(UTC).replace(microsecond=0) + timedelta(days=5)
    end = start + timedelta(hours=1)
    ends = ["--from", f"{CHEETAH}:MCNC?vlan=101", "--to", f"{ESNET}:NERSC?vlan=201"]
    made = cheetah.server.cli(
        "nsi", "reserve", *ends, "--capacity", "500", "--start", start.isoformat(),
        "--end", end.isoformat(), "--commit", "--json", env=env,
    )  # fmt: skip
    connection = json.loads(made.stdout)
    cid = connection["connection_id"]
    assert (connection["reservation_state"], connection["provision_state"]) == (
        "ReserveStart", "Released",
    )  # fmt: skip
    assert cid in cheetah.server.cli("nsi", "list", env=env).stdout
    shown = cheetah.server.cli("nsi", "show", cid, env=env).stdout
    assert "sox-sn16k:2/1?vlan=3020" in shown or "sox-sn16k:2/1?vlan=302" in shown
    widest = cheetah.server.cli(
        "nsi", "available", "--from", f"{CHEETAH}:MCNC", "--to", f"{ESNET}:NERSC",
        "--start", start.isoformat(), "--end", end.isoformat(), env=env,
    ).stdout  # fmt: skip
    # The OC192s at MCNC-SoX and ORNL-Atlanta hold 500 as four 150 Mb/s granules: 9,000 left.
    assert "highest capacity free: 9,000 Mb/s" in widest
    refused = cheetah.server.cli("nsi", "modify", cid, "--capacity", "20000", env=env, check=False)
    assert refused.returncode == 2
    assert "cheetah.example:2026:cheetah refused modify" in refused.stderr
    assert "Terminated" in cheetah.server.cli("nsi", "terminate", cid, env=env).stdout


def test_an_abort_leaves_nothing_held_in_any_domain(domains: dict[str, Domain]) -> None:
    cheetah = domains["cheetah"]
    start = datetime.now(UTC).replace(microsecond=0) + timedelta(days=7)
    made = cheetah.call("POST", "/api/v1/nsi/connections", json=_ask(start, mbps=9000))
    assert made.status_code == 201, made.text
    cid = made.json()["connection_id"]
    aborted = cheetah.call("POST", f"/api/v1/nsi/connections/{cid}/reserve-abort")
    assert aborted.status_code == 200, aborted.text
    for segment in aborted.json()["segments"]:
        assert (segment["reservation_state"], segment["provision_state"]) == ("ReserveStart", None)
    # Every domain has its bandwidth back: 9,000 Mb/s fits again end to end.
    again = cheetah.call("POST", "/api/v1/nsi/connections", json=_ask(start, mbps=9000))
    assert again.status_code == 201, again.text
    cheetah.call("POST", f"/api/v1/nsi/connections/{again.json()['connection_id']}/reserve-abort")


def test_a_circuit_across_three_domains_through_the_soap_interface(
    domains: dict[str, Domain],
) -> None:
    """The same life as the REST test, asked of the CHEETAH server's NSI SOAP endpoint
    by a real SOAP client (zeep), which loads the WSDL from the server."""
    cheetah, usn = domains["cheetah"], domains["usn"]
    base = cheetah.server.url + "/api/v1/nsi/soap"
    with requests.Session() as session:
        session.headers["Authorization"] = f"Bearer {cheetah.token}"
        transport = Transport(session=session, timeout=30, operation_timeout=60)
        client = zeep.Client(f"{base}/provider?wsdl", transport=transport)
        client.wsdl.types.add_document_by_url(f"{base}/ogf_nsi_services_p2p_v2_0.xsd")
        p2p = "{http://schemas.ogf.org/nsi/2013/12/services/point2point}"

        def call(operation: str, **body: object) -> Any:
            header = client.get_element(
                "{http://schemas.ogf.org/nsi/2013/12/framework/headers}nsiHeader"
            )(
                protocolVersion="application/vnd.ogf.nsi.cs.v2.provider+soap",
                correlationId=f"urn:uuid:{uuid.uuid4()}",
                requesterNSA="urn:ogf:network:example.org:2026:nsa:requester",
                providerNSA=f"{CHEETAH}:nsa",
            )
            return getattr(client.service, operation)(**body, _soapheaders=[header]).body

        def summary(connection_id: str) -> Any:
            (found,) = call("querySummarySync", connectionId=[connection_id]).reservation
            return found

        start = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=2)
        element = client.get_element(f"{p2p}p2ps")
        p2ps = element(
            capacity=1000,
            directionality="Bidirectional",
            sourceSTP=f"{CHEETAH}:MCNC?vlan=110",
            destSTP=f"{ESNET}:NERSC?vlan=210",
        )
        criteria = {
            "schedule": {"startTime": start, "endTime": start + timedelta(hours=1)},
            "serviceType": "http://services.ogf.org/nsi/2013/12/definitions/EVTS.A-GOLE",
            "_value_1": zeep.xsd.AnyObject(element, p2ps),
        }
        cid = str(call("reserve", criteria=criteria).connectionId)
        held = summary(cid)
        assert held.connectionStates.reservationState == "ReserveHeld"
        call("reserveCommit", connectionId=cid)
        call("provision", connectionId=cid)
        up = _until(lambda: summary(cid).connectionStates.dataPlaneStatus.active)
        assert up
        capacity = etree.Element(f"{p2p}capacity")
        capacity.text = "2000"
        call("reserve", connectionId=cid, criteria={"version": 1, "_value_1": [capacity]})
        assert summary(cid).connectionStates.reservationState == "ReserveHeld"
        call("reserveCommit", connectionId=cid)
        assert summary(cid).connectionStates.reservationState == "ReserveStart"
        # The middle domain's segment carries the new capacity, and is up.
        (segment,) = [
            c for c in usn.connections() if c["capacity_mbps"] == 2000 and c["data_plane_active"]
        ]
        assert segment["lifecycle_state"] == "Created"
        call("terminate", connectionId=cid)
        ended = _until(lambda: summary(cid).connectionStates.lifecycleState == "Terminated")
        assert ended
        gone = usn.call("GET", f"/api/v1/nsi/connections/{segment['connection_id']}").json()
        assert gone["lifecycle_state"] == "Terminated"


def test_a_vlan_taken_in_a_far_domain_is_chosen_around(domains: dict[str, Domain]) -> None:
    cheetah, esnet = domains["cheetah"], domains["esnet"]
    start = datetime.now(UTC).replace(microsecond=0) + timedelta(days=9)
    end = start + timedelta(hours=1)
    taking = {
        "source_stp": f"{ESNET}:star-cr5:6/1?vlan=1779",
        "dest_stp": f"{ESNET}:NERSC",
        "capacity_mbps": 100,
        "start_time": start.isoformat(),
        "end_time": end.isoformat(),
    }
    assert esnet.call("POST", "/api/v1/nsi/connections", json=taking).status_code == 201
    made = cheetah.call("POST", "/api/v1/nsi/connections", json=_ask(start))
    assert made.status_code == 201, made.text
    segments = made.json()["segments"]
    # USN chose 1779 first, ESnet had it taken (409 vlan-unavailable over HTTP), USN chose
    # again above it: both sides of StarLight on 1780.
    assert segments[1]["dest_stp"].endswith("chicago-e300:1/0?vlan=1780")
    assert segments[2]["source_stp"].endswith("star-cr5:6/1?vlan=1780")
    cid = made.json()["connection_id"]
    assert cheetah.call("POST", f"/api/v1/nsi/connections/{cid}/reserve-abort").status_code == 200
