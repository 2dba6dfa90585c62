"""The four USN queries across domains: each domain answers for its segment, and the
answers are combined here (pure: the domains are passed in as `SegmentAnswers`).

- fixed slot: the bandwidth is free for the slot when every segment says so;
- highest bandwidth: the least of the segments' highest;
- earliest start: each segment's earliest at or after a candidate, the candidate moved
  to the latest of them, until all agree (each answer is the earliest at or after what
  was asked, so the candidate only grows, and the first instant all agree on is the
  earliest they share);
- all slots: the starts every segment allows (the intersection of their runs).

VLANs are not part of the queries: a reserve chooses them (and may still be refused for
want of a free one).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Protocol

from longhaul.control.errors import ConflictError

MAX_ROUNDS = 64
"""Earliest-start rounds before giving up: each round moves the candidate to a later
change in some domain's calendar, so this many means calendars busy beyond reason."""

Run = tuple[datetime, datetime]
"""Starts from the first to the last, both included."""


class SegmentAnswers(Protocol):
    """One domain's answers for its segment of the way."""

    network: str
    src: str
    dst: str
    """The segment's ends in that domain (a node, a site or node:port)."""

    def fixed_slot(self, mbps: int, start: datetime, end: datetime) -> bool: ...
    def earliest_start(
        self, mbps: int, duration: timedelta, not_before: datetime
    ) -> datetime | None: ...
    def max_bandwidth(self, start: datetime, end: datetime) -> int: ...
    def all_slots(
        self, mbps: int, duration: timedelta, window_start: datetime, window_end: datetime
    ) -> list[Run]: ...


def fixed_slot(
    domains: Sequence[SegmentAnswers], mbps: int, start: datetime, end: datetime
) -> bool:
    return all(domain.fixed_slot(mbps, start, end) for domain in domains)


def max_bandwidth(domains: Sequence[SegmentAnswers], start: datetime, end: datetime) -> int:
    return min(domain.max_bandwidth(start, end) for domain in domains)


def earliest_start(
    domains: Sequence[SegmentAnswers], mbps: int, duration: timedelta, not_before: datetime
) -> datetime | None:
    """The earliest start every segment allows, or None if one never can."""
    candidate = not_before
    for _ in range(MAX_ROUNDS):
        answers = [domain.earliest_start(mbps, duration, candidate) for domain in domains]
        if any(answer is None for answer in answers):
            return None
        latest = max(answer for answer in answers if answer is not None)
        if all(answer == latest for answer in answers):
            return latest
        candidate = latest
    raise ConflictError(
        f"the domains found no start in common within {MAX_ROUNDS} rounds; ask from later"
    )


def all_slots(
    domains: Sequence[SegmentAnswers],
    mbps: int,
    duration: timedelta,
    window_start: datetime,
    window_end: datetime,
) -> list[Run]:
    runs: list[Run] | None = None
    for domain in domains:
        theirs = domain.all_slots(mbps, duration, window_start, window_end)
        runs = theirs if runs is None else intersect(runs, theirs)
    return runs or []


def intersect(a: Sequence[Run], b: Sequence[Run]) -> list[Run]:
    """The starts in both (each a sorted list of disjoint runs)."""
    both: list[Run] = []
    i = j = 0
    while i < len(a) and j < len(b):
        first, last = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if first <= last:
            both.append((first, last))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return both
