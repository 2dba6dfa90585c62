"""The reservation service's tables (the engine and migrations are in `longhaul.db`)."""

from longhaul.control.db.models import (
    AUDIT_EVENTS,
    IDEMPOTENCY_KEYS,
    LEDGER,
    NSI_AGGREGATES,
    NSI_CONNECTIONS,
    RESERVATIONS,
    STATE_CHANGES,
    AuditEvent,
    IdempotencyKey,
    Ledger,
    NsiAggregate,
    NsiConnection,
    Reservation,
    StateChange,
    User,
)

__all__ = [
    "AUDIT_EVENTS",
    "IDEMPOTENCY_KEYS",
    "LEDGER",
    "NSI_AGGREGATES",
    "NSI_CONNECTIONS",
    "RESERVATIONS",
    "STATE_CHANGES",
    "AuditEvent",
    "IdempotencyKey",
    "Ledger",
    "NsiAggregate",
    "NsiConnection",
    "Reservation",
    "StateChange",
    "User",
]
