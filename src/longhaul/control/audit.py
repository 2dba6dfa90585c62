"""Brute-force checks of what is stored, independent of the scheduling core.

Used by the concurrency test and `longhaul bench api` to show that no link was ever
overbooked: at every instant a booking starts (where load can only rise), add up every
booking active on the link, each in whole granules, each crossing counted.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select

from longhaul.control.db import Reservation
from longhaul.control.lifecycle import HOLDS_BANDWIDTH
from longhaul.db import Database
from longhaul.topology import Topology


@dataclass(frozen=True)
class Overbooking:
    link: str
    at: datetime
    booked_mbps: int
    capacity_mbps: int


def overbookings(db: Database, topology: Topology) -> list[Overbooking]:
    """Every (link, instant) at which the stored reservations take more than the link has."""
    loads: defaultdict[str, list[tuple[datetime, datetime, int]]] = defaultdict(list)
    query = select(
        Reservation.path_links, Reservation.start, Reservation.end, Reservation.bandwidth_mbps
    )
    query = query.where(Reservation.state.in_([s.value for s in HOLDS_BANDWIDTH]))
    with db.read() as session:
        for links, start, end, mbps in session.execute(query):
            for link_id in links:
                link = topology.links[link_id]
                loads[link_id].append((start, end, link.booked_mbps(mbps)))
    found = []
    for link_id, bookings in loads.items():
        capacity = topology.links[link_id].capacity_mbps
        for instant in sorted({start for start, _, _ in bookings}):
            booked = sum(mbps for start, end, mbps in bookings if start <= instant < end)
            if booked > capacity:
                found.append(Overbooking(link_id, instant, booked, capacity))
    return found
