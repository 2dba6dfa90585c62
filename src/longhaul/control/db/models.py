"""The tables of the reservation service, as typed SQLAlchemy 2 models.

Changing a model needs a migration in `migrations/versions/`; a test checks that the
migrations build exactly these tables.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, cast

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    ForeignKey,
    Index,
    Integer,
    String,
    Table,
    Text,
    UniqueConstraint,
    true,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from longhaul.db.base import Base


class Ledger(Base):
    """One row: a number every transaction that changes what holds bandwidth increments,
    so a process can tell whether the bookings it keeps in memory are still all there are."""

    __tablename__ = "ledger"

    id: Mapped[int] = mapped_column(primary_key=True)
    generation: Mapped[int] = mapped_column(BigInteger)


class User(Base):
    __tablename__ = "users"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    role: Mapped[str] = mapped_column(String(16))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    """SHA-256 of the API token; the token itself is shown once and never stored."""
    cert_subject: Mapped[str | None] = mapped_column(String(512), unique=True)
    cert_issuer: Mapped[str | None] = mapped_column(String(512))
    """The CA the certificate must come from (canonical DN); None: any CA the server trusts."""
    """The subject of the X.509 client certificate that signs this user in, if any."""
    created_at: Mapped[datetime]
    removed_at: Mapped[datetime | None]
    """When an admin removed the user: they sign in no more, their reservations keep
    their owner."""


class Reservation(Base):
    __tablename__ = "reservations"
    __table_args__ = (
        Index("ix_reservations_state_start_end", "state", "start", "end"),
        Index("ix_reservations_owner", "owner_id"),
        Index("ix_reservations_changed_in", "changed_in"),
        # The job runner's questions: holds that time out, slots of circuits not wanted up.
        Index("ix_reservations_held_until", "held_until"),
        Index("ix_reservations_provision_end", "provision", "end"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    owner_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    src_node: Mapped[str] = mapped_column(String(128))
    src_port: Mapped[str | None] = mapped_column(String(64))
    dst_node: Mapped[str] = mapped_column(String(128))
    dst_port: Mapped[str | None] = mapped_column(String(64))
    bandwidth_mbps: Mapped[int] = mapped_column(Integer)
    start: Mapped[datetime]
    end: Mapped[datetime]
    route: Mapped[list[str] | None] = mapped_column(JSON)
    """Links the user asked to walk (a loop-back, say); None when the path was searched."""
    path_start: Mapped[str] = mapped_column(String(128))
    path_links: Mapped[list[str]] = mapped_column(JSON)
    """The path booked: link ids walked from `path_start`."""
    state: Mapped[str] = mapped_column(String(16))
    version: Mapped[int] = mapped_column(Integer)
    description: Mapped[str] = mapped_column(Text, default="")
    changed_in: Mapped[int] = mapped_column(BigInteger, server_default="0")
    """The ledger generation at which this reservation's bookings last changed."""
    cancelled_at: Mapped[datetime | None]
    """When a cancel was asked for: a teardown then ends in `cancelled`, not `finished`."""
    held_until: Mapped[datetime | None]
    """When a hold times out if not committed (NSI's two-phase reserve). The commit clears
    it; after an abort or a timeout it stays: so None means admitted or committed."""
    held_change: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True))
    """A change held until `held_until` (NSI's modify: committed, aborted or timed out),
    as `end`, `bandwidth_mbps`, `path_start`, `path_links`; while held, the reservation
    holds the larger of both versions on every link."""
    provision: Mapped[bool] = mapped_column(Boolean, server_default=true(), default=True)
    """Whether its circuit is to be up during its slot. longhaul's own reservations always
    are; an NSI connection's only between a provision and a release request."""
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]

    owner: Mapped[User] = relationship(lazy="joined")
    history: Mapped[list[StateChange]] = relationship(
        back_populates="reservation", order_by="StateChange.id", cascade="all, delete-orphan"
    )

    __mapper_args__ = {"version_id_col": version}  # noqa: RUF012


class StateChange(Base):
    __tablename__ = "state_changes"
    __table_args__ = (Index("ix_state_changes_reservation", "reservation_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    reservation_id: Mapped[int] = mapped_column(ForeignKey("reservations.id"))
    at: Mapped[datetime]
    from_state: Mapped[str | None] = mapped_column(String(16))
    to_state: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str] = mapped_column(Text)
    actor: Mapped[str] = mapped_column(String(64))
    """The user who caused it, or `scheduler` for the job runner."""

    reservation: Mapped[Reservation] = relationship(back_populates="history")


class IdempotencyKey(Base):
    """A POST's `Idempotency-Key`, the request it came with and the reservation it made:
    the same key and request again within a day answer that reservation, not a new one."""

    __tablename__ = "idempotency_keys"
    __table_args__ = (UniqueConstraint("owner_id", "key"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    owner_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    key: Mapped[str] = mapped_column(String(255))
    fingerprint: Mapped[str] = mapped_column(String(64))
    """SHA-256 of the request's fields: a key sent again with another request is refused."""
    reservation_id: Mapped[int] = mapped_column(ForeignKey("reservations.id"))
    created_at: Mapped[datetime]


class AuditEvent(Base):
    """One thing done to users, tokens or reservations, or a sign-in refused: append-only
    (nothing in longhaul updates or deletes a row)."""

    __tablename__ = "audit_events"
    __table_args__ = (Index("ix_audit_events_at", "at"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    at: Mapped[datetime]
    actor: Mapped[str] = mapped_column(String(64))
    """The user who did it, `cli` for an administrator at the server's shell, `-` when no
    one signed in."""
    action: Mapped[str] = mapped_column(String(64))
    """What was asked: `user.add`, `token.rotate`, `sign-in`, `POST /api/v1/reservations`..."""
    target: Mapped[str] = mapped_column(String(128))
    source: Mapped[str] = mapped_column(String(64))
    """Where from: the client's address, or `cli`."""
    outcome: Mapped[str] = mapped_column(String(16))
    """`ok`, or the HTTP status of a refusal (`401`, `409`, ...)."""
    detail: Mapped[str] = mapped_column(Text, default="")


class NsiConnection(Base):
    """An NSI CS v2 connection this domain provides: a name for one reservation, which
    carries its bandwidth and its life. Its NSI states are read off the reservation
    (`longhaul.control.nsi.states`); only what the reservation cannot tell is kept here."""

    __tablename__ = "nsi_connections"
    __table_args__ = (
        Index("ix_nsi_connections_source", "source_local", "source_vlan"),
        Index("ix_nsi_connections_dest", "dest_local", "dest_vlan"),
    )

    connection_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    reservation_id: Mapped[int] = mapped_column(ForeignKey("reservations.id"), unique=True)
    global_reservation_id: Mapped[str] = mapped_column(String(255), default="")
    requester_nsa: Mapped[str] = mapped_column(String(255), default="")
    source_local: Mapped[str] = mapped_column(String(200))
    source_vlan: Mapped[int | None] = mapped_column(Integer)
    dest_local: Mapped[str] = mapped_column(String(200))
    dest_vlan: Mapped[int | None] = mapped_column(Integer)
    """The STPs: each an end of this domain and the one VLAN used there, if labelled
    (the STP's name is these and the domain's network identifier)."""
    version: Mapped[int] = mapped_column(Integer, default=0)
    """NSI's version of the connection: 0 as first committed, one more per committed modify."""
    terminated_at: Mapped[datetime | None]
    created_at: Mapped[datetime]
    notify_to: Mapped[str | None] = mapped_column(String(2048))
    """Where the requester wants its notifications (the replyTo of its reserve over SOAP)."""

    reservation: Mapped[Reservation] = relationship(lazy="joined")


class NsiNotification(Base):
    """What a provider told, or is to tell, a connection's requester unasked
    (`nsi.notifications`), and how sending it has gone."""

    __tablename__ = "nsi_notifications"
    __table_args__ = (
        UniqueConstraint("connection_id", "notification_id", name="uq_nsi_notifications_number"),
        Index("ix_nsi_notifications_undelivered", "delivered_at", "id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    connection_id: Mapped[str] = mapped_column(
        String(64), ForeignKey("nsi_connections.connection_id")
    )
    notification_id: Mapped[int] = mapped_column(Integer)
    """1 for a connection's first, one more for each after it (NSI's notificationId)."""
    kind: Mapped[str] = mapped_column(String(32))
    at: Mapped[datetime]
    detail: Mapped[dict[str, Any]] = mapped_column(JSON)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_try_at: Mapped[datetime | None]
    """Not to be sent before this (a wait after a failure, or another sender's lease)."""
    delivered_at: Mapped[datetime | None]


class NsiAggregate(Base):
    """A connection this domain aggregates across several: each segment a connection of
    the domain it crosses (`nsi.aggregator`)."""

    __tablename__ = "nsi_aggregates"

    connection_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    owner_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    global_reservation_id: Mapped[str] = mapped_column(String(255), default="")
    requester_nsa: Mapped[str] = mapped_column(String(255), default="")
    source_stp: Mapped[str] = mapped_column(String(512))
    dest_stp: Mapped[str] = mapped_column(String(512))
    capacity_mbps: Mapped[int] = mapped_column(Integer)
    start: Mapped[datetime]
    end: Mapped[datetime]
    segments: Mapped[list[list[str]]] = mapped_column(JSON)
    """[network, connection id] of each segment, in path order."""
    held_change: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True))
    """A modify held in every segment: `capacity_mbps` and `end`, applied on commit."""
    created_at: Mapped[datetime]


class NsiResult(Base):
    """A confirmation this provider gave a request naming a connection, as sent, for
    queryResult (`nsi.results`). No foreign key: a connection across domains is an
    aggregate's, not one of `nsi_connections`."""

    __tablename__ = "nsi_results"
    __table_args__ = (UniqueConstraint("connection_id", "result_id", name="uq_nsi_results_number"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    connection_id: Mapped[str] = mapped_column(String(64))
    result_id: Mapped[int] = mapped_column(Integer)
    """1 for a connection's first, one more for each after it (NSI's resultId)."""
    correlation_id: Mapped[str] = mapped_column(String(255))
    at: Mapped[datetime]
    confirmation: Mapped[str] = mapped_column(Text)


# The tables themselves, for plain (Core) statements on hot paths: naming the entity
# instead would send them through the ORM's slower bulk machinery.
RESERVATIONS = cast(Table, Reservation.__table__)
STATE_CHANGES = cast(Table, StateChange.__table__)
LEDGER = cast(Table, Ledger.__table__)
AUDIT_EVENTS = cast(Table, AuditEvent.__table__)
IDEMPOTENCY_KEYS = cast(Table, IdempotencyKey.__table__)
NSI_CONNECTIONS = cast(Table, NsiConnection.__table__)
NSI_AGGREGATES = cast(Table, NsiAggregate.__table__)
NSI_NOTIFICATIONS = cast(Table, NsiNotification.__table__)
NSI_RESULTS = cast(Table, NsiResult.__table__)
