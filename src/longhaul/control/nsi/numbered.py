"""Rows numbered from 1 per connection (NSI's notificationId and resultId): the next
number, and the rows of a connection between two numbers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Column, Row, Table, func, select
from sqlalchemy.orm import Session

from longhaul.db import Database


def next_number(session: Session, number: Column[int], connection_id: str) -> int:
    """The number the connection's next row takes. Read in a write transaction, which no
    other writer overlaps, so two rows never take the same one."""
    table = number.table
    last = session.scalar(
        select(func.coalesce(func.max(number), 0)).where(table.c.connection_id == connection_id)
    )
    return int(last or 0) + 1


def between(
    db: Database, number: Column[int], connection_id: str, first: int | None, last: int | None
) -> Sequence[Row[Any]]:
    """The connection's rows numbered `first` to `last` (inclusive; None: from the oldest,
    to the newest), oldest first."""
    table: Table = number.table
    query = select(table).where(table.c.connection_id == connection_id)
    if first is not None:
        query = query.where(number >= first)
    if last is not None:
        query = query.where(number <= last)
    with db.read() as session:
        return session.execute(query.order_by(number)).all()
