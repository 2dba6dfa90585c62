"""The reservation service's tables (the engine and migrations are in `longhaul.db`)."""

from longhaul.control.db.models import (
    LEDGER,
    RESERVATIONS,
    STATE_CHANGES,
    Ledger,
    Reservation,
    StateChange,
    User,
)

__all__ = [
    "LEDGER",
    "RESERVATIONS",
    "STATE_CHANGES",
    "Ledger",
    "Reservation",
    "StateChange",
    "User",
]
