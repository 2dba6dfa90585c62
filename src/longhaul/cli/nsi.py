"""`longhaul nsi ...`: NSI CS v2 connections through a server's API, in its domain or
across the domains it peers with."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.table import Table

from longhaul.cli.common import console
from longhaul.cli.reservations import JsonOption, ServerOption, _client, _run, _time
from longhaul.parsing import parse_duration, parse_instant

app = typer.Typer(
    help="NSI CS v2 connections: reserve (held), commit or abort, provision, release, "
    "modify, terminate; the four queries between STPs.",
    no_args_is_help=True,
)

ConnectionArg = Annotated[str, typer.Argument(help="The connection id `nsi reserve` printed.")]


@app.command()
def reserve(
    source: Annotated[str, typer.Option("--from", help="Source STP.")],
    dest: Annotated[str, typer.Option("--to", help="Destination STP.")],
    capacity: Annotated[int, typer.Option(help="Mb/s.", min=1)],
    end: Annotated[str, typer.Option(help="End time with a zone.")],
    start: Annotated[str | None, typer.Option(help="Start time with a zone. Default: now.")] = None,
    commit: Annotated[
        bool, typer.Option("--commit", help="Commit at once instead of leaving it held.")
    ] = False,
    description: Annotated[str, typer.Option(help="What it is for.")] = "",
    server: ServerOption = None,
    json_output: JsonOption = False,
) -> None:
    """Hold capacity between two STPs (across domains if they are in two); it is given
    back unless committed before the hold times out."""
    body: dict[str, Any] = {
        "source_stp": source,
        "dest_stp": dest,
        "capacity_mbps": capacity,
        "end_time": parse_instant(end, "--end").isoformat(),
        "description": description,
    }
    if start:
        body["start_time"] = parse_instant(start, "--start").isoformat()
    with _client(server) as client:
        made = _run(lambda: client.nsi_reserve(body))
        if commit:
            made = _run(lambda: client.nsi_request(made["connection_id"], "reserve-commit"))
    _show(made, json_output)


def _request(what: str, doc: str) -> None:
    def command(
        connection: ConnectionArg, server: ServerOption = None, json_output: JsonOption = False
    ) -> None:
        with _client(server) as client:
            done = _run(lambda: client.nsi_request(connection, what))
        _show(done, json_output)

    command.__doc__ = doc
    app.command(name=what.removeprefix("reserve-"))(command)


_request("reserve-commit", "Keep what a reserve or a modify holds.")
_request("reserve-abort", "Give back what a reserve or a modify holds.")
_request("provision", "Have the circuit up during its slot.")
_request("release", "Take the circuit down; the reservation stays.")
_request("terminate", "End the connection, tearing down what is up.")


@app.command()
def modify(
    connection: ConnectionArg,
    capacity: Annotated[int | None, typer.Option(help="New Mb/s.", min=1)] = None,
    end: Annotated[str | None, typer.Option(help="New end time with a zone.")] = None,
    server: ServerOption = None,
    json_output: JsonOption = False,
) -> None:
    """Hold a new capacity or end time; `nsi commit` makes it the connection's."""
    body: dict[str, Any] = {"capacity_mbps": capacity}
    if end:
        body["end_time"] = parse_instant(end, "--end").isoformat()
    with _client(server) as client:
        held = _run(lambda: client.nsi_request(connection, "modify", body))
    _show(held, json_output)


@app.command(name="list")
def list_connections(server: ServerOption = None, json_output: JsonOption = False) -> None:
    """Your connections (an admin's: everyone's)."""
    with _client(server) as client:
        found = _run(client.nsi_connections)
    if json_output:
        print(json.dumps(found, indent=2))
        return
    table = Table("connection", "Mb/s", "start", "states", "up")
    table.columns[0].no_wrap = True  # an id to copy: never cut
    for item in found:
        states = [item["reservation_state"], item["provision_state"], item["lifecycle_state"]]
        table.add_row(
            item["connection_id"],
            f"{item['capacity_mbps']:,}",
            _time(item["start_time"]),
            " ".join(state for state in states if state),
            "yes" if item["data_plane_active"] else "",
        )
    console.print(table)


@app.command()
def show(
    connection: ConnectionArg, server: ServerOption = None, json_output: JsonOption = False
) -> None:
    """One connection, with its segments when it crosses domains."""
    with _client(server) as client:
        found = _run(lambda: client.nsi_connection(connection))
    _show(found, json_output)


@app.command()
def available(
    source: Annotated[str, typer.Option("--from", help="Source STP.")],
    dest: Annotated[str, typer.Option("--to", help="Destination STP.")],
    start: Annotated[str, typer.Option(help="Slot start (or, with --duration, not before).")],
    end: Annotated[str | None, typer.Option(help="Slot end: the highest capacity free.")] = None,
    capacity: Annotated[int | None, typer.Option(help="With --duration: Mb/s.", min=1)] = None,
    duration: Annotated[
        str | None, typer.Option(help="With --capacity: the earliest start.")
    ] = None,
    server: ServerOption = None,
    json_output: JsonOption = False,
) -> None:
    """Across the domains: the highest capacity free from --start to --end, or the
    earliest start for --capacity and --duration."""
    ends = {"source_stp": source, "dest_stp": dest}
    begin = parse_instant(start, "--start").isoformat()
    with _client(server) as client:
        if capacity is not None and duration is not None:
            seconds = int(parse_duration(duration, "--duration").total_seconds())
            params = {**ends, "capacity_mbps": capacity, "duration": seconds, "not_before": begin}
            found = _run(lambda: client.nsi_availability("earliest-start", **params))
            line = (
                f"earliest start: {_time(found['start_time']) if found['start_time'] else 'never'}"
            )
        elif end is not None:
            params = {
                **ends,
                "start_time": begin,
                "end_time": parse_instant(end, "--end").isoformat(),
            }
            found = _run(lambda: client.nsi_availability("max-bandwidth", **params))
            line = f"highest capacity free: {found['capacity_mbps']:,} Mb/s"
        else:
            raise typer.BadParameter("give --end, or --capacity and --duration")
    if json_output:
        print(json.dumps(found, indent=2))
        return
    console.print(line)
    for segment in found["segments"]:
        console.print(f"  {segment['network']}: {segment['source']} → {segment['dest']}")


def _show(item: dict[str, Any], json_output: bool) -> None:
    if json_output:
        print(json.dumps(item, indent=2))
        return
    provision = item["provision_state"] or "-"
    console.print(
        f"Connection {item['connection_id']}: {item['capacity_mbps']:,} Mb/s from "
        f"{_time(item['start_time'])} to {_time(item['end_time'])}; "
        f"{item['reservation_state']}, {provision}, {item['lifecycle_state']}"
        + (", up" if item["data_plane_active"] else "")
    )
    for segment in item.get("segments") or []:
        console.print(
            f"  {segment['source_stp']} → {segment['dest_stp']}: {segment['reservation_state']}"
        )
