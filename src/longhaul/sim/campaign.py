"""Campaigns on the simulator: with tool = "sim" each run becomes a scenario on the
circuit the emulated testbed would build for its loop, the scenarios run side by side
(locally or on Dask), and each result is stored as the same tidy row an emulated run
gives, tagged simulated; with tool = "ib_rdma" each run is a perftest-shaped InfiniBand test
on the loop's round trip (`sim.ib`), stored as an `ib_throughput` row; with tool =
"rdma_lan" each run is one ping-pong of an RDMA LAN interconnect (`sim.rdma`), stored as
an `rdma_lan` row."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from longhaul.errors import InputError
from longhaul.measure.campaign import Campaign, Run
from longhaul.measure.rows import Row, Source
from longhaul.measure.store import ResultsStore
from longhaul.measure.tools import iperf3
from longhaul.sim import ib, rdma, runner
from longhaul.sim.scenarios import TcpRun, random_loss, tcp_scenario
from longhaul.topology import Topology
from longhaul.topology.circuits import loop_spec

Progress = Callable[[str, int, int], None]
"""(what just finished, runs done, runs in all)."""


SIMULATED_TOOLS = frozenset({"sim", "ib_rdma", "rdma_lan"})


def is_simulated(campaign: Campaign) -> bool:
    """Whether the campaign runs on the simulator alone; a mix is refused."""
    tools = {t.tool for t in campaign.tests}
    simulated = bool(tools & SIMULATED_TOOLS)
    if simulated and not tools <= SIMULATED_TOOLS:
        raise InputError(
            "tests",
            "a campaign runs either on the testbed or on the simulator: put the "
            "tool = 'sim', 'ib_rdma' and 'rdma_lan' tests in a campaign of their own",
        )
    if simulated and campaign.reservations:
        raise InputError(
            "connections.reservations",
            "a simulated campaign runs on loops (loops_miles), not on reservations",
        )
    return simulated


def scenario(run: Run, topology: Topology, rate_gbps: float | None) -> dict[str, Any]:
    """The scenario of one run: its loop's circuit, its parameters, a seed per repetition."""
    circuit = loop_spec(topology, run.connection.length_miles)
    if rate_gbps is not None:
        circuit = replace(circuit, rate_bps=round(rate_gbps * 1e9))
    values, params = run.test.values, run.params
    return tcp_scenario(
        circuit,
        TcpRun(
            cc=params["cc"],
            streams=params["streams"],
            duration_s=values["duration_s"],
            warmup_s=values["warmup_s"],
            host=values["host"],
            buffer_bytes=values["buffer_bytes"],
            loss=random_loss(
                circuit.length_miles, values["loss_per_packet"], values["loss_per_mile"]
            ),
            cross_traffic_gbps=params["cross_traffic_gbps"],
            seed=run.repetition,
        ),
    )


def row_of(run: Run, campaign: str, report: dict[str, Any]) -> Row:
    """The tidy row of a simulated run, read as iperf3's output is."""
    result = iperf3.parse(json.dumps(report))
    return Row(
        campaign=campaign,
        test=run.test.name,
        tool="sim",
        source=Source.SIMULATED,
        connection=run.connection.name,
        length_miles=run.connection.length_miles,
        repetition=run.repetition,
        started_at=datetime.now(UTC),
        cc=run.params["cc"],
        streams=run.params["streams"],
        cross_traffic_gbps=run.params["cross_traffic_gbps"],
        duration_s=round(float(report["perf"]["wall_s"]), 3),
        throughput_gbps=result.goodput_bps / 1e9,
        retransmits=result.retransmits,
        rtt_ms=result.rtt_mean_ms,
        rtt_std_ms=result.rtt_std_ms,
        extra={
            "host": run.test.values["host"],
            "buffer_bytes": run.test.values["buffer_bytes"],
            "loss_per_packet": run.test.values["loss_per_packet"],
            "loss_per_mile": run.test.values["loss_per_mile"],
            "realtime_factor": report["perf"]["realtime_factor"],
            **result.series,
        },
    )


def ib_row_of(run: Run, campaign: str, report: dict[str, Any]) -> Row:
    """The tidy row of an InfiniBand run: payload throughput in Gb/s (10^9 bits), and
    perftest's own MB/sec (2^20 bytes) beside it."""
    values = run.test.values
    qps = report["client"]["qps"]
    return Row(
        campaign=campaign,
        test=run.test.name,
        tool="ib_rdma",
        source=Source.SIMULATED,
        connection=run.connection.name,
        length_miles=run.connection.length_miles,
        repetition=run.repetition,
        started_at=datetime.now(UTC),
        message_bytes=int(run.params["message_bytes"]),
        # What tells one InfiniBand profile from another: a campaign may vary each.
        variant=" ".join(
            str(values[k]) for k in ("service", "operation", "wan", "hca", "connection_setup")
        ),
        cross_traffic_gbps=float(run.params["cross_traffic_gbps"]),
        duration_s=round(float(report["perf"]["wall_s"]), 3),
        throughput_gbps=report["goodput_gbps"],
        retransmits=sum(q["packets_resent"] for q in qps),
        rtt_ms=report["test"]["rtt_ms"],
        extra={
            "perftest_mb_s": report["bw_average_mb_s"],
            "perftest_peak_mb_s": report["client"]["bw_peak_mb_s"],
            "wan": values["wan"],
            "iters": values["iters"],
            "qps": values["qps"],
            "connection_setup": values["connection_setup"],
            "hca": values["hca"],
            "side_ports_gbps": values["side_ports_gbps"],
            "side_tcp_streams": values["side_tcp_streams"],
            "side_tcp_gbps": (report.get("side_tcp") or {}).get("goodput_gbps"),
            "cross_frames_dropped": report["extenders"][0]["cross_frames_dropped"]
            if report["extenders"]
            else 0,
            "timeouts": sum(q["timeouts"] for q in qps),
            "finished": report["finished"],
            "realtime_factor": report["perf"]["realtime_factor"],
        },
    )


def _simulate(run: Run, topology: Topology, rate_gbps: float | None) -> dict[str, Any]:
    """One run on the simulator, whichever of its tools."""
    if run.test.tool == "ib_rdma":
        return ib.run(ib.ib_run(run))
    if run.test.tool == "rdma_lan":
        return rdma.measure_point(rdma.rdma_point(run))
    return runner.run_scenario(scenario(run, topology, rate_gbps))


def run_campaign(
    campaign: Campaign,
    planned: list[Run],
    topology: Topology,
    store: ResultsStore,
    raw_dir: Path,
    resume: bool = False,
    workers: int | None = None,
    scheduler: str | None = None,
    progress: Progress | None = None,
) -> int:
    """Simulate what is not stored yet, storing each run as it finishes; how many ran."""
    campaign_id = store.open_campaign(campaign.name, campaign.description, campaign.text)
    done = store.done(campaign_id)
    if done and not resume:
        raise InputError(
            "campaign",
            f"{campaign.name!r} has results already: --resume continues it, "
            "--fresh starts it again",
        )
    todo = [r for r in planned if r.key not in done]
    folder = raw_dir / campaign.name.replace("/", "_")
    folder.mkdir(parents=True, exist_ok=True)
    finished = 0

    def keep(index: int, report: dict[str, Any]) -> None:
        nonlocal finished
        run = todo[index]
        make_row = {"ib_rdma": ib_row_of, "rdma_lan": rdma.rdma_row_of}.get(run.test.tool, row_of)
        row = make_row(run, campaign.name, report)
        raw_path = folder / f"sim-{len(done) + index + 1:05d}.json"
        raw_path.write_text(json.dumps(report))
        row.raw_ref = str(raw_path)
        store.add(campaign_id, run.key, row)
        finished += 1
        if progress:
            progress(_describe(run), finished, len(todo))

    if all(r.test.tool == "sim" for r in todo):
        scenarios = [scenario(r, topology, campaign.rate_gbps) for r in todo]
        runner.run_many(scenarios, workers=workers, scheduler=scheduler, on_done=keep)
    else:
        # IB and RDMA LAN runs are short and few: a local pool of simulator processes.
        def simulate(run: Run) -> dict[str, Any]:
            return _simulate(run, topology, campaign.rate_gbps)

        for index, report in runner.side_by_side(simulate, todo, workers):
            keep(index, report)
    store.finish_campaign(campaign.name)
    return finished


def _describe(run: Run) -> str:
    if run.test.tool == "ib_rdma":
        return f"{run.connection.name}, IB {run.params['message_bytes']} B"
    if run.test.tool == "rdma_lan":
        return f"{run.params['interconnect']} {run.params['message_bytes']} B"
    return f"{run.connection.name}, {run.params['cc']}, n = {run.params['streams']}"
