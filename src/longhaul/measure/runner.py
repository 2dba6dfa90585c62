"""Running a campaign on the emulated testbed: connections made ready, each run executed
by its tool, each result stored as it finishes (a crash loses at most the run in flight),
runs already stored skipped on `resume`.

Each run is watched: the emulator's record of it goes into the row (`health`), and a run
the emulator could not honestly produce (`measure.health.verdict`) is run again, up to
`retries` times; if it never comes out clean it is stored marked `degraded`, and the
analysis leaves it out.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from longhaul.errors import InputError
from longhaul.measure import campaign as campaigns
from longhaul.measure import health, meta, tools
from longhaul.measure.campaign import Campaign, Connection, Run
from longhaul.measure.rows import Row, Source
from longhaul.measure.store import ResultsStore
from longhaul.testbed import CircuitRecord, Testbed
from longhaul.testbed.watch import Watch
from longhaul.topology.circuits import loop_spec, miles_label

RETRIES = 2
"""How many times a degraded or failed run is run again before it is stored so."""


@dataclass(frozen=True)
class Prepared:
    """A campaign ready to run: its runs and the circuit behind each connection."""

    campaign: Campaign
    runs: list[Run]
    circuits: dict[str, CircuitRecord]
    made_loops: list[int]
    """Circuits the runner built (and removes when done)."""

    @property
    def estimate_s(self) -> float:
        return campaigns.estimate_s(self.runs)


Progress = Callable[[str, float, float], None]
"""(what is running, seconds of work done, seconds of work in all)."""


def plan_connections(campaign: Campaign, testbed: Testbed) -> list[Connection]:
    """The campaign's connections, from the topology and the testbed's record (nothing
    built): a loop of no length the topology has is refused here, before anything runs."""
    connections = []
    for miles in campaign.loops_miles:
        spec = loop_spec(testbed.topology, miles)
        connections.append(
            Connection(
                f"loop {miles_label(spec.length_miles)} mi",
                spec.length_miles,
                spec.rtt_ms,
                loop_miles=miles,
            )
        )
    for number in campaign.reservations:
        circuit = testbed.circuit_of(f"reservation {number}")
        if circuit is None:
            raise InputError(
                "connections.reservations",
                f"reservation {number} has no circuit on the testbed: is it active, and "
                "served with `longhaul serve --driver emulated`?",
            )
        connections.append(
            Connection(
                f"reservation {number}", circuit.length_miles, circuit.rtt_ms, reservation=number
            )
        )
    return connections


def check_tools(campaign: Campaign) -> None:
    """Stop before anything runs if a tool the campaign needs is missing."""
    for name in dict.fromkeys(t.tool for t in campaign.tests):
        missing = tools.tool(name).missing()
        if missing:
            raise InputError("tool", missing)


def prepare(campaign: Campaign, testbed: Testbed) -> Prepared:
    """Build the loops the campaign names (reusing any already up) and find the circuits
    of its reservations."""
    check_tools(campaign)
    connections = plan_connections(campaign, testbed)
    circuits: dict[str, CircuitRecord] = {}
    made: list[int] = []
    loops = [c for c in connections if c.loop_miles is not None]
    if loops:
        rate = None if campaign.rate_gbps is None else round(campaign.rate_gbps * 1e9)
        before = {c.number for c in testbed.circuits()}
        lengths = [c.loop_miles for c in loops if c.loop_miles is not None]
        built = testbed.up(lengths, rate, jitter=campaign.jitter)
        for connection, circuit in zip(loops, built, strict=True):
            circuits[connection.name] = circuit
            if circuit.number not in before:
                made.append(circuit.number)
    for connection in connections:
        if connection.reservation is not None:
            found = testbed.circuit_of(f"reservation {connection.reservation}")
            assert found is not None  # checked by plan_connections
            circuits[connection.name] = found
    # The circuit's own figures (a loop at another rate, say) describe the connection.
    connections = [replace(c, rtt_ms=circuits[c.name].rtt_ms) for c in connections]
    return Prepared(campaign, campaigns.runs(campaign, connections), circuits, made)


@dataclass
class Runner:
    store: ResultsStore
    testbed: Testbed
    raw_dir: Path
    retries: int = RETRIES
    failed: int = 0
    """Runs stored as failed by the last `run`."""
    _circuits_seen: dict[int, dict[str, Any]] = field(default_factory=dict, repr=False)
    """Each circuit's `meta.circuit`, read once per campaign."""

    def run(
        self, prepared: Prepared, resume: bool = False, progress: Progress | None = None
    ) -> int:
        """Run what is not stored yet (failed runs count as not stored); how many ran."""
        campaign = prepared.campaign
        self.failed = 0
        campaign_id = self.store.open_campaign(campaign.name, campaign.description, campaign.text)
        done = self.store.done(campaign_id) if resume else set()
        if not resume and self.store.done(campaign_id):
            raise InputError(
                "campaign",
                f"{campaign.name!r} has results already: --resume continues it, "
                "--fresh starts it again",
            )
        total = prepared.estimate_s
        spent = sum(r.estimate_s() for r in prepared.runs if r.key in done)
        ran = 0
        folder = self.raw_dir / _slug(campaign.name)
        folder.mkdir(parents=True, exist_ok=True)
        try:
            for run in prepared.runs:
                if run.key in done:
                    continue
                if progress:
                    progress(_describe(run), spent, total)
                circuit = prepared.circuits[run.connection.name]
                row, raw = self._attempts(run, circuit, campaign.name, progress, spent, total)
                raw_path = folder / f"{len(done) + ran + 1:05d}-{_slug(run.key)}.json"
                raw_path.write_text(json.dumps(raw, indent=1, default=str))
                row.raw_ref = str(raw_path)
                self.store.add(campaign_id, run.key, row)
                ran += 1
                self.failed += row.failed
                spent += run.estimate_s()
            self.store.finish_campaign(campaign.name)
        finally:
            for number in prepared.made_loops:
                self.testbed.remove_circuit(number)
        if progress:
            progress("done", total, total)
        return ran

    def _attempts(
        self,
        run: Run,
        circuit: CircuitRecord,
        campaign: str,
        progress: Progress | None,
        spent: float,
        total: float,
    ) -> tuple[Row, dict[str, Any]]:
        """Run until the emulator kept up, or `retries` more times; the last attempt."""
        attempts = []
        if circuit.number not in self._circuits_seen:
            self._circuits_seen[circuit.number] = meta.circuit(circuit)
        for attempt in range(1 + self.retries):
            row, raw = execute(run, circuit, self.testbed, campaign)
            attempts.append(
                [row.error] if row.failed else list((row.health or {}).get("reasons", []))
            )
            if not (row.degraded or row.failed):
                break
            if progress and attempt < self.retries:
                why = "the tool failed" if row.failed else "the emulator fell behind"
                progress(f"{_describe(run)}: {why}, again", spent, total)
        if row.health is not None and len(attempts) > 1:
            row.health["attempts"] = attempts
        row.meta = {
            **meta.host(),
            **self._circuits_seen[circuit.number],
            "tool": row.tool,
            "tool_version": meta.tool_version(row.tool),
            "cc": row.cc,
        }
        return row, raw


def execute(
    run: Run, circuit: CircuitRecord, testbed: Testbed, campaign: str
) -> tuple[Row, dict[str, Any]]:
    """One run: its row and the tool's raw output."""
    row = Row(
        campaign=campaign,
        test=run.test.name,
        tool=run.test.tool,
        source=Source.EMULATED,
        connection=run.connection.name,
        length_miles=run.connection.length_miles,
        repetition=run.repetition,
        started_at=datetime.now(UTC),
    )
    started = time.monotonic()
    watch = Watch.start(circuit)
    test = run.test.name
    try:
        raw = tools.tool(run.test.tool).measure(run, circuit, testbed, row)
    except tools.ToolError as exc:
        # Kept as a failed run: the tool's message, no measurement.
        row.error = str(exc)
        raw = {"error": row.error}
    row.duration_s = round(time.monotonic() - started, 3)
    record = watch.finish()
    judged = health.verdict(record, test, row.duration_s, circuit.rate_bps, circuit.rtt_ms)
    row.degraded = judged.degraded
    row.health = {**health.summary(record), "reasons": list(judged.reasons)}
    raw["emulator_health"] = record
    return row, raw


def _describe(run: Run) -> str:
    params = ", ".join(f"{k} {v}" for k, v in run.params.items())
    return f"{run.test.name} on {run.connection.name}: {params}, repetition {run.repetition}"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._=-]+", "_", text)[:120]
