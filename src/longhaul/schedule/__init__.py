"""Bandwidth scheduling: interval sets, free bandwidth per link, the four path queries.

Pure functions and values: no clock, no database, no network.
"""

from longhaul.schedule.availability import (
    Availability,
    Booking,
    EarliestStart,
    Slots,
    WidestPath,
    bookings_along,
)
from longhaul.schedule.intervals import NEG_INF, POS_INF, IntervalSet
from longhaul.schedule.timeline import FreeTimeline

__all__ = [
    "NEG_INF",
    "POS_INF",
    "Availability",
    "Booking",
    "EarliestStart",
    "FreeTimeline",
    "IntervalSet",
    "Slots",
    "WidestPath",
    "bookings_along",
]
