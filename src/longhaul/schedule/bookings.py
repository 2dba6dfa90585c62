"""Bookings written as TOML, so a user can ask the queries against what is already held.

Each `[[bookings]]` table is one reservation over one or more links:

    [[bookings]]
    links = ["ornl-chicago-1", "chicago-seattle-1"]
    bandwidth_mbps = 4800
    start = 2030-01-07T08:00:00Z
    end = 2030-01-07T14:00:00Z
    description = "climate run"      # optional

Times are TOML datetimes with an offset; a local (zone-less) time is refused.
"""

from __future__ import annotations

import tomllib
from datetime import datetime
from typing import Any

from longhaul.errors import InputError
from longhaul.schedule.availability import Booking
from longhaul.schedule.instants import bandwidth

_KEYS = {"links", "bandwidth_mbps", "start", "end", "description"}


def loads_bookings(text: str, source: str = "bookings") -> list[tuple[Booking, ...]]:
    """Parse a bookings file: per entry, its bookings (one per link).

    `InputError` names the entry and field at fault.
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(source, f"not valid TOML: {exc}") from exc
    entries = data.get("bookings", [])
    if not isinstance(entries, list):
        raise InputError(f"{source}: bookings", "expected an array of tables ([[bookings]])")
    return [_entry(entry, f"{source}: bookings[{k}]") for k, entry in enumerate(entries)]


def _entry(entry: Any, where: str) -> tuple[Booking, ...]:
    if not isinstance(entry, dict):
        raise InputError(where, "expected a table")
    unknown = set(entry) - _KEYS
    if unknown:
        raise InputError(
            f"{where}.{sorted(unknown)[0]}", f"unknown field; use {', '.join(sorted(_KEYS))}"
        )
    links = entry.get("links")
    if not isinstance(links, list) or not links or not all(isinstance(x, str) for x in links):
        raise InputError(f"{where}.links", "expected a non-empty list of link ids")
    for key in ("start", "end"):
        if not isinstance(entry.get(key), datetime):
            raise InputError(
                f"{where}.{key}", "expected a TOML date-time, e.g. 2030-01-07T08:00:00Z"
            )
    mbps = bandwidth(entry.get("bandwidth_mbps"), f"{where}.bandwidth_mbps")
    return tuple(Booking(link, entry["start"], entry["end"], mbps) for link in links)
