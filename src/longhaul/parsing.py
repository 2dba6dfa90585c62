"""Reading the values users type: durations like `2h` or `1h30m`, and times with a zone."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from pydantic import TypeAdapter, ValidationError

from longhaul.errors import InputError
from longhaul.topology import Topology

_DURATION: TypeAdapter[timedelta] = TypeAdapter(timedelta)
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)\s*(d|h|m|s)")
_UNIT = {
    "d": timedelta(days=1),
    "h": timedelta(hours=1),
    "m": timedelta(minutes=1),
    "s": timedelta(seconds=1),
}


def parse_duration(text: str, field: str = "duration") -> timedelta:
    """A positive duration: `2h`, `90m`, `1h30m`, `1.5h`, `45s`, `3d`; plain seconds
    (`1800`); or ISO 8601 (`PT2H`, `P1DT12H`)."""
    compact = text.strip().lower().replace(" ", "")
    total = _seconds(compact) or _iso_8601(compact) or _shorthand(compact)
    if total is None:
        raise InputError(
            field, f"cannot read {text!r} as a duration; write e.g. 2h, 90m, 1h30m or PT2H"
        )
    if total <= timedelta(0):
        raise InputError(field, f"must be positive, got {text!r}")
    return total


def _seconds(text: str) -> timedelta | None:
    try:
        return timedelta(seconds=float(text))
    except (ValueError, OverflowError):
        return None


def _iso_8601(text: str) -> timedelta | None:
    if not text.startswith("p"):
        return None
    try:
        return _DURATION.validate_python(text.upper())
    except ValidationError:
        return None


def _shorthand(text: str) -> timedelta | None:
    parts = _DURATION_PART.findall(text)
    if not text or "".join(n + u for n, u in parts) != text:
        return None
    try:
        return sum((float(n) * _UNIT[u] for n, u in parts), timedelta())
    except OverflowError:
        return None


def parse_instant(text: str, field: str) -> datetime:
    """An RFC 3339 / ISO 8601 date and time that names its zone (`Z` or `+01:00`)."""
    try:
        value = datetime.fromisoformat(text.strip())
    except ValueError:
        raise InputError(
            field, f"cannot read {text!r} as a date and time; write e.g. 2030-01-07T09:00Z"
        ) from None
    if value.tzinfo is None:
        raise InputError(field, f"{text!r} has no time zone; add one, e.g. {text.strip()}Z for UTC")
    return value


def format_instant(value: datetime) -> str:
    """RFC 3339 in UTC with a `Z`: `2030-01-07T09:00:00Z`."""
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def format_duration(value: timedelta) -> str:
    """The inverse of `parse_duration`, shortest form: `2h`, `1h30m`, `45s`."""
    seconds = round(value.total_seconds())
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        count, seconds = divmod(seconds, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts) or "0s"


def parse_route(
    topology: Topology,
    route: str | None,
    loop: str | None,
    route_field: str = "route",
    loop_field: str = "loop",
) -> list[str] | None:
    """Links to walk: comma-separated ids, or a loop-back's; None to search a path."""
    if route is not None and loop is not None:
        raise InputError(loop_field, f"give {route_field} or {loop_field}, not both")
    if route is not None:
        return [link.strip() for link in route.split(",") if link.strip()]
    return None if loop is None else list(topology.loop_links(loop, loop_field))
