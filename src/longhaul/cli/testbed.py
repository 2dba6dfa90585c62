"""`longhaul testbed`: build, look at, use and remove the emulated data plane."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path as FilePath
from typing import Annotated, Any

import typer
from rich.table import Table

from longhaul.cli.common import console, fail, load_or_usn, note, print_json
from longhaul.testbed.netns import TestbedError, TestbedUnavailableError
from longhaul.testbed.plan import DEFAULT_LOOPS_MILES, parse_loops
from longhaul.testbed.state import CircuitRecord
from longhaul.testbed.testbed import CircuitStatus, Testbed

app = typer.Typer(
    help="The emulated testbed: network namespaces joined by longhaul-wan circuits (needs root).",
    no_args_is_help=True,
)

TopologyOption = Annotated[
    FilePath | None,
    typer.Option("--topology", help="Topology TOML file. Default: the USN topology."),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON.")]


def _testbed(topology: FilePath | None) -> Testbed:
    # What `longhaul testbed up` builds stays up after the command, until `down`.
    return Testbed(load_or_usn(topology), persistent=True)


def _run(work: Any, bed: Testbed | None = None) -> Any:
    """Run testbed work; what the machine cannot do or what failed is one line, exit 1.
    What was swept of testbeds killed earlier is said first."""
    try:
        result = work()
    except TestbedUnavailableError as exc:
        fail(str(exc), code=1)
    except PermissionError as exc:
        fail(f"the emulated testbed needs root ({exc.strerror}: {exc.filename})", code=1)
    except TestbedError as exc:
        fail(f"{exc} (`longhaul testbed down` removes what was made)", code=1)
    if bed is not None and bed.swept:
        note(bed.swept.describe())
    return result


@app.command()
def up(
    loops: Annotated[
        str,
        typer.Option(help="Loop-back lengths in miles, comma-separated (34,400 at most)."),
    ] = ",".join(f"{m:g}" for m in DEFAULT_LOOPS_MILES),
    rate: Annotated[
        float | None,
        typer.Option(
            help="Rate of every loop in Gb/s. Default: each loop's own (9.29 for "
            "USN's, set by its WAN-PHY links).",
            min=0.001,
            max=100,
        ),
    ] = None,
    jitter: Annotated[
        str | None,
        typer.Option(
            help="Queueing jitter of a packet-switched core, as a VLAN over Ethernet "
            "switches or an MPLS tunnel over routers has and a SONET circuit has not: "
            "hops=N,mean=DURATION, an exponential wait of that mean at each hop, "
            "e.g. hops=4,mean=150us.",
        ),
    ] = None,
    topology: TopologyOption = None,
    json_output: JsonOption = False,
) -> None:
    """Build the loop-backs: two ORNL hosts (namespaces lh-ornl-host1, -2) and a circuit
    for each loop, with its propagation delay, rate and layer (framing)."""
    lengths = parse_loops(loops)
    rate_bps = None if rate is None else round(rate * 1e9)
    bed = _testbed(topology)
    made = _run(lambda: bed.up(lengths, rate_bps, jitter=jitter), bed)
    if json_output:
        print_json([asdict(c) for c in made])
        return
    table = _table("#", "circuit", "addresses", "Gb/s", "RTT ms", "layer")
    for c in made:
        layer = c.layer + (f", jitter {c.jitter}" if c.jitter else "")
        table.add_row(str(c.number), c.name, _addresses(c), f"{c.rate_bps / 1e9:g}",
                      f"{c.rtt_ms:.2f}", layer)  # fmt: skip
    console.print(table)
    first = made[0]
    note(f"Hosts {first.src_ns} and {first.dst_ns}. "
         f"Try: longhaul testbed exec {first.src_host} -- ping -c 3 {first.dst_addr}")  # fmt: skip


@app.command()
def status(topology: TopologyOption = None, json_output: JsonOption = False) -> None:
    """Circuits, their emulators and their counters."""
    bed = _testbed(topology)
    statuses = _run(bed.status, bed)
    if json_output:
        print_json([_status_json(s) for s in statuses])
        return
    if not statuses:
        console.print("The testbed is down (no circuits). `longhaul testbed up` builds it.")
        return
    table = _table("#", "circuit", "owner", "addresses", "Gb/s", "RTT ms", "pid", "sent",
                   "drops", "stalls")  # fmt: skip
    for s in statuses:
        c = s.record
        ab = (s.stats or {}).get("a_to_b", {})
        ba = (s.stats or {}).get("b_to_a", {})
        sent = ab.get("tx_bytes", 0) + ba.get("tx_bytes", 0)
        dropped = sum(d.get("dropped_queue_segments", 0) for d in (ab, ba))
        stalls = sum(d.get("stalls", 0) for d in (ab, ba))
        state = str(c.pid) if s.alive else "[red]gone[/]"
        table.add_row(str(c.number), c.name, c.owner, _addresses(c),
                      f"{c.rate_bps / 1e9:g}", f"{c.rtt_ms:.2f}", state, _bytes(sent),
                      str(dropped), str(stalls))  # fmt: skip
    console.print(table)


def _table(*columns: str) -> Table:
    table = Table(box=None, header_style="bold", padding=(0, 2, 0, 0))
    for column in columns:
        numeric = column in ("#", "Gb/s", "RTT ms", "sent", "drops", "stalls")
        table.add_column(column, justify="right" if numeric else "left")
    return table


def _addresses(c: CircuitRecord) -> str:
    """`198.18.0.5 → .6`: the destination differs from the source in its last part only."""
    return f"{c.src_addr} → .{c.dst_addr.rsplit('.', 1)[1]}"


def _status_json(s: CircuitStatus) -> dict[str, Any]:
    return {**asdict(s.record), "alive": s.alive, "stats": s.stats}


def _bytes(n: int) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


@app.command(
    name="exec", context_settings={"allow_extra_args": True, "ignore_unknown_options": True}
)
def exec_(
    ctx: typer.Context,
    host: Annotated[str, typer.Argument(help="A topology host (ornl-host1) or an lh- namespace.")],
    topology: TopologyOption = None,
) -> None:
    """Run a command inside a host: `longhaul testbed exec ornl-host1 -- ping 198.18.0.10`."""
    code = _run(lambda: _testbed(topology).exec(host, ctx.args))
    raise typer.Exit(code)


@app.command()
def cross(
    circuit: Annotated[int, typer.Argument(help="The circuit's number (see status).")],
    rate: Annotated[float, typer.Option(help="Gb/s of UDP (IP bytes).", min=0.001, max=40)] = 2.0,
    duration: Annotated[float, typer.Option(help="Seconds.", min=0.5, max=3600)] = 10.0,
    topology: TopologyOption = None,
    json_output: JsonOption = False,
) -> None:
    """Send real UDP cross-traffic over a circuit, from the cross-traffic host to a sink
    at the circuit's far end, and say whether the rate held."""
    from longhaul.testbed import crosstraffic  # noqa: PLC0415

    bed = _testbed(topology)

    def send() -> crosstraffic.CrossTrafficResult:
        attached = bed.attach_cross_host(circuit)
        return crosstraffic.run(bed.circuit(circuit), attached, round(rate * 1e9), duration)

    result = _run(send)
    if json_output:
        print_json({"sent": result.sent, "received": result.received})
        return
    console.print(
        f"Sent {result.sent['rate_bps'] / 1e9:.3f} Gb/s, received "
        f"{result.received_rate_bps / 1e9:.3f} Gb/s, {result.lost:,} lost "
        f"({result.received.get('datagrams', 0):,} datagrams)."
    )


@app.command()
def down(
    all_: Annotated[
        bool,
        typer.Option(
            "--all",
            help="Also remove every lh- namespace and stray emulator that "
            "was never recorded (after a crash).",
        ),
    ] = False,
    topology: TopologyOption = None,
) -> None:
    """Stop the emulators, remove the namespaces, restore the host's sysctls."""
    bed = _testbed(topology)
    gone = _run(lambda: bed.down(everything=all_), bed)
    restored = ", ".join(f"{k} = {v}" for k, v in gone.restored_sysctls.items())
    console.print(
        f"Stopped {gone.emulators} emulator(s); removed {len(gone.namespaces)} namespace(s)"
        + (f"; restored {restored}" if restored else "")
        + "."
    )
