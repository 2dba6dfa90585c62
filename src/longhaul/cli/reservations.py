"""`longhaul login`, `reserve`, `reservations`, `show`, `modify`, `cancel`: the clients."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from typing import Annotated, Any

import typer
from rich.table import Table

from longhaul.cli.common import console, fail, note, say_error
from longhaul.control.client import (
    ApiError,
    Client,
    ClientConfig,
    UnreachableError,
    load_config,
    save_config,
)
from longhaul.parsing import parse_duration, parse_instant

ServerOption = Annotated[
    str | None,
    typer.Option(
        "--server",
        help="Default: $LONGHAUL_SERVER, the config file, or http://127.0.0.1:8642.",
        show_default=False,
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print the server's JSON.")]


def _client(server: str | None) -> Client:
    config = load_config()
    if server:
        config = replace(config, server=server)
    if not config.token and not config.cert:
        fail("no token; sign in with `longhaul login --token TOKEN` or set $LONGHAUL_TOKEN")
    return Client(config)


def _run(call: Any) -> Any:
    """Call the API; a refusal prints what the server said (and its suggestions), exit 2."""
    try:
        return call()
    except UnreachableError as exc:
        fail(str(exc), code=1)
    except ApiError as exc:
        say_error(str(exc))
        for item in exc.problem.get("errors", []):
            if f"{item['field']}:" not in str(exc):
                note(f"  {item['field']}: {item['message']}")
        hints = exc.problem.get("suggestions") or {}
        earliest = (hints.get("earliest_start") or {}).get("start")
        if earliest:
            note(f"  the earliest start with that bandwidth: {earliest}")
        if hints.get("max_bandwidth_mbps"):
            note(f"  the most free in that slot: {hints['max_bandwidth_mbps']:,} Mb/s")
        raise typer.Exit(2 if exc.status < 500 else 1) from None


def login(
    token: Annotated[str, typer.Option(help="The token `longhaul user add` printed.")],
    server: ServerOption = None,
    ca: Annotated[
        str | None,
        typer.Option(help="CA file to verify an HTTPS server with (e.g. its server.crt)."),
    ] = None,
) -> None:
    """Check a token against the server and save both in the config file."""
    base = load_config()
    config = ClientConfig(server=server or base.server, token=token, ca=ca or base.ca)
    with Client(config) as client:
        _run(lambda: client.reservations(limit=1))
    path = save_config(config)
    console.print(f"Signed in to {config.server}; saved in {path}")


def reserve(
    src: Annotated[str, typer.Option(help="node, site or node:port, e.g. ornl-e300:1/0.")],
    dst: Annotated[str, typer.Option(help="node, site or node:port.")],
    bandwidth: Annotated[int, typer.Option(help="Mb/s.")],
    duration: Annotated[str | None, typer.Option(help="2h, 90m, 1h30m (or give --end).")] = None,
    end: Annotated[str | None, typer.Option(help="End time with a zone.")] = None,
    start: Annotated[str | None, typer.Option(help="Start time with a zone. Default: now.")] = None,
    asap: Annotated[
        bool, typer.Option("--asap", help="The earliest start at or after --start (or now).")
    ] = False,
    route: Annotated[str | None, typer.Option(help="Comma-separated links to walk.")] = None,
    loop: Annotated[
        str | None, typer.Option(help="A loop-back to walk, e.g. 'ORNL-Chicago x1'.")
    ] = None,
    description: Annotated[str, typer.Option(help="What it is for.")] = "",
    server: ServerOption = None,
    json_output: JsonOption = False,
) -> None:
    """Book bandwidth between two ends; if it is not free, say what would be."""
    when = parse_instant(start, "--start").isoformat() if start else None
    body: dict[str, Any] = {
        "src": _end(src),
        "dst": _end(dst),
        "bandwidth_mbps": bandwidth,
        "description": description,
        "start": "asap" if asap else (when or "now"),
    }
    if asap and when:
        body["not_before"] = when
    if duration:
        body["duration"] = parse_duration(duration, "--duration").total_seconds()
    if end:
        body["end"] = parse_instant(end, "--end").isoformat()
    if route:
        body["route"] = [link.strip() for link in route.split(",") if link.strip()]
    if loop:
        body["loop"] = loop
    with _client(server) as client:
        made = _run(lambda: client.create(body))
    if json_output:
        print(json.dumps(made, indent=2))
        return
    _summary(made)


def _summary(item: dict[str, Any]) -> None:
    path = item.get("path") or {}
    console.print(f"Reservation {item['id']} {item['state']}: {item['bandwidth_mbps']:,} Mb/s "
                  f"from {_time(item['start'])} to {_time(item['end'])}")  # fmt: skip
    console.print(f"  via {' → '.join(path.get('nodes', []))} (RTT {path.get('rtt_ms', 0):.2f} ms)")


def reservations(
    state: Annotated[
        list[str] | None, typer.Option(help="Only these states (repeat for more).")
    ] = None,
    server: ServerOption = None,
    json_output: JsonOption = False,
) -> None:
    """List your reservations (an admin's: everyone's)."""
    with _client(server) as client:
        page = _run(lambda: client.reservations(state=state, limit=1000))
    if json_output:
        print(json.dumps(page, indent=2))
        return
    table = Table(box=None, header_style="bold", padding=(0, 1, 0, 0))
    for column in ("#", "state", "owner", "from", "to", "Mb/s", "start (UTC)", "end (UTC)"):
        table.add_column(column, justify="right" if column in ("#", "Mb/s") else "left")
    for r in page["items"]:
        ends = (_end_text(r["src"]), _end_text(r["dst"]))
        slot = (_short_time(r["start"]), _short_time(r["end"]))
        mbps = f"{r['bandwidth_mbps']:,}"
        table.add_row(str(r["id"]), r["state"], r["owner"], *ends, mbps, *slot)
    console.print(table)
    console.print(f"{len(page['items'])} of {page['total']}")


def show(
    reservation_id: Annotated[int, typer.Argument(help="The reservation's number.")],
    server: ServerOption = None,
    json_output: JsonOption = False,
) -> None:
    """One reservation with its path and history."""
    with _client(server) as client:
        item = _run(lambda: client.get(reservation_id))
        history = _run(lambda: client.history(reservation_id))
    if json_output:
        print(json.dumps({**item, "history": history}, indent=2))
        return
    path = item.get("path") or {}
    version = f"({item['state']}, version {item['version']})"
    console.print(f"Reservation {item['id']} {version}, owner {item['owner']}")
    ends = f"from {_end_text(item['src'])} to {_end_text(item['dst'])}"
    console.print(f"  {item['bandwidth_mbps']:,} Mb/s {ends}")
    console.print(f"  {_time(item['start'])} → {_time(item['end'])}")
    nodes = " → ".join(path.get("nodes", []))
    console.print(f"  via {nodes}; {path.get('hops', 0)} hops, RTT {path.get('rtt_ms', 0):.2f} ms")
    for c in history:
        before = c["from_state"] or "-"
        console.print(
            f"  {_time(c['at'])}  {before:>12} → {c['to_state']:<12} {c['reason']} ({c['actor']})"
        )


def modify(
    reservation_id: Annotated[int, typer.Argument(help="The reservation's number.")],
    end: Annotated[str | None, typer.Option(help="New end time with a zone.")] = None,
    bandwidth: Annotated[int | None, typer.Option(help="New bandwidth, Mb/s.")] = None,
    server: ServerOption = None,
    json_output: JsonOption = False,
) -> None:
    """Change a reservation's end or bandwidth: kept on its path if it fits there, else
    re-routed; if it fits nowhere, it stays as it was."""
    if end is None and bandwidth is None:
        fail("nothing to change: give --end, --bandwidth or both")
    body: dict[str, Any] = {}
    if end is not None:
        body["end"] = parse_instant(end, "--end").isoformat()
    if bandwidth is not None:
        body["bandwidth_mbps"] = bandwidth
    with _client(server) as client:
        item = _run(lambda: client.modify(reservation_id, body))
    if json_output:
        print(json.dumps(item, indent=2))
        return
    _summary(item)


def cancel(
    reservation_id: Annotated[int, typer.Argument(help="The reservation's number.")],
    server: ServerOption = None,
) -> None:
    """Cancel a reservation (an active one is torn down first)."""
    with _client(server) as client:
        item = _run(lambda: client.cancel(reservation_id))
    console.print(f"Reservation {item['id']}: {item['state']}")


def _time(text: str) -> str:
    """`2030-01-07T09:00:00.25Z` as `2030-01-07 09:00:00 UTC`."""
    return datetime.fromisoformat(text).astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _short_time(text: str) -> str:
    """`2030-01-07T09:00:00Z` as `2030-01-07 09:00` (UTC, as the header says)."""
    return datetime.fromisoformat(text).astimezone(UTC).strftime("%Y-%m-%d %H:%M")


def _end(text: str) -> dict[str, str]:
    node, sep, port = text.partition(":")
    return {"node": node, "port": port} if sep else {"node": node}


def _end_text(end: dict[str, Any]) -> str:
    return end["node"] if not end.get("port") else f"{end['node']}:{end['port']}"
