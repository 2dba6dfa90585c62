"""The results store: campaigns and their tidy rows, in the project database.

Each run is stored as it finishes (one transaction), under a key that names its
parameters, so a campaign that stopped part-way continues where it stopped. Rows come
back as `Row`s or as a pandas DataFrame with `rows.COLUMNS`, and export to CSV or
Parquet.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
from sqlalchemy import (
    JSON,
    Boolean,
    Float,
    ForeignKey,
    Integer,
    String,
    Text,
    UniqueConstraint,
    delete,
    func,
    select,
)
from sqlalchemy.orm import Mapped, mapped_column

from longhaul.db import Base, Database
from longhaul.errors import InputError
from longhaul.measure.rows import COLUMNS, Row, Source


class CampaignRecord(Base):
    __tablename__ = "campaigns"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(128), unique=True)
    description: Mapped[str] = mapped_column(Text, default="")
    spec: Mapped[str] = mapped_column(Text, default="")
    """The campaign file as it was run (TOML), or how the rows were imported."""
    created_at: Mapped[datetime]
    finished_at: Mapped[datetime | None]


class Measurement(Base):
    __tablename__ = "measurements"
    __table_args__ = (UniqueConstraint("campaign_id", "run_key"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    campaign_id: Mapped[int] = mapped_column(ForeignKey("campaigns.id", ondelete="CASCADE"))
    run_key: Mapped[str] = mapped_column(String(255))
    test: Mapped[str] = mapped_column(String(32))
    tool: Mapped[str] = mapped_column(String(32))
    source: Mapped[str] = mapped_column(String(16))
    connection: Mapped[str] = mapped_column(String(128))
    length_miles: Mapped[float | None] = mapped_column(Float)
    repetition: Mapped[int] = mapped_column(Integer)
    started_at: Mapped[datetime]
    cc: Mapped[str | None] = mapped_column(String(32))
    streams: Mapped[int | None] = mapped_column(Integer)
    message_bytes: Mapped[int | None] = mapped_column(Integer)
    variant: Mapped[str | None] = mapped_column(String(32))
    cross_traffic_gbps: Mapped[float] = mapped_column(Float, default=0.0)
    duration_s: Mapped[float | None] = mapped_column(Float)
    throughput_gbps: Mapped[float | None] = mapped_column(Float)
    retransmits: Mapped[int | None] = mapped_column(Integer)
    rtt_ms: Mapped[float | None] = mapped_column(Float)
    rtt_std_ms: Mapped[float | None] = mapped_column(Float)
    raw_ref: Mapped[str | None] = mapped_column(Text)
    extra: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    degraded: Mapped[bool] = mapped_column(Boolean, default=False)
    health: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    meta: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    error: Mapped[str | None] = mapped_column(Text)


class ResultsStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    # -- campaigns ---------------------------------------------------------------------

    def open_campaign(self, name: str, description: str = "", spec: str = "") -> int:
        """The campaign's id, made if it is new (its spec is kept as first run)."""
        with self.db.write() as session:
            found = session.scalar(select(CampaignRecord).where(CampaignRecord.name == name))
            if found is not None:
                return found.id
            record = CampaignRecord(
                name=name, description=description, spec=spec, created_at=datetime.now(UTC)
            )
            session.add(record)
            session.flush()
            return record.id

    def finish_campaign(self, name: str) -> None:
        with self.db.write() as session:
            found = session.scalar(select(CampaignRecord).where(CampaignRecord.name == name))
            if found is not None:
                found.finished_at = datetime.now(UTC)

    def campaigns(self) -> list[dict[str, Any]]:
        """Every campaign with its number of rows."""
        with self.db.read() as session:
            records = list(session.scalars(select(CampaignRecord).order_by(CampaignRecord.id)))
            counts: dict[int, int] = dict(
                session.execute(
                    select(Measurement.campaign_id, _count()).group_by(Measurement.campaign_id)
                ).all()
            )
        return [
            {
                "name": r.name,
                "description": r.description,
                "rows": counts.get(r.id, 0),
                "created_at": r.created_at,
                "finished_at": r.finished_at,
            }
            for r in records
        ]

    def spec(self, name: str) -> str:
        with self.db.read() as session:
            found = session.scalar(select(CampaignRecord).where(CampaignRecord.name == name))
        if found is None:
            raise InputError("campaign", self._unknown(name))
        return found.spec

    def forget(self, name: str) -> int:
        """Remove a campaign and its rows; how many rows went."""
        with self.db.write() as session:
            found = session.scalar(select(CampaignRecord).where(CampaignRecord.name == name))
            if found is None:
                return 0
            gone = session.scalar(
                select(func.count(Measurement.id)).where(Measurement.campaign_id == found.id)
            )
            session.execute(delete(Measurement).where(Measurement.campaign_id == found.id))
            session.execute(delete(CampaignRecord).where(CampaignRecord.id == found.id))
            return int(gone or 0)

    # -- rows ----------------------------------------------------------------------------

    def done(self, campaign_id: int) -> set[str]:
        """The keys of the runs stored for a campaign that did not fail (what `--resume`
        skips; it runs failed ones again)."""
        with self.db.read() as session:
            keys = session.scalars(
                select(Measurement.run_key).where(
                    Measurement.campaign_id == campaign_id, Measurement.error.is_(None)
                )
            )
            return set(keys)

    def add(self, campaign_id: int, run_key: str, row: Row) -> None:
        """Store one finished run (replacing one stored under the same key)."""
        values = row.as_dict()
        values.pop("campaign")
        with self.db.write() as session:
            old = session.scalar(
                select(Measurement).where(
                    Measurement.campaign_id == campaign_id, Measurement.run_key == run_key
                )
            )
            if old is not None:
                session.delete(old)
                session.flush()
            session.add(Measurement(campaign_id=campaign_id, run_key=run_key, **values))

    def add_many(self, campaign_id: int, rows: Iterable[tuple[str, Row]]) -> int:
        count = 0
        for key, row in rows:
            self.add(campaign_id, key, row)
            count += 1
        return count

    def rows(self, campaign: str | None = None) -> list[Row]:
        query = select(Measurement, CampaignRecord.name).join(
            CampaignRecord, Measurement.campaign_id == CampaignRecord.id
        )
        if campaign is not None:
            if campaign not in {c["name"] for c in self.campaigns()}:
                raise InputError("campaign", self._unknown(campaign))
            query = query.where(CampaignRecord.name == campaign)
        with self.db.read() as session:
            found = session.execute(query.order_by(Measurement.id)).all()
        return [_row(m, name) for m, name in found]

    def frame(self, campaign: str | None = None) -> pd.DataFrame:
        """The rows as a DataFrame with `COLUMNS` (empty if there are none)."""
        data = [r.as_dict() for r in self.rows(campaign)]
        return pd.DataFrame(data, columns=list(COLUMNS))

    def export(self, path: Path, campaign: str | None = None) -> int:
        """Write the rows to `path`: CSV, or Parquet for a `.parquet` file (the columns of
        docs/results.md, typed; `extra` and `health` as JSON text). How many. The file
        appears whole or not at all."""
        if path.suffix not in (".csv", ".parquet"):
            raise InputError("path", f"{path.name}: export to a .csv or a .parquet file")
        if not path.parent.is_dir():
            raise InputError(
                "path", f"the folder {path.parent} does not exist: create it, or name another"
            )
        frame = typed_frame(self.frame(campaign))
        partial = path.with_name(f".{path.name}.partial")
        try:
            if path.suffix == ".parquet":
                frame.to_parquet(partial, index=False)
            else:
                frame.to_csv(partial, index=False)
            partial.replace(path)
        finally:
            partial.unlink(missing_ok=True)
        return len(frame)

    def import_rows(
        self, name: str, description: str, spec: str, rows: list[tuple[str, Row]]
    ) -> int:
        """Make a campaign and store its rows in one transaction: all or nothing. A
        campaign of that name must not hold rows yet (it would mix two sources)."""
        with self.db.write() as session:
            found = session.scalar(select(CampaignRecord).where(CampaignRecord.name == name))
            if found is not None and session.scalar(
                select(func.count(Measurement.id)).where(Measurement.campaign_id == found.id)
            ):
                raise InputError(
                    "campaign",
                    f"{name!r} holds results already: import into a new campaign, or "
                    "`longhaul results forget` it first",
                )
            if found is None:
                found = CampaignRecord(
                    name=name, description=description, spec=spec, created_at=datetime.now(UTC)
                )
                session.add(found)
                session.flush()
            for key, row in rows:
                values = row.as_dict()
                values.pop("campaign")
                session.add(Measurement(campaign_id=found.id, run_key=key, **values))
            found.finished_at = datetime.now(UTC)
        return len(rows)

    def _unknown(self, name: str) -> str:
        names = ", ".join(c["name"] for c in self.campaigns()) or "none yet"
        return f"no campaign named {name!r} (campaigns: {names})"


_TYPES = {
    "campaign": "string", "test": "string", "tool": "string", "source": "string",
    "connection": "string", "length_miles": "Float64", "repetition": "Int64",
    "cc": "string", "streams": "Int64", "message_bytes": "Int64", "variant": "string",
    "cross_traffic_gbps": "Float64", "duration_s": "Float64", "throughput_gbps": "Float64",
    "retransmits": "Int64", "rtt_ms": "Float64", "rtt_std_ms": "Float64",
    "raw_ref": "string", "extra": "string", "degraded": "boolean", "health": "string",
    "meta": "string", "error": "string",
}  # fmt: skip
"""Each exported column's type (docs/results.md gives their units)."""


def typed_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows with one type per column, as exported: `extra`, `health` and `meta`
    become JSON text (a struct column cannot hold what differs from row to row), times
    UTC."""
    typed = frame.copy()
    for column in ("extra", "health", "meta"):
        typed[column] = typed[column].map(_json_text)
    typed["started_at"] = pd.to_datetime(typed["started_at"], utc=True)
    return typed.astype(_TYPES)


def _count() -> Any:
    return func.count(Measurement.id)


def _json_text(value: Any) -> str | None:
    return json.dumps(value) if value else None


def _row(m: Measurement, campaign: str) -> Row:
    return Row(
        campaign=campaign,
        test=m.test,
        tool=m.tool,
        source=Source(m.source),
        connection=m.connection,
        length_miles=m.length_miles,
        repetition=m.repetition,
        started_at=m.started_at,
        cc=m.cc,
        streams=m.streams,
        message_bytes=m.message_bytes,
        variant=m.variant,
        cross_traffic_gbps=m.cross_traffic_gbps,
        duration_s=m.duration_s,
        throughput_gbps=m.throughput_gbps,
        retransmits=m.retransmits,
        rtt_ms=m.rtt_ms,
        rtt_std_ms=m.rtt_std_ms,
        raw_ref=m.raw_ref,
        extra=dict(m.extra or {}),
        degraded=bool(m.degraded),
        health=m.health,
        meta=m.meta,
        error=m.error,
    )
