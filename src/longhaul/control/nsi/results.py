"""The results of a connection's requests, for NSI's queryResult (ogf_nsi_connection_
types_v2_0.xsd, QueryResultType): each confirmation the provider gave a request naming
the connection, numbered from 1 per connection (resultId), with the request's
correlationId and when it was confirmed.

A refused request is answered at once with a Fault and leaves nothing to confirm (the
provider creates no connection in ReserveFailed), so the results are confirmations only:
reserveConfirmed, reserveCommitConfirmed, reserveAbortConfirmed, provisionConfirmed,
releaseConfirmed, terminateConfirmed. They are kept as sent (the confirmation's XML), so
that a requester that missed one at its replyTo, or gave none, reads what it would have
been sent.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, insert, select

from longhaul.control.db import NSI_RESULTS
from longhaul.db import Database


@dataclass(frozen=True)
class Result:
    result_id: int
    correlation_id: str
    at: datetime
    confirmation: bytes
    """The confirmation element, as XML."""


class Results:
    def __init__(self, db: Database) -> None:
        self.db = db

    def add(
        self, connection_id: str, correlation_id: str, at: datetime, confirmation: bytes
    ) -> int:
        """Keep a confirmation given for `connection_id`; its resultId."""
        r = NSI_RESULTS.c
        with self.db.write() as session:
            last = session.scalar(
                select(func.coalesce(func.max(r.result_id), 0)).where(
                    r.connection_id == connection_id
                )
            )
            result_id = int(last or 0) + 1
            session.execute(
                insert(NSI_RESULTS).values(
                    connection_id=connection_id,
                    result_id=result_id,
                    correlation_id=correlation_id,
                    at=at,
                    confirmation=confirmation.decode(),
                )
            )
        return result_id

    def of(self, connection_id: str, first: int | None, last: int | None) -> list[Result]:
        """A connection's results, `first` to `last` (inclusive; None: from the oldest, to
        the newest), oldest first. Whether the asker may see the connection is the
        caller's to check."""
        r = NSI_RESULTS.c
        query = select(NSI_RESULTS).where(r.connection_id == connection_id)
        if first is not None:
            query = query.where(r.result_id >= first)
        if last is not None:
            query = query.where(r.result_id <= last)
        with self.db.read() as session:
            rows = session.execute(query.order_by(r.result_id)).all()
        return [
            Result(row.result_id, row.correlation_id, row.at, row.confirmation.encode())
            for row in rows
        ]
