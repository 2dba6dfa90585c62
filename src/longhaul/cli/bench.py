"""`longhaul bench`: benchmarks that print JSON."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from longhaul.bench import encryptor as encryptor_bench
from longhaul.bench import hurricane as hurricane_bench
from longhaul.bench import middleboxes as middleboxes_bench
from longhaul.bench import paths as paths_bench
from longhaul.bench import wan as wan_bench
from longhaul.cli.common import console, err_console, fail, print_json
from longhaul.measure import payloads
from longhaul.measure.tools import ToolError

TimedProgress = Callable[[str, float, float], None]
"""(what is running, seconds of work done, seconds of work in all)."""

app = typer.Typer(
    help="Benchmarks; each prints its figures (as JSON with --json).", no_args_is_help=True
)


@app.command()
def paths(
    json_output: Annotated[bool, typer.Option("--json", help="Print the figures as JSON.")] = False,
    topologies: Annotated[
        str,
        typer.Option(
            help="Comma-separated: usn and nN for a synthetic network of N nodes; nN_1m (or "
            "_200k, ...) for one holding a year of that many link bookings."
        ),
    ] = "usn,n100,n1000,n1000_1m",
    reservations: Annotated[
        int,
        typer.Option(help="Reservations booked over 30 days on a topology named without a count."),
    ] = 10_000,
    samples: Annotated[int, typer.Option(help="Timed queries of each kind per topology.")] = 1000,
    seed: Annotated[int, typer.Option(help="Seed of the random workload.")] = 1,
) -> None:
    """Latency (p50/p99 ms) of the four path queries on loaded topologies."""
    plan = paths_bench.Plan(
        topologies=tuple(t.strip() for t in topologies.split(",") if t.strip()),
        reservations=reservations,
        samples=samples,
        seed=seed,
    )
    try:
        paths_bench.check(plan)
    except ValueError as exc:
        fail(f"--topologies: {exc}")
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=err_console,
        transient=True,
    ) as bar:
        tasks: dict[str, TaskID] = {}

        def progress(what: str, done: int, total: int) -> None:
            if what not in tasks:
                tasks[what] = bar.add_task(what, total=total)
            bar.update(tasks[what], completed=done)

        report = paths_bench.run(plan, progress)
    if json_output:
        print_json(report)
        return
    table = Table(title="Path queries: latency in ms (p50 / p99)", title_justify="left")
    table.add_column("topology")
    for query in paths_bench.QUERIES:
        table.add_column(query, justify="right")
    for name, entry in report["topologies"].items():
        label = f"{name} ({entry['nodes']} nodes, {entry['links']} links)"
        cells = [
            f"{entry[q]['p50_ms']:.3f} / {entry[q]['p99_ms']:.3f}" for q in paths_bench.QUERIES
        ]
        table.add_row(label, *cells)
    console.print(table)


@app.command()
def api(
    json_output: Annotated[bool, typer.Option("--json", help="Print the figures as JSON.")] = False,
    db: Annotated[
        str,
        typer.Option(help="sqlite, postgresql (a throw-away cluster) or a database URL."),
    ] = "sqlite",
    clients: Annotated[int, typer.Option(help="Concurrent client threads.", min=1)] = 16,
    workers: Annotated[int, typer.Option(help="Server processes.", min=1)] = 1,
    rate: Annotated[
        float, typer.Option(help="Requests per second offered in the steady phase.", min=1)
    ] = 200.0,
    duration: Annotated[float, typer.Option(help="Seconds of load.", min=1)] = 15.0,
    seed: Annotated[int, typer.Option(help="Seed of the random requests.")] = 1,
) -> None:
    """Reservations per second and latency of the service under load, then a brute-force
    check that no link was overbooked."""
    # The control plane is slow to import; only this command needs it.
    from longhaul.bench import api as api_bench  # noqa: PLC0415

    plan = api_bench.Plan(
        db=db, clients=clients, workers=workers, rate_per_s=rate, duration_s=duration, seed=seed
    )
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=err_console,
        transient=True,
    ) as bar:
        task = bar.add_task("starting the server", total=int(duration))  # one bar, two phases

        def progress(what: str, done: int, total: int) -> None:
            bar.update(task, description=what, completed=done, total=total)

        report = api_bench.run(plan, progress)
    if json_output:
        print_json(report)
        return
    top = report["saturated"]
    console.print(
        f"{report['db']}, {report['clients']} clients, {report['workers']} worker(s).\n"
        f"At {report['offered_per_s']:g} requests/s offered: {report['reservations_per_s']}/s "
        f"answered, p50 {report['p50_ms']} ms, p99 {report['p99_ms']} ms.\n"
        f"Saturated: {top['reservations_per_s']}/s "
        f"(p50 {top['p50_ms']} ms, p99 {top['p99_ms']} ms).\n"
        f"Overbooked link-instants: {report['overbooked_link_instants']}"
    )


@app.command()
def wan(
    json_output: Annotated[bool, typer.Option("--json", help="Print the figures as JSON.")] = False,
    repetitions: Annotated[
        int, typer.Option(help="Runs of each case (median, least and most are reported).", min=1)
    ] = wan_bench.REPETITIONS,
) -> None:
    """What emulated circuits deliver and how faithfully: idle RTT on every USN loop,
    cubic at 9.6 Gb/s over 163 and 650 ms, loss, cross-traffic, and HTB beside it as a
    peer; with the emulator's lateness, largest 1 ms rate and memory (needs root)."""
    cases = [replace(c, repetitions=repetitions) for c in wan_bench.suite()]
    _say_how_long(sum(c.estimate_s() for c in cases))
    report = _on_the_testbed(lambda progress: wan_bench.run(cases, progress))
    if json_output:
        print_json(report)
        return
    table = Table(title="Emulated circuits (median of the runs)", title_justify="left")
    for column in ("Gb/s", "RTT ms", "test", "goodput Gb/s", "utilization", "RTT mean/std ms",
                   "1 ms rate", "late ms", "degraded"):  # fmt: skip
        table.add_column(column, justify="right")
    for case in report["cases"]:
        test = {"ping": "idle ping", "peer": "vs HTB"}.get(
            case["test"], f"{case['cc']} x {case['streams']}"
        )
        rtt = f"{case['rtt_mean_ms'] or 0:.3f} / {case['rtt_std_ms'] or 0:.3f}"
        goodput = "" if case["goodput_gbps"] is None else f"{case['goodput_gbps']:.3f}"
        utilization = "" if case["utilization"] is None else f"{case['utilization']:.3f}"
        table.add_row(f"{case['rate_gbps']:g}", f"{case['rtt_ms']:g}", test, goodput,
                      utilization, rtt, f"{case['max_1ms_rate_ratio']:.3f}",
                      f"{case['emulator_max_late_ms']:.2f}",
                      f"{case['degraded_runs']}/{case['repetitions']}")  # fmt: skip
    console.print(table)
    for name, verdict in report["targets"].items():
        console.print(f"{name}: {verdict['measured']} (target {verdict['target']}): "
                      f"{'met' if verdict['met'] else 'NOT met'}")  # fmt: skip


@app.command()
def hurricane(
    json_output: Annotated[bool, typer.Option("--json", help="Print the figures as JSON.")] = False,
    repetitions: Annotated[
        int,
        typer.Option(
            help="Runs of each case, the cases on a circuit taking turns (median, least and "
            "most are reported).",
            min=1,
        ),
    ] = hurricane_bench.REPETITIONS,
    fault_transfers: Annotated[
        int,
        typer.Option(
            help="Transfers under injected faults in virtual time; 0 skips the faults, "
            "virtual and emulated (`faults` is then null).",
            min=0,
        ),
    ] = hurricane_bench.FAULT_TRANSFERS,
    circuit: Annotated[
        list[str] | None,
        typer.Option(
            help="Only this circuit: RATExRTT or RATExRTTxLOSS, in Gb/s and ms (e.g. 9.6x163, "
            "9.6x163x1e-4); repeat for more. Default: the five of the benchmark.",
        ),
    ] = None,
    tool: Annotated[
        list[str] | None,
        typer.Option(
            help=f"Only this tool ({', '.join(hurricane_bench.TOOLS)}); repeat for more. "
            "Default: all.",
        ),
    ] = None,
) -> None:
    """Hurricane against iperf3 (cubic x1, x8; bbr), GridFTP and UDT on emulated circuits
    (1 Gb/s x 26.8 and 163 ms, 9.6 Gb/s x 163 and 650 ms, and with 1e-4 loss), memory
    to memory and disk to disk, and transfers under injected faults (needs root).
    `--circuit`, `--tool` and `--fault-transfers 0` run a part of it; `LONGHAUL_WAN` and
    `HURRICANE` name other builds of the emulator and of Hurricane to run."""
    circuits, tools = _hurricane_subset(circuit, tool)
    _say_how_long(hurricane_bench.estimate_s(repetitions, circuits, tools, fault_transfers > 0))
    report = _on_the_testbed(
        lambda progress: hurricane_bench.run(
            repetitions, progress, circuits, fault_transfers=fault_transfers, tools=tools
        )
    )
    if json_output:
        print_json(report)
        return
    table = Table(title="Hurricane and its peers (median of the runs)", title_justify="left")
    for column in ("Gb/s", "RTT ms", "loss", "tool", "mode", "goodput Gb/s (min-max)",
                   "utilization", "CPU cores", "failed"):  # fmt: skip
        table.add_column(column, justify="right")
    for case in report["cases"]:
        goodput, utilization, cpu = case["goodput_gbps"], case["utilization"], case["cpu_cores"]
        table.add_row(
            f"{case['rate_gbps']:g}", f"{case['rtt_ms']:g}", f"{case['loss']:g}", case["tool"],
            case["mode"],
            "" if goodput is None else f"{goodput['median']:.3f} ({goodput['min']:.3f}-"
            f"{goodput['max']:.3f})",
            "" if utilization is None else f"{utilization['median']:.3f}",
            "" if cpu is None else f"{cpu['median']:.2f}",
            f"{case['failed_runs']}/{case['repetitions']}",
        )  # fmt: skip
    console.print(table)
    faults = report["faults"]
    if faults is None:
        console.print("faults: not run (--fault-transfers 0)")
        return
    console.print(f"faults: {faults['transfers']} transfers, {faults['corrupted']} corrupted, "
                  f"{faults['resumed']} resumed, {faults['refused']} refused")  # fmt: skip


def _hurricane_subset(
    circuits: list[str] | None, tools: list[str] | None
) -> tuple[tuple[hurricane_bench.Circuit, ...], tuple[str, ...]]:
    """The circuits and tools `--circuit` and `--tool` ask for (all where not given); an
    unknown one ends the command with what is known."""
    chosen_tools = tuple(tools) if tools else hurricane_bench.TOOLS
    unknown = [t for t in chosen_tools if t not in hurricane_bench.TOOLS]
    if unknown:
        fail(f"no tool {', '.join(unknown)}: choose from {', '.join(hurricane_bench.TOOLS)}")
    if not circuits:
        return hurricane_bench.CIRCUITS, chosen_tools
    try:
        return tuple(hurricane_bench.parse_circuit(c) for c in circuits), chosen_tools
    except ValueError as exc:
        fail(str(exc))


@app.command()
def middleboxes(
    json_output: Annotated[bool, typer.Option("--json", help="Print the figures as JSON.")] = False,
    miles: Annotated[
        str, typer.Option(help="Comma-separated loop lengths in miles (USN's loops).")
    ] = "1400,2800",
    streams: Annotated[str, typer.Option(help="Comma-separated stream counts.")] = "1,2,20",
    data: Annotated[
        str, typer.Option(help="Comma-separated payloads: hdf, random, duplicated, gzip.")
    ] = "hdf,random,duplicated,gzip",
    repetitions: Annotated[
        int, typer.Option(help="Transfers per cell (mean, median, least and most).", min=1)
    ] = middleboxes_bench.REPETITIONS,
    parts: Annotated[
        str, typer.Option(help="Comma-separated: accelerator, encryptor.")
    ] = "accelerator,encryptor",
    encryptor_miles: Annotated[
        str, typer.Option(help="The encryptor's loops (USN's: 0.2 local, 1400 to Chicago).")
    ] = "0.2,1400",
    report: Annotated[
        Path | None,
        typer.Option(help="Also write an HTML report (tables, figures, USN beside) here."),
    ] = None,
    from_json: Annotated[
        Path | None,
        typer.Option(
            help="Measure nothing: read what an earlier `--json` run printed (for --report).",
            exists=True,
            dir_okay=False,
        ),
    ] = None,
) -> None:
    """The WAN accelerator on emulated 1 Gb/s loops with 64 KB windows, as USN tested
    Cisco WAAS: no accelerator, flow optimization, + redundancy elimination, + LZ, for
    HDF-like files at each stream count and the other payloads at the first; then the link
    encryptor on USN's 10 Gb/s loops, before and after MTU alignment, beside the same
    circuit plain (needs root)."""
    chosen = {p.strip() for p in parts.split(",") if p.strip()}
    if not chosen or chosen - {"accelerator", "encryptor"}:
        fail(f"--parts {parts!r}: give accelerator, encryptor or both")
    kinds = tuple(k.strip() for k in data.split(",") if k.strip())
    unknown = [k for k in kinds if k not in payloads.KINDS]
    if unknown or not kinds:
        fail(f"--data: {', '.join(unknown) or 'nothing'}: give some of "
             f"{', '.join(payloads.KINDS)}")  # fmt: skip
    cells = middleboxes_bench.plan(
        tuple(int(m) for m in _floats(miles, "--miles")),
        tuple(int(n) for n in _floats(streams, "--streams")),
        kinds,
    ) if "accelerator" in chosen else []  # fmt: skip
    rows = (
        encryptor_bench.plan(_floats(encryptor_miles, "--encryptor-miles"))
        if "encryptor" in chosen
        else []
    )
    if from_json is not None:
        measured = json.loads(from_json.read_text(encoding="utf-8"))
    else:
        seconds = sum(c.estimate_s(repetitions) for c in cells)
        seconds += sum(r.estimate_s(repetitions) for r in rows)
        _say_how_long(seconds)
        measured = _on_the_testbed(
            lambda progress: middleboxes_bench.run(cells, repetitions, progress, rows)
        )
    if report is not None:
        from longhaul.report.middleboxes import write_middleboxes_report  # noqa: PLC0415

        err_console.print(f"Report: {write_middleboxes_report(measured, report)}")
    if json_output:
        print_json(measured)
        return
    table = Table(title="WAN accelerator, 1 Gb/s loops, 64 KB windows (Mb/s, mean of the runs)",
                  title_justify="left")  # fmt: skip
    for column in ("miles", "streams", "data", "features", "Mb/s (min-max)", "published",
                   "wire/app", "intact"):  # fmt: skip
        table.add_column(column, justify="right")
    for cell in measured["accelerator"]:
        mbps = (
            ""
            if cell["mbps"] is None
            else (f"{cell['mbps']:.1f} ({cell['mbps_min']:.1f}-{cell['mbps_max']:.1f})")
        )
        published = cell["published_mbps"]
        table.add_row(f"{cell['miles']:,}", str(cell["streams"]), cell["data"], cell["features"],
                      mbps, "" if published is None else f"{published:g}",
                      f"{cell['wire_ratio']:.3f}" if "wire_ratio" in cell else "",
                      f"{cell['intact_runs']}/{cell['runs']}")  # fmt: skip
    if measured["accelerator"]:
        console.print(table)
    for cell in measured["accelerator"]:
        for error in cell["errors"]:
            err_console.print(f"{_label_of(cell)}: {error}")
    if measured["encryptor"]:
        _print_encryptor(measured["encryptor"])


def _print_encryptor(rows: list[dict[str, Any]]) -> None:
    table = Table(title="Link encryptor, one cubic stream (Gb/s, median of the runs)",
                  title_justify="left")  # fmt: skip
    for column in ("miles", "MTU", "oversize", "Gb/s (min-max)", "plain", "ratio",
                   "published", "cores/Gb/s", "tampered/refused"):  # fmt: skip
        table.add_column(column, justify="right")
    for row in rows:
        spread = "" if row["gbps_min"] is None else (
            f"{row['gbps']:.2f} ({row['gbps_min']:.2f}-{row['gbps_max']:.2f})")  # fmt: skip
        table.add_row(
            f"{row['miles']:g}", f"{row['mtu_bytes']:,}", row["oversize"], spread or "0",
            "" if row["plain_gbps"] is None else f"{row['plain_gbps']:.2f}",
            "" if row["ratio_to_plain"] is None else f"{row['ratio_to_plain']:.3f}",
            "" if row["published_gbps"] is None else f"{row['published_gbps']:g}",
            "" if row["crypto_cores_per_gbps"] is None else f"{row['crypto_cores_per_gbps']:.4f}",
            f"{row['tampered']}/{row['refused']}" if row["tamper"] else "",
        )  # fmt: skip
    console.print(table)
    for row in rows:
        for error in row["errors"]:
            err_console.print(f"encryptor {row['miles']:g} mi, MTU {row['mtu_bytes']}: {error}")


def _label_of(cell: dict[str, Any]) -> str:
    return f"{cell['features']}, {cell['data']}, {cell['streams']} stream(s), {cell['miles']:,} mi"


def _say_how_long(seconds: float) -> None:
    """A benchmark's expected length, before it starts: "About 25 minutes."."""
    minutes = round(seconds / 60)
    err_console.print(
        "Under a minute." if minutes < 1 else f"About {minutes} minute{'s' * (minutes > 1)}."
    )


def _on_the_testbed(work: Callable[[TimedProgress], dict[str, Any]]) -> dict[str, Any]:
    """Run a testbed benchmark under a progress bar; its errors end the command."""
    from longhaul.testbed import TestbedError, TestbedUnavailableError  # noqa: PLC0415

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TimeRemainingColumn(),
        console=err_console,
        transient=True,
    ) as bar:
        task = bar.add_task("building circuits", total=100)

        def progress(what: str, done: float, total: float) -> None:
            bar.update(task, description=what, completed=done, total=total)

        try:
            return work(progress)
        except (TestbedError, TestbedUnavailableError, ToolError) as exc:
            fail(str(exc), code=1)


def _floats(text: str, option: str) -> tuple[float, ...]:
    try:
        values = tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        fail(f"{option}: {text!r} is not a comma-separated list of numbers")
    if not values:
        fail(f"{option}: give at least one value")
    return values


@app.command()
def sim(
    json_output: Annotated[bool, typer.Option("--json", help="Print the figures as JSON.")] = False,
    seconds: Annotated[float, typer.Option(help="Simulated seconds per case.", min=1)] = 15.0,
    repetitions: Annotated[
        int, typer.Option(help="Runs of each case: its median with the least and most.", min=1)
    ] = 3,
    ns3: Annotated[
        bool, typer.Option(help="Time ns-3 on a scaled case in the same run (about a minute).")
    ] = True,
) -> None:
    """Speed of longhaul-sim at 10 Gb/s, MTU 1500 (a long path's two sides on two
    threads): events/s and the real-time factor (simulated seconds per wall-clock
    second, the median of `--repetitions` runs with the least and most) for one CUBIC
    flow over 163 ms, twenty such flows, one flow with 1e-5 random loss, and twenty flows
    of ten RTTs (26.8-163 ms) and two variants, and an InfiniBand RDMA write of 8 MB
    messages at 8,600 miles (`ib_write`, one thread); then `vs_ns3_speedup`, how many
    times faster than ns-3 it runs a scaled case (1 Gb/s, 26.8 ms, one thread each)
    timed in the same run."""
    import subprocess  # noqa: PLC0415

    from longhaul.bench import sim as sim_bench  # noqa: PLC0415
    from longhaul.sim import ns3 as ns3_sim  # noqa: PLC0415
    from longhaul.sim import runner  # noqa: PLC0415

    try:
        program = runner.binary()
    except runner.SimUnavailableError as exc:
        fail(str(exc), code=1)
    with err_console.status(f"simulating the five cases, {repetitions} runs each"):
        done = subprocess.run(
            [str(program), "bench", "--json", "--seconds", f"{seconds:g}",
             "--repetitions", str(repetitions)],
            capture_output=True, text=True, check=False, timeout=3600,
        )  # fmt: skip
    if done.returncode != 0:
        fail(f"longhaul-sim bench failed: {done.stderr.strip()[-300:]}", code=1)
    report = json.loads(done.stdout)
    report["vs_ns3_speedup"] = None
    if ns3:
        try:
            with err_console.status("timing ns-3 and longhaul-sim on the scaled case"):
                report["vs_ns3"] = sim_bench.against_ns3()
            report["vs_ns3_speedup"] = report["vs_ns3"]["speedup"]
        except ns3_sim.Ns3UnavailableError as exc:
            report["vs_ns3"] = {"skipped": str(exc)}
    else:
        report["vs_ns3"] = {"skipped": "--no-ns3"}
    if json_output:
        print_json(report)
        return
    for case in ("one_flow", "twenty_flows", "lossy", "mixed", "ib_write"):
        figures = report[case]
        console.print(
            f"{case.replace('_', ' ')}: {figures['events_per_s'] / 1e6:.2f} M events/s, "
            f"real-time factor {figures['realtime_factor']:.2f} "
            f"({figures['realtime_factor_min']:.2f}-{figures['realtime_factor_max']:.2f})"
        )
    against = report["vs_ns3"]
    if "skipped" in against:
        console.print(f"against ns-3: skipped ({against['skipped']})")
    else:
        console.print(
            f"against ns-3 ({against['case']['simulated_s']:g} simulated s of one CUBIC flow "
            f"at 1 Gb/s, 26.8 ms): ns-3 {against['ns3_wall_s']:.1f} s, longhaul-sim "
            f"{against['sim_wall_s']:.3f} s, {against['speedup']:.0f}x"
        )
