"""Reading the values users type: durations like `2h` or `1h30m`, and times with a zone."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from longhaul.errors import InputError

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)\s*(d|h|m|s)")
_UNIT = {
    "d": timedelta(days=1),
    "h": timedelta(hours=1),
    "m": timedelta(minutes=1),
    "s": timedelta(seconds=1),
}


def parse_duration(text: str, field: str = "duration") -> timedelta:
    """`2h`, `90m`, `1h30m`, `1.5h`, `45s`, `3d`: a positive duration."""
    compact = text.strip().lower().replace(" ", "")
    parts = _DURATION_PART.findall(compact)
    if not compact or "".join(n + u for n, u in parts) != compact:
        raise InputError(field, f"cannot read {text!r} as a duration; write e.g. 2h, 90m or 1h30m")
    total = sum((float(n) * _UNIT[u] for n, u in parts), timedelta())
    if total <= timedelta(0):
        raise InputError(field, f"must be positive, got {text!r}")
    return total


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


def format_duration(value: timedelta) -> str:
    """The inverse of `parse_duration`, shortest form: `2h`, `1h30m`, `45s`."""
    seconds = round(value.total_seconds())
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        count, seconds = divmod(seconds, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts) or "0s"
