"""`longhaul sim`: the simulator's validation, presets, and one scenario."""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from longhaul.cli.common import console, err_console, fail, print_json

app = typer.Typer(
    help="longhaul-sim, the packet-level simulator: validate it, list its presets, "
    "run a scenario or a Hurricane transfer.",
    no_args_is_help=True,
)


@app.command()
def validate(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
    parts: Annotated[
        str,
        typer.Option(
            help="Which yardsticks, comma-separated: ns3 (ns-3 on shared scenarios), kernel "
            "(iperf3 through the emulated testbed; root), usn (the published TCP profiles), "
            "ib (the published InfiniBand results), rdma-lan (iWARP, InfiniBand and "
            "Myri-10G on a LAN)."
        ),
    ] = "ns3,kernel,usn",
    suite: Annotated[
        str | None,
        typer.Option(help="The same as --parts (e.g. --suite ib); wins over it when given."),
    ] = None,
    workers: Annotated[
        int | None, typer.Option(help="Simulators side by side (default: one per core).", min=1)
    ] = None,
    rerun_ns3: Annotated[
        bool,
        typer.Option(
            "--rerun-ns3",
            help="Run ns-3 on every case (3.5 hours or so on two cores) instead of taking the "
            "answers recorded with longhaul or cached here.",
        ),
    ] = False,
) -> None:
    """Hold longhaul-sim against ns-3, the kernel and the published USN TCP profiles.

    ns-3 is slow, and slower the larger its window (a case of eight flows at 163 ms takes up
    to 13 minutes). longhaul ships ns-3's answers as measured on its own machine and
    compares against them; ns-3 runs only for a case they lack (a changed case or
    bulk.cc) or with --rerun-ns3, and what it answers is kept in the data directory."""
    from longhaul.sim import validation  # noqa: PLC0415

    chosen = [p.strip() for p in (suite or parts).split(",") if p.strip()]
    unknown = sorted(set(chosen) - set(validation.PARTS))
    if unknown or not chosen:
        fail(f"--parts: choose among {', '.join(validation.PARTS)} (not {', '.join(unknown)})")
    with _bar() as bar:
        task = bar.add_task("validating", total=None)

        def progress(what: str, done: int, total: int) -> None:
            bar.update(task, description=what, completed=done, total=total)

        found = validation.validate(chosen, workers, progress, rerun_ns3)
    if as_json:
        print_json(found)
        return
    for part, result in found.items():
        if part != "summary":
            _show(part, result)


@app.command()
def presets() -> None:
    """The host and connection presets longhaul-sim knows, as JSON."""
    print_json(json.loads(_simulator("presets")))


@app.command()
def run(
    scenario: Annotated[
        Path, typer.Argument(help="A scenario JSON file.", exists=True, dir_okay=False)
    ],
    seed: Annotated[int | None, typer.Option(help="Seed of the random streams.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the whole report.")] = False,
    threads: Annotated[
        int,
        typer.Option(
            min=1,
            max=2,
            help="2: the path's two sides side by side where its one-way delay is 1 ms or "
            "more (same results); 1 when other work shares the cores.",
        ),
    ] = 2,
) -> None:
    """Run one scenario and print its goodput per interval (or the whole JSON report)."""
    from longhaul.sim import runner  # noqa: PLC0415

    data = json.loads(scenario.read_text())
    if seed is not None:
        data["seed"] = seed
    report = runner.run_scenario(data, threads=threads)
    if as_json:
        print_json(report)
        return
    for interval in report["intervals"]:
        total = interval["sum"]
        gbps = total["bits_per_second"] / 1e9
        console.print(f"{total['start']:7.2f}-{total['end']:7.2f} s  {gbps:7.3f} Gb/s")
    end = report["end"]
    console.print(
        f"received {end['sum_received']['bits_per_second'] / 1e9:.3f} Gb/s, "
        f"{end['sum_sent'].get('retransmits', 0)} retransmits; simulated "
        f"{report['perf']['simulated_s']:g} s in {report['perf']['wall_s']:.2f} s"
    )


@app.command()
def network(
    flows: Annotated[
        list[str],
        typer.Option(
            "--flow",
            help="FROM,TO[,LOOP]: streams from one host to another (node or site names), "
            "around the topology's loop LOOP if given (e.g. 'ornl-host1,ornl-host2,"
            "ORNL-Chicago x1'), else on the path of least delay. Repeat for more flows.",
        ),
    ],
    topology_file: Annotated[
        Path | None,
        typer.Option(
            "--topology",
            help="A topology TOML file; the shipped USN topology when omitted.",
            exists=True,
            dir_okay=False,
        ),
    ] = None,
    cc: Annotated[str, typer.Option(help="Congestion control of every flow.")] = "cubic",
    streams: Annotated[int, typer.Option(help="Streams per flow.", min=1)] = 1,
    duration: Annotated[float, typer.Option(help="Seconds measured.", min=0.001)] = 10.0,
    omit: Annotated[float, typer.Option(help="Seconds simulated first, left out.", min=0)] = 0.0,
    host_preset: Annotated[
        str | None, typer.Option(help="Host preset of every host (see `longhaul sim presets`).")
    ] = None,
    seed: Annotated[int | None, typer.Option(help="Seed of the random streams.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the whole report.")] = False,
) -> None:
    """Simulate TCP flows between hosts of a topology: its switches, links and loops."""
    from longhaul.cli.common import load_or_usn  # noqa: PLC0415
    from longhaul.sim import network as sim_network  # noqa: PLC0415
    from longhaul.sim import runner  # noqa: PLC0415

    parsed = []
    for text in flows:
        parts = [p.strip() for p in text.split(",")]
        if len(parts) not in (2, 3) or not all(parts):
            fail(f"--flow {text!r}: give FROM,TO or FROM,TO,LOOP")
        loop = parts[2] if len(parts) == 3 else None
        parsed.append(sim_network.NetFlow(parts[0], parts[1], cc, streams, loop))
    topology = load_or_usn(topology_file)
    scenario = sim_network.network_scenario(
        topology,
        parsed,
        duration_s=duration,
        omit_s=omit,
        host_preset=host_preset,
        seed=seed,
    )
    report = runner.run_network(scenario)
    if as_json:
        print_json(report)
        return
    table = Table("from", "to", "links", "RTT ms", "Gb/s", "retransmits")
    for group in report["groups"]:
        table.add_row(
            group["from"],
            group["to"],
            str(len(group["route"])),
            f"{group['rtt_ms']:.2f}",
            f"{group['sum_received']['bits_per_second'] / 1e9:.3f}",
            str(group["sum_sent"].get("retransmits", 0)),
        )
    console.print(table)
    perf = report["perf"]
    console.print(f"simulated {perf['simulated_s']:g} s in {perf['wall_s']:.2f} s")


@app.command("hurricane")
def hurricane_command(
    rate_gbps: Annotated[
        float, typer.Option(help="The reservation's rate (IP packets), Gb/s.", min=0.001)
    ] = 9.6,
    rtt_ms: Annotated[float, typer.Option(help="Round trip of the circuit.", min=0)] = 163.0,
    loss: Annotated[float, typer.Option(help="Random loss per packet, each way.", min=0)] = 0.0,
    queue_bytes: Annotated[
        int | None,
        typer.Option(help="The circuit's queue; one bandwidth-delay product if not given."),
    ] = None,
    nbytes: Annotated[
        int | None, typer.Option("--bytes", help="Bytes to move; 6 s of the rate if not given.")
    ] = None,
    mtu: Annotated[
        int | None,
        typer.Option(
            help="The path's MTU, a block filling one packet; 1,500 if not given.",
            min=576,
            max=9000,
        ),
    ] = None,
    nack_group: Annotated[
        int | None,
        typer.Option(
            help="k, new missing blocks that make a NACK; the simulator's default "
            "(hurricane send's) if not given.",
            min=1,
        ),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the losses and the transfer's key.")] = 1,
    as_json: Annotated[bool, typer.Option("--json", help="Print the whole report.")] = False,
) -> None:
    """One Hurricane transfer in virtual time: the `hurricane` crate's own sender and
    receiver (with `hurricane send`'s defaults) over a circuit of the emulator's link model,
    no host's CPU in the way."""
    args = ["hurricane", "--rate-gbps", str(rate_gbps), "--rtt-ms", str(rtt_ms),
            "--loss", str(loss), "--seed", str(seed)]  # fmt: skip
    optional = {"--queue-bytes": queue_bytes, "--bytes": nbytes, "--mtu": mtu,
                "--nack-group": nack_group}  # fmt: skip
    args += [part for name, value in optional.items() if value is not None
             for part in (name, str(value))]  # fmt: skip
    with _bar() as bar:
        bar.add_task("simulating the transfer", total=None)
        report = json.loads(_simulator(*args))
    if as_json:
        print_json(report)
        return
    table = Table(title="Hurricane, simulated", title_justify="left")
    for column in ("finished", "goodput Gb/s", "utilization", "resent blocks", "lost", "NACKs"):
        table.add_column(column)
    table.add_row(
        "yes" if report["finished"] else "no (time limit)",
        f"{report['goodput_bps'] / 1e9:.3f}",
        f"{report['utilization']:.4f}",
        str(report["blocks_resent"]),
        str(report["lost_forward"] + report["dropped_forward_queue"]),
        str(report["nacks_sent"]),
    )
    console.print(table)
    console.print(f"simulated {report['simulated_s']:.2f} s in {report['wall_s']:.2f} s")


def _simulator(*args: str) -> str:
    from longhaul.sim import runner  # noqa: PLC0415

    try:
        program = runner.binary()
    except runner.SimUnavailableError as exc:
        fail(str(exc), code=1)
    done = subprocess.run([str(program), *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        fail(f"longhaul-sim {' '.join(args)}: {done.stderr.strip()}", code=1)
    return done.stdout


@app.command("rdma")
def rdma_command(
    out: Annotated[
        Path, typer.Option(help="Folder for the report (index.html and its figures).")
    ] = Path("reports/rdma-lan"),
    as_json: Annotated[
        bool, typer.Option("--json", help="Print each interconnect's profile as JSON instead.")
    ] = False,
) -> None:
    """iWARP, InfiniBand and Myri-10G side by side on a LAN (the simulator's models of
    Rashti and Afsahi's comparison): latency, bandwidth and both-way bandwidth at the user
    level and under MPI, the connection, LogP, buffer re-use and queue-length sweeps, the
    what-if over the USN loops, and the validation against the study, as an HTML report."""
    from longhaul.report.rdma import write_rdma_report  # noqa: PLC0415
    from longhaul.sim import rdma, runner  # noqa: PLC0415

    try:
        if as_json:
            print_json(rdma.run("profile"))
            return
        with _bar() as bar:
            bar.add_task("running the RDMA models and drawing the report", total=None)
            profiles = rdma.run("profile")
            path = write_rdma_report(out, profiles)
    except runner.SimUnavailableError as exc:
        fail(str(exc))
    table = Table(title="RDMA on a LAN, simulated", title_justify="left")
    for column in ("interconnect", "latency µs", "MPI µs", "peak MB/s", "MPI both ways", "rndv"):
        table.add_column(column)
    for name, profile in profiles.items():
        s = profile["summary"]
        table.add_row(
            rdma.LABELS[name],
            f"{s['user_latency_us']:.2f}",
            f"{s['mpi_latency_us']:.2f}",
            f"{s['user_peak_mb_s']:.0f}",
            f"{s['mpi_bothway_peak_mb_s']:.0f}",
            f"{s['switch_point_bytes'] // 1024} KiB",
        )
    console.print(table)
    console.print(f"report: {path}")


def _bar() -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
    )


def _show(part: str, result: dict[str, Any]) -> None:
    if "skipped" in result:
        console.print(f"{part}: not run: {result['skipped']}")
        return
    if part == "ib":
        _show_ib(result)
        return
    if part == "rdma-lan":
        _show_rdma_lan(result)
        return
    if part == "usn":
        table = Table(title="USN TCP profile (published vs simulated)", title_justify="left")
        for column in ("figure", "published", "simulated", "error", "within 25 %"):
            table.add_column(column)
        for check in (*result["profile"], *result["average_dpm"]):
            verdict = "yes" if check["within"] else "[red]no[/red]"
            table.add_row(
                check["what"],
                f"{check['published']:g}",
                f"{check['sim']:g}",
                f"{check['error']:+.0%}",
                verdict,
            )
        console.print(table)
        for finding in result["findings"]:
            verdict = "holds" if finding["holds"] else "[red]does not hold[/red]"
            console.print(f"- {finding['finding']}: {verdict} {finding['evidence']}")
        return
    key = "ns3_mbps" if part == "ns3" else "kernel_gbps"
    ours = "sim_mbps" if part == "ns3" else "sim_gbps"
    table = Table(title=f"against {part}", title_justify="left")
    columns: tuple[str, ...] = ("cc", "n", "RTT ms", "loss", part, "sim", "ratio", "within")
    if part == "ns3":
        columns = ("group", "queue BDP", *columns)
    for column in columns:
        table.add_column(column)
    for case in result["cases"]:
        within = case["within"]
        verdict = "n/a" if within is None else "yes" if within else "[red]no[/red]"
        first = (case["group"], f"{case['queue_bdp']:g}") if part == "ns3" else ()
        table.add_row(
            *first,
            case["cc"],
            str(case["streams"]),
            f"{case['rtt_ms']:g}",
            f"{case.get('loss', 0):g}",
            str(case[key]),
            str(case[ours]),
            str(case["ratio"]),
            verdict,
        )
    console.print(table)
    console.print(f"{result['within']} of {result['compared']} within {result['tolerance']:.0%}")
    if part == "ns3":
        console.print(
            f"below line rate: {result['below_line_rate_within']} of "
            f"{result['below_line_rate_cases']} within (the simulator on ns-3's stack)"
        )
        linux = result["linux_stack"]
        console.print(
            f"with the simulator's Linux stack: {linux['within']} of {result['compared']} "
            f"within, {linux['below_line_rate_within']} below line rate"
        )
        _show_ns3_notes(result)


def _show_ib(result: dict[str, Any]) -> None:
    table = Table(title="InfiniBand (published vs simulated)", title_justify="left")
    for column in ("table", "figure", "published", "simulated", "error", "within"):
        table.add_column(column)
    for case in result["cases"]:
        published = case["published"]
        shown = (
            f"{published[0]:g}-{published[1]:g}"
            if isinstance(published, list)
            else f"{published:g}"
            if isinstance(published, float | int)
            else str(published)
        )
        sim = case["sim"]
        sim_shown = (
            ", ".join(f"{k} {v:g}" for k, v in sim.items()) if isinstance(sim, dict) else f"{sim:g}"
        )
        error = "" if case["error"] is None else f"{case['error']:+.1%}"
        verdict = "yes" if case["within"] else "[red]no[/red]"
        table.add_row(case["table"], case["what"], shown, sim_shown, error, verdict)
    console.print(table)
    summary = result["summary"]
    console.print(f"{summary['within']} of {summary['cases']} within; units: {result['units']}")


def _show_rdma_lan(result: dict[str, Any]) -> None:
    table = Table(title="RDMA on a LAN (published vs simulated)", title_justify="left")
    for column in ("figure", "unit", "published", "simulated", "rule", "basis", "within"):
        table.add_column(column)
    for case in result["cases"]:
        verdict = "yes" if case["within"] else "[red]no[/red]"
        table.add_row(
            case["what"],
            case["unit"],
            f"{case['published']:g}",
            f"{case['sim']:g}",
            case["rule"],
            case["basis"],
            verdict,
        )
    console.print(table)
    s = result["summary"]
    console.print(
        f"{s['within']} of {s['cases']} within; of the {s['predicted']} not fitted, "
        f"{s['predicted_within']}; units: {result['units']}"
    )


def _show_ns3_notes(result: dict[str, Any]) -> None:
    """Where ns-3's answers came from, and why the cases that differ do."""
    sources = sorted({case["ns3_from"] for case in result["cases"]})
    console.print(f"ns-3's answers: {', '.join(sources)}")
    for key, stack in (("difference", "ns-3's stack"), ("linux_difference", "Linux's stack")):
        differences = Counter(case[key] for case in result["cases"] if case.get(key))
        for why, count in differences.items():
            console.print(f"- {stack}, {count} case{'s' if count > 1 else ''}: {why}")
    if result["unexplained"]:
        console.print(f"[red]{result['unexplained']} cases differ for no known reason[/red]")
    if result["ns3_failed"]:
        console.print(f"{result['ns3_failed']} cases without a yardstick: ns-3 failed on them")
