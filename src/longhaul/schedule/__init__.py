"""Bandwidth scheduling: interval sets, free bandwidth per link, the four path queries.

Pure functions and values: no clock, no database, no network. The searches and the
algebra run in the Rust core (crates/schedule); this package is their Python face.
"""

from longhaul._schedule import FreeTimeline
from longhaul.schedule.availability import (
    Availability,
    Booking,
    EarliestStart,
    End,
    Request,
    Slots,
    WidestPath,
    bookings_along,
    larger_of,
)
from longhaul.schedule.intervals import NEG_INF, POS_INF, IntervalSet

__all__ = [
    "NEG_INF",
    "POS_INF",
    "Availability",
    "Booking",
    "EarliestStart",
    "End",
    "FreeTimeline",
    "IntervalSet",
    "Request",
    "Slots",
    "WidestPath",
    "bookings_along",
    "larger_of",
]
