"""A campaign on circuits it books itself through the reservation API: for each of its
loops in turn, the highest bandwidth the loop has free, as soon as possible (the
earliest-start query: USN's loops share ORNL's cross-connects, so one fits at a time),
then its runs on the circuit the emulated driver builds, then the reservation cancelled.
`longhaul demo` and scheduled campaigns run this way."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from longhaul.control.client import Client
from longhaul.measure import campaign as campaigns
from longhaul.measure.runner import Prepared, Runner
from longhaul.testbed import Testbed
from longhaul.topology.circuits import miles_label

LOOP_ENDS = ("ornl-e300:1/0", "ornl-e300:1/1")
"""The ORNL edge switch's host ports: a loop-back joins the two 10GigE hosts."""
MARGIN = 1.4
"""Reservations last this many times the runs' estimate (plus a minute), so a slow run
never outlives its circuit."""
BOOKING_S = 20.0
"""What reserving, provisioning and releasing one loop add to its runs' estimate."""

Say = Callable[[str, float], None]
"""(what is happening, seconds of the estimate done so far)."""


def estimate_s(spec: campaigns.Campaign, testbed: Testbed) -> float:
    return sum(campaigns.estimate_s(runs) + BOOKING_S for _, _, runs in _plans(spec, testbed))


def run(
    spec: campaigns.Campaign,
    client: Client,
    testbed: Testbed,
    runner: Runner,
    say: Say,
    purpose: str,
) -> None:
    """The campaign loop by loop, each on a reservation of its own (`purpose` describes
    them in the reservation service)."""
    done = 0.0
    for loop, connection, runs in _plans(spec, testbed):

        def at(what: str, at_s: float, base_s: float = done) -> None:
            say(what, base_s + at_s)

        _measure_loop(spec, client, testbed, runner, loop, connection, runs, at, purpose)
        done += campaigns.estimate_s(runs) + BOOKING_S


def _plans(
    spec: campaigns.Campaign, testbed: Testbed
) -> list[tuple[str, campaigns.Connection, list[campaigns.Run]]]:
    plans = []
    for length in spec.loops_miles:
        view = min(testbed.topology.loops.values(), key=lambda v: abs(v.length_miles - length))
        connection = campaigns.Connection(
            f"loop {miles_label(view.length_miles)} mi", view.length_miles, view.rtt_ms
        )
        plans.append((view.name, connection, campaigns.runs(spec, [connection])))
    return plans


def _measure_loop(
    spec: campaigns.Campaign,
    client: Client,
    testbed: Testbed,
    runner: Runner,
    loop: str,
    connection: campaigns.Connection,
    runs: list[campaigns.Run],
    say: Say,
    purpose: str,
) -> None:
    """Reserve one loop, wait for its circuit, run its part of the campaign, cancel."""
    say(f"{connection.name}: reserving the loop", 0)
    duration_s = MARGIN * campaigns.estimate_s(runs) + 60
    reservation = reserve(client, loop, duration_s, f"{purpose} on {loop}")
    try:
        say(f"{connection.name}: reservation {reservation}, provisioning", 0)
        circuit = wait_for_circuit(client, testbed, reservation)
        prepared = Prepared(spec, runs, {connection.name: circuit}, made_loops=[])
        runner.run(
            prepared,
            resume=True,
            progress=lambda what, at_s, _all: say(f"{connection.name}: {what}", at_s),
        )
    finally:
        client.cancel(reservation)
        wait_for(lambda: client.get(reservation)["state"] in ("cancelled", "finished"))


def reserve(client: Client, loop: str, duration_s: float, description: str) -> int:
    """Book the loop at the most it has free, as soon as possible; the reservation."""
    now = datetime.now(UTC)
    src, dst = LOOP_ENDS
    widest = client.availability(
        "max-bandwidth",
        src=src,
        dst=dst,
        loop=loop,
        start=now.isoformat(),
        end=(now + timedelta(seconds=duration_s)).isoformat(),
    )
    made = client.create(
        {
            "src": _end(src),
            "dst": _end(dst),
            "loop": loop,
            "bandwidth_mbps": widest["bandwidth_mbps"],
            "start": "asap",
            "not_before": now.isoformat(),
            "duration": round(duration_s),
            "description": description,
        }
    )
    return int(made["id"])


def _end(text: str) -> dict[str, str]:
    node, _, port = text.partition(":")
    return {"node": node, "port": port}


def wait_for_circuit(client: Client, testbed: Testbed, reservation: int) -> Any:
    def active() -> Any:
        state = client.get(reservation)["state"]
        if state == "failed":
            history = client.history(reservation)
            raise RuntimeError(f"reservation {reservation} failed: {history[-1]['reason']}")
        return state == "active" and testbed.circuit_of(f"reservation {reservation}")

    return wait_for(active, timeout_s=120)


def wait_for(condition: Callable[[], Any], timeout_s: float = 60) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.2)
    raise RuntimeError(f"gave up waiting after {timeout_s:g} s")
