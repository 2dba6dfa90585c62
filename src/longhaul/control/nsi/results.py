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

from sqlalchemy import insert

from longhaul.control.db import NSI_RESULTS
from longhaul.control.nsi.numbered import between, next_number
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
        with self.db.write() as session:
            result_id = next_number(session, NSI_RESULTS.c.result_id, connection_id)
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
        rows = between(self.db, NSI_RESULTS.c.result_id, connection_id, first, last)
        return [
            Result(row.result_id, row.correlation_id, row.at, row.confirmation.encode())
            for row in rows
        ]
