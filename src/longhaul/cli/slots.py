"""`longhaul slots`: the four path-computation answers for one request."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path as FilePath
from typing import Annotated, Any

import typer
from rich.table import Table

from longhaul.cli.common import console, load_or_usn, print_json, when
from longhaul.errors import InputError
from longhaul.parsing import (
    format_duration,
    format_instant,
    parse_duration,
    parse_instant,
    parse_route,
)
from longhaul.schedule import Availability, Booking, EarliestStart, End, Slots, WidestPath
from longhaul.schedule.bookings import loads_bookings
from longhaul.topology import Path


@dataclass(frozen=True)
class Answers:
    """The request as understood, and the answer to each query."""

    src: End
    dst: End
    bandwidth_mbps: int
    duration: timedelta
    start: datetime
    window: tuple[datetime, datetime]
    bookings: int
    fixed_slot: Path | None
    earliest_start: EarliestStart | None
    max_bandwidth: WidestPath
    all_slots: Slots


def slots(
    src: Annotated[
        str, typer.Option(help="Source: a node, a site or node:port (ORNL, ornl-e300:1/0).")
    ],
    dst: Annotated[str, typer.Option(help="Destination: a node, a site or node:port.")],
    bandwidth: Annotated[int, typer.Option(help="Bandwidth in Mb/s.", show_default=False)],
    duration: Annotated[str, typer.Option(help="How long: 2h, 90m, 1h30m, 3d.")],
    start: Annotated[
        str | None,
        typer.Option(
            help="Start of the slot asked about, with a zone (2030-01-07T09:00Z). "
            "Default: the next whole minute."
        ),
    ] = None,
    window: Annotated[str, typer.Option(help="How far from --start to look for all slots.")] = "7d",
    bookings: Annotated[
        FilePath | None,
        typer.Option(
            help="TOML file of bookings already held (see data/bookings/).",
            exists=True,
            dir_okay=False,
        ),
    ] = None,
    topology: Annotated[
        FilePath | None,
        typer.Option(
            help="Topology TOML file. Default: the shipped USN topology.",
            exists=True,
            dir_okay=False,
        ),
    ] = None,
    route: Annotated[
        str | None,
        typer.Option(help="Walk these links (comma-separated) instead of searching a path."),
    ] = None,
    loop: Annotated[
        str | None,
        typer.Option(help="Walk this loop-back of the topology (e.g. 'ORNL-Chicago x1')."),
    ] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Ask the four path-computation queries for one request.

    1. is BANDWIDTH free from START for DURATION, and on which path;
    2. the earliest start at or after START for BANDWIDTH and DURATION;
    3. the highest bandwidth free from START for DURATION;
    4. every start within WINDOW of START at which BANDWIDTH fits for DURATION.
    """
    length = parse_duration(duration, "--duration")
    first = parse_instant(start, "--start") if start else _next_minute()
    span = parse_duration(window, "--window")
    held: list[tuple[Booking, ...]] = []
    if bookings is not None:
        held = loads_bookings(bookings.read_text(encoding="utf-8"), source=str(bookings))
    try:
        avail = Availability(load_or_usn(topology), [b for entry in held for b in entry])
    except InputError as exc:
        # Name the entry of the file, not the flattened list the library saw.
        raise InputError(f"{bookings}: {_entry_of(exc.field, held)}", exc.reason) from None
    links = parse_route(avail.topology, route, loop, "--route", "--loop")
    answers = ask(avail, src, dst, bandwidth, length, first, span, len(held), links)
    if json_output:
        print_json(as_json(answers))
    else:
        show(answers, avail, bookings)


def ask(
    avail: Availability,
    src: str,
    dst: str,
    bandwidth_mbps: int,
    duration: timedelta,
    start: datetime,
    span: timedelta,
    bookings: int,
    route: list[str] | None = None,
) -> Answers:
    window = (start, start + span)
    return Answers(
        src=avail.end(src, "src"),
        dst=avail.end(dst, "dst"),
        bandwidth_mbps=bandwidth_mbps,
        duration=duration,
        start=start,
        window=window,
        bookings=bookings,
        fixed_slot=avail.fixed_slot(src, dst, bandwidth_mbps, start, start + duration, route),
        earliest_start=avail.earliest_start(src, dst, bandwidth_mbps, duration, start, route),
        max_bandwidth=avail.max_bandwidth(src, dst, start, start + duration, route),
        all_slots=avail.all_slots(src, dst, bandwidth_mbps, duration, window, route),
    )


def as_json(a: Answers) -> dict[str, Any]:
    def path(p: Path | None) -> dict[str, Any] | None:
        return None if p is None else p.as_dict()

    earliest = a.earliest_start
    return {
        "request": {
            "src": a.all_slots.src,
            "dst": a.all_slots.dst,
            "src_end": str(a.src),
            "dst_end": str(a.dst),
            "bandwidth_mbps": a.bandwidth_mbps,
            "duration_s": a.duration.total_seconds(),
            "start": format_instant(a.start),
            "window": [format_instant(a.window[0]), format_instant(a.window[1])],
            "bookings": a.bookings,
        },
        "fixed_slot": {
            "start": format_instant(a.start),
            "end": format_instant(a.start + a.duration),
            "path": path(a.fixed_slot),
        },
        "earliest_start": None
        if earliest is None
        else {"start": format_instant(earliest.start), "path": path(earliest.path)},
        "max_bandwidth": {
            "start": format_instant(a.start),
            "end": format_instant(a.start + a.duration),
            "bandwidth_mbps": a.max_bandwidth.bandwidth_mbps,
            "path": path(a.max_bandwidth.path),
        },
        "all_slots": {
            "starts": [
                {"first_start": format_instant(lo), "last_start": format_instant(hi)}
                for lo, hi in a.all_slots.windows()
            ],
        },
    }


def show(a: Answers, avail: Availability, bookings: FilePath | None) -> None:
    mbps, length = f"{a.bandwidth_mbps:,} Mb/s", format_duration(a.duration)
    end = a.start + a.duration
    held = f"{a.bookings} reservation(s) held in {bookings}" if bookings else "no bookings"
    console.print(
        f"[bold]{mbps} for {length}[/] from {a.all_slots.src} ([cyan]{a.src}[/]) "
        f"to {a.all_slots.dst} ([cyan]{a.dst}[/])\non {avail.topology.name}, against {held}.\n",
        markup=True,
    )

    console.print(f"[bold]1. Fixed slot[/] {when(a.start)} → {when(end)}", markup=True)
    if a.fixed_slot is None:
        console.print(f"   no path has {mbps} free throughout")
    else:
        _path_lines(a.fixed_slot)

    console.print(f"\n[bold]2. Earliest start[/] at or after {when(a.start)}", markup=True)
    if a.earliest_start is None:
        console.print(f"   never: no path can carry {mbps} even when idle")
    else:
        console.print(f"   {when(a.earliest_start.start)}")
        _path_lines(a.earliest_start.path)

    console.print(f"\n[bold]3. Highest bandwidth[/] {when(a.start)} → {when(end)}", markup=True)
    widest = a.max_bandwidth
    console.print(f"   {widest.bandwidth_mbps:,} Mb/s")
    if widest.path is not None:
        _path_lines(widest.path)

    console.print(
        f"\n[bold]4. All start times[/] for {length} in {when(a.window[0])} → {when(a.window[1])}",
        markup=True,
    )
    runs = a.all_slots.windows()
    if not runs:
        console.print("   none")
        return
    table = Table(box=None, padding=(0, 1, 0, 3))
    table.add_column("first start (UTC)")
    table.add_column("last start (UTC)")
    table.add_column("route from the first start")
    for lo, hi in runs:
        route = _sites_on(a.all_slots.path_at(lo), avail)
        table.add_row(when(lo).removesuffix(" UTC"), when(hi).removesuffix(" UTC"), route)
    console.print(table)


def _path_lines(path: Path) -> None:
    console.print(f"   via {' → '.join(path.nodes)}")
    console.print(f"   over {', '.join(path.link_ids)}")
    console.print(
        f"   {path.hop_count} hops, {path.length_miles:,.1f} miles, RTT {path.rtt_ms:.2f} ms"
    )


def _sites_on(path: Path, avail: Availability) -> str:
    """The sites a path passes, e.g. ORNL→CHICAGO→SEATTLE."""
    sites: list[str] = []
    for node in path.nodes:
        site = avail.topology.nodes[node].site
        if not sites or sites[-1] != site:
            sites.append(site)
    return "→".join(sites)


def _entry_of(field: str, held: list[tuple[Booking, ...]]) -> str:
    """`bookings[7].start` of the flattened list, as the entry of the file it came from."""
    index, sep, rest = field.removeprefix("bookings[").partition("]")
    if not sep or not index.isdigit():
        return field
    flat = int(index)
    for entry_index, entry in enumerate(held):
        if flat < len(entry):
            return f"bookings[{entry_index}]{rest}"
        flat -= len(entry)
    return field


def _next_minute() -> datetime:
    now = datetime.now(UTC)
    return now.replace(second=0, microsecond=0) + timedelta(minutes=1)
