"""Reservations as the service and the job runner read and store them: prebuilt Core
statements, not the ORM's identity map and unit of work.

A write request reads one reservation, changes a few of its attributes and stores it,
all inside the one write transaction every writer waits for. Through the ORM
(`Session.get`, then a flush) that load and store took more than half of what a modify
or a cancel costs (the service's calls with `longhaul bench api`'s mix, under cProfile).
Here a reservation is read with one SELECT (its owner joined) into a `Reservation` no
session tracks, and stored just before the transaction commits with one UPDATE of the
columns that may change, if any did. As the ORM's version counter did, each stored
change raises `version` by one, and the UPDATE names the version it read.

Every statement is built once: building one costs SQLAlchemy 2.0 several times what
running it does. A reservation read here is in no session, so its `history`
relationship reads empty: ask `history()` for its state changes.
"""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy import Engine, Table, bindparam, select, update
from sqlalchemy.orm import Session

from longhaul.control.db import RESERVATIONS, STATE_CHANGES, Reservation, StateChange, User
from longhaul.control.errors import ConflictError
from longhaul.db.prepared import Prepared, made

_USERS = cast(Table, User.__table__)
_OWNER = "owner__"  # owner_id is a column of its own

CHANGEABLE = (
    "state",
    "end",
    "bandwidth_mbps",
    "path_start",
    "path_links",
    "description",
    "changed_in",
    "cancelled_at",
    "held_until",
    "held_change",
    "provision",
    "updated_at",
)
"""What a reservation's life may change; the rest is fixed at admission."""

_LOAD = Prepared(
    select(RESERVATIONS, *(c.label(_OWNER + c.name) for c in _USERS.c))
    .join(_USERS, _USERS.c.id == RESERVATIONS.c.owner_id)
    .where(RESERVATIONS.c.id == bindparam("reservation_id"))
)
_STORE = Prepared(
    update(RESERVATIONS)
    .where(RESERVATIONS.c.id == bindparam("b_id"), RESERVATIONS.c.version == bindparam("b_version"))
    .values({name: bindparam(name) for name in (*CHANGEABLE, "version")})
)
_HISTORY = (
    select(STATE_CHANGES)
    .where(STATE_CHANGES.c.reservation_id == bindparam("reservation_id"))
    .order_by(STATE_CHANGES.c.id)
)
_LOADED = "reservations_loaded"


def load(session: Session, reservation_id: int, asker: User | None = None) -> Reservation | None:
    """The reservation, with its owner (`asker`, if it is theirs); in a write transaction,
    stored at its commit if changed (loading it again in the same transaction gives the
    same object)."""
    loaded: dict[int, Reservation] | None = session.info.get(_LOADED)
    if loaded is not None and reservation_id in loaded:
        return loaded[reservation_id]
    values = _LOAD.first(session, reservation_id=reservation_id)
    if values is None:
        return None
    reservation = _made(values, asker)
    hooks: list[Any] | None = session.info.get("before_commit")
    if hooks is not None:
        if loaded is None:
            loaded = session.info[_LOADED] = {}
        loaded[reservation_id] = reservation
        before = _changeable(reservation)
        hooks.append(lambda: _store(session, reservation, before))
    return reservation


def read(engine: Engine, reservation_id: int, asker: User | None = None) -> Reservation | None:
    """The reservation as committed, read outside any transaction (one statement)."""
    values = _LOAD.first_on(engine, reservation_id=reservation_id)
    return None if values is None else _made(values, asker)


def _made(values: dict[str, Any], asker: User | None) -> Reservation:
    owner = {k[len(_OWNER) :]: values.pop(k) for k in list(values) if k.startswith(_OWNER)}
    # Most requests are the owner's own: their User is at hand, no need to make another.
    values["owner"] = asker if asker is not None and asker.id == owner["id"] else made(User, owner)
    return made(Reservation, values)


def history(session: Session, reservation_id: int) -> list[StateChange]:
    """The reservation's state changes, oldest first."""
    rows = session.execute(_HISTORY, {"reservation_id": reservation_id})
    return [made(StateChange, row._asdict()) for row in rows]


def _changeable(reservation: Reservation) -> tuple[Any, ...]:
    return tuple(getattr(reservation, name) for name in CHANGEABLE)


def _store(session: Session, reservation: Reservation, before: tuple[Any, ...]) -> None:
    if _changeable(reservation) == before:
        return
    values = {name: getattr(reservation, name) for name in CHANGEABLE}
    values.update(b_id=reservation.id, b_version=reservation.version)
    values["version"] = reservation.version + 1
    if _STORE.count(session, **values) != 1:
        # Writers take turns, so nothing else can have stored it meanwhile.
        raise ConflictError(f"reservation {reservation.id} changed under this request")
    reservation.version += 1
