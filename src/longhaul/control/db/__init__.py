"""The reservation service's tables (the engine and migrations are in `longhaul.db`)."""

from longhaul.control.db.models import (
    AUDIT_EVENTS,
    LEDGER,
    RESERVATIONS,
    STATE_CHANGES,
    AuditEvent,
    Ledger,
    Reservation,
    StateChange,
    User,
)

__all__ = [
    "AUDIT_EVENTS",
    "LEDGER",
    "RESERVATIONS",
    "STATE_CHANGES",
    "AuditEvent",
    "Ledger",
    "Reservation",
    "StateChange",
    "User",
]
