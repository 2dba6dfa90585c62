"""`longhaul topology`: look at a topology."""

from __future__ import annotations

from pathlib import Path as FilePath
from typing import Annotated, Any

import typer
from rich.table import Table

from longhaul.cli.common import console, load_or_usn, print_json
from longhaul.topology import Topology, topology_to_dict

app = typer.Typer(
    help="Look at a topology: sites, switches, links, loop-backs.", no_args_is_help=True
)

TopologyFile = Annotated[
    FilePath | None,
    typer.Argument(
        help="A topology TOML file; the shipped USN topology when omitted.", show_default=False
    ),
]


@app.command()
def show(
    file: TopologyFile = None,
    json_output: Annotated[
        bool, typer.Option("--json", help="Print JSON instead of tables.")
    ] = False,
) -> None:
    """Show sites, links with lengths and delays, and loop-backs with their RTTs."""
    topology = load_or_usn(file)
    if json_output:
        print_json(_as_json(topology))
        return
    _print_tables(topology)


def _as_json(topology: Topology) -> dict[str, Any]:
    data = topology_to_dict(topology)
    for entry, link in zip(data["links"], topology.links.values(), strict=True):
        entry["one_way_delay_us"] = round(link.one_way_delay_us, 3)
    for entry, view in zip(data["loops"], topology.loops.values(), strict=True):
        entry["length_miles"] = round(view.length_miles, 3)
        entry["rtt_ms"] = round(view.rtt_ms, 3)
    return data


def _print_tables(topology: Topology) -> None:
    console.print(
        f"[bold]{topology.name}[/]: {len(topology.sites)} sites, {len(topology.nodes)} nodes, "
        f"{len(topology.links)} links, {len(topology.loops)} loop-backs\n",
        markup=True,
    )
    sites = _table("Sites", ("site", "gateway", "nodes~", "name~"))
    for site in topology.sites.values():
        members = sorted(n.id for n in topology.nodes.values() if n.site == site.id)
        sites.add_row(site.id, site.gateway or "", ", ".join(members), site.name)
    console.print(sites, "")

    links = _table(
        "Links (delay is one-way; ports with --json)",
        ("link", "ends", "layer", "miles>", "Mb/s>", "delay ms>"),
    )
    for link in topology.links.values():
        links.add_row(
            link.id,
            f"{link.a.node}–{link.b.node}",
            link.layer.value,
            f"{link.length_miles:,g}",
            f"{link.capacity_mbps:,}",
            f"{link.one_way_delay_us / 1000:.3f}",
        )
    console.print(links)
    console.print(_granules(topology) + "\n")

    if topology.loops:
        loops = _table(
            "Loop-backs (RTT: twice the loop's one-way delay)",
            ("loop", "miles>", "hops>", "RTT ms>", "measured ms>"),
        )
        for view in sorted(topology.loops.values(), key=lambda v: v.length_miles):
            measured = view.loop.measured_rtt_ms
            loops.add_row(
                view.name,
                f"{view.length_miles:,.1f}",
                str(view.path.hop_count),
                f"{view.rtt_ms:.2f}",
                "" if measured is None else f"{measured:g}",
            )
        console.print(loops)


def _granules(topology: Topology) -> str:
    """One line: the granule each layer books in, e.g. `150 Mb/s on oc192; 1 Mb/s on gige`."""
    by_size: dict[int, set[str]] = {}
    for link in topology.links.values():
        by_size.setdefault(link.granularity_mbps, set()).add(link.layer.value)
    parts = [f"{size:,} Mb/s on {', '.join(sorted(layers))}" for size, layers in by_size.items()]
    return "Requests book whole granules: " + "; ".join(parts) + "."


def _table(title: str, columns: tuple[str, ...]) -> Table:
    """A borderless table; a column named `x>` is right-aligned, `x~` may wrap."""
    table = Table(
        title=title,
        title_justify="left",
        title_style="bold",
        header_style="bold",
        box=None,
        padding=(0, 1, 0, 0),
    )
    for column in columns:
        right, wraps = column.endswith(">"), column.endswith("~")
        table.add_column(
            column.removesuffix(">").removesuffix("~"),
            justify="right" if right else "left",
            no_wrap=not wraps,
        )
    return table
