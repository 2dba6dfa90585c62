"""Persistence: the models, the engine, and migrations."""

from longhaul.control.db.engine import Database, make_engine, migrate
from longhaul.control.db.models import (
    LEDGER,
    RESERVATIONS,
    STATE_CHANGES,
    Base,
    Ledger,
    Reservation,
    StateChange,
    User,
)

__all__ = [
    "LEDGER",
    "RESERVATIONS",
    "STATE_CHANGES",
    "Base",
    "Database",
    "Ledger",
    "Reservation",
    "StateChange",
    "User",
    "make_engine",
    "migrate",
]
