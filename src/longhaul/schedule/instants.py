"""Checking a request's values and turning its times into integer microseconds.

The schedule works on integer microseconds since the Unix epoch, which represent every
`datetime` exactly; at its edges times are timezone-aware datetimes. Each check raises
`InputError` naming the field and saying how to fix it.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from longhaul.errors import InputError

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MICROSECOND = timedelta(microseconds=1)
LATEST = datetime(2201, 1, 1, tzinfo=UTC)
"""A request's times lie in the years 1970-2200 (EPOCH to LATEST): far enough for any
plan, and near enough that a time plus a duration or a search past the last booking can
never leave what `datetime` holds (a booking until 9999-12-31 once made another user's
`asap` request fail)."""
YEARS = f"{EPOCH.year}-{LATEST.year - 1}"


def to_us(value: Any, field: str, bounded: bool = True) -> int:
    """An aware datetime as microseconds since the epoch; with `bounded`, one in the
    years 1970-2200 (bookings stored before the bound was kept are read unbounded)."""
    if not isinstance(value, datetime):
        raise InputError(field, f"expected a date and time, got {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise InputError(
            field,
            f"{value.isoformat()} has no time zone; give one, e.g. "
            f"{value.replace(tzinfo=UTC).isoformat()}",
        )
    if bounded and not EPOCH <= value < LATEST:
        raise InputError(field, f"{value.isoformat()} is outside the years {YEARS}")
    return (value - EPOCH) // MICROSECOND


def from_us(us: int) -> datetime:
    return EPOCH + us * MICROSECOND


def duration_us(value: Any, field: str = "duration") -> int:
    if not isinstance(value, timedelta):
        raise InputError(field, f"expected a duration, got {type(value).__name__}")
    us = value // MICROSECOND
    if us <= 0:
        raise InputError(field, f"must be positive, got {value}")
    if value > LATEST - EPOCH:
        raise InputError(field, f"{value} is longer than the years {YEARS}")
    return us


def bandwidth(value: Any, field: str = "bandwidth_mbps") -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(field, f"expected a whole number of Mb/s, got {value!r}")
    if value <= 0:
        raise InputError(field, f"must be greater than 0 Mb/s, got {value}")
    return value


def span_us(
    start: Any, end: Any, start_field: str, end_field: str, bounded: bool = True
) -> tuple[int, int]:
    """A non-empty [start, end) in microseconds."""
    lo, hi = to_us(start, start_field, bounded), to_us(end, end_field, bounded)
    if hi <= lo:
        raise InputError(
            end_field,
            f"must be after {start_field} ({end.isoformat()} is not after {start.isoformat()})",
        )
    return lo, hi
