"""This domain's NSI CS v2 provider: connections over longhaul reservations.

Each NSI request is one of the service's own operations on the connection's
reservation, so admission, policy, the ledger and the job runner are the same for both:

| NSI (GFD.212 §4.1) | longhaul |
|---|---|
| reserve | admit `held` until the hold timeout, circuit not wanted up |
| reserve on a committed connection (modify) | `hold_change` |
| reserveCommit / reserveAbort | `commit` / `abort` (of the first version or of a change) |
| reserveTimeout (provider-side) | the job runner's `hold_expired` |
| provision / release | circuit wanted up during the slot, or not (`want_up`) |
| terminate | `cancel`, tearing down what is up |

A reserve that does not fit is refused with what would fit and leaves nothing behind
(no connection is created in ReserveFailed to be aborted later: the synchronous answer
is the failure). An STP labelled with a VLAN range gets the lowest VLAN of it that no
other connection uses there during the slot (GFD.212 §3.3: the provider chooses within
the range asked for, and the confirmed STP names the one chosen).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import and_, insert, select, update
from sqlalchemy.orm import Session

from longhaul.control.db import NSI_CONNECTIONS, RESERVATIONS, NsiConnection, Reservation, User
from longhaul.control.errors import ConflictError, NotFoundError
from longhaul.control.lifecycle import ENDED, HOLDS_BANDWIDTH, State
from longhaul.control.nsi.notifications import Notification, Notifications
from longhaul.control.nsi.reply_to import NOWHERE, ReplyTargets
from longhaul.control.nsi.results import Result, Results
from longhaul.control.nsi.states import ConnectionStates, LifecycleState, observe
from longhaul.control.nsi.stp import Stp, parse_stp
from longhaul.control.requests import ReservationChange, ReservationRequest
from longhaul.control.service import Service
from longhaul.topology import Topology

DEFAULT_HOLD = timedelta(seconds=120)
"""How long a reserve holds its bandwidth uncommitted: two minutes, the value the NSI
working group recommends (OpenNSA's `TPC_TIMEOUT`, `backends/common/genericbackend.py`)."""


def default_network(topology: Topology) -> str:
    """An NSI network identifier for a domain that was given none: its topology's name
    under `longhaul.local` (a real domain names itself under its own DNS name)."""
    return f"urn:ogf:network:longhaul.local:2026:{topology.name}"


@dataclass(frozen=True)
class ReserveRequest:
    source_stp: str
    dest_stp: str
    capacity_mbps: int
    end: datetime
    start: datetime | None = None
    """None: now."""
    global_reservation_id: str = ""
    description: str = ""
    requester_nsa: str = ""
    notify_to: str | None = None
    """Where to send the connection's notifications (a SOAP requester's replyTo)."""


@dataclass(frozen=True)
class Connection:
    connection_id: str
    global_reservation_id: str
    requester_nsa: str
    source_stp: str
    dest_stp: str
    reservation: Reservation
    states: ConnectionStates
    version: int
    """0 as first committed, one more per committed modify (GFD.212's version)."""


class Provider:
    def __init__(
        self,
        service: Service,
        network: str,
        hold: timedelta = DEFAULT_HOLD,
        reply_to: ReplyTargets = NOWHERE,
        nsa_id: str | None = None,
    ) -> None:
        self.service = service
        self.network = network
        """This domain's NSI network identifier, `urn:ogf:network:...`."""
        self.hold = hold
        self.reply_to = reply_to
        """Where SOAP requesters may have confirmations sent (none: every replyTo refused)."""
        self.nsa_id = nsa_id or f"{network}:nsa"
        """This provider's NSA identifier (`serve --nsi-nsa-id`): how it names itself in
        its Faults and in what it sends unasked."""
        self.notifications = Notifications(service.db, self.nsa_id, hold)
        service.transitions.watchers["nsi"] = self.notifications.note
        self.results = Results(service.db)
        """The confirmations given for each connection's requests (SOAP's queryResult)."""

    def reserve(self, actor: User, request: ReserveRequest) -> Connection:
        """Hold the bandwidth between two STPs of this network; `UnavailableError` (with
        what would fit) when it is not free."""
        src = parse_stp(request.source_stp, "source_stp", self.network)
        dst = parse_stp(request.dest_stp, "dest_stp", self.network)
        connection_id = str(uuid.uuid4())
        asked = ReservationRequest(
            src=src.local,
            dst=dst.local,
            bandwidth_mbps=request.capacity_mbps,
            start=request.start,
            end=request.end,
            description=request.description,
            hold=self.hold,
            provision=False,
        )

        def name_it(session: Session, reservation: Reservation) -> None:
            # In the admission transaction: no other writer can take the same VLAN meanwhile.
            source = _with_vlan(session, src, reservation, "source_stp")
            dest = _with_vlan(session, dst, reservation, "dest_stp", also_taken=source)
            session.execute(
                insert(NSI_CONNECTIONS).values(
                    connection_id=connection_id,
                    reservation_id=reservation.id,
                    global_reservation_id=request.global_reservation_id,
                    requester_nsa=request.requester_nsa,
                    source_local=source.local,
                    source_vlan=_vlan(source),
                    dest_local=dest.local,
                    dest_vlan=_vlan(dest),
                    version=0,
                    terminated_at=None,
                    created_at=self.service.clock(),
                    notify_to=request.notify_to,
                )
            )

        self.service.create_or_replay(actor, asked, also=name_it)
        return self.get(actor, connection_id)

    def commit(self, actor: User, connection_id: str) -> Connection:
        def next_version(session: Session, _reservation: Reservation) -> None:
            c = NSI_CONNECTIONS.c
            session.execute(
                update(NSI_CONNECTIONS)
                .where(c.connection_id == connection_id)
                .values(version=c.version + 1)
            )

        self.service.commit(actor, self._reservation_id(actor, connection_id), next_version)
        return self.get(actor, connection_id)

    def abort(self, actor: User, connection_id: str) -> Connection:
        self.service.abort(actor, self._reservation_id(actor, connection_id))
        return self.get(actor, connection_id)

    def modify(
        self,
        actor: User,
        connection_id: str,
        capacity_mbps: int | None = None,
        end: datetime | None = None,
    ) -> Connection:
        """NSI's modify (a reserve on a committed connection): hold the new capacity or
        end time until a reserve-commit makes it the connection's, a reserve-abort or the
        hold's timeout leaves it as it was."""
        change = ReservationChange(end=end, bandwidth_mbps=capacity_mbps)
        reservation_id = self._reservation_id(actor, connection_id)
        self.service.hold_change(actor, reservation_id, change, self.hold)
        return self.get(actor, connection_id)

    def provision(self, actor: User, connection_id: str) -> Connection:
        self.service.want_up(actor, self._reservation_id(actor, connection_id), True)
        return self.get(actor, connection_id)

    def release(self, actor: User, connection_id: str) -> Connection:
        self.service.want_up(actor, self._reservation_id(actor, connection_id), False)
        return self.get(actor, connection_id)

    def terminate(self, actor: User, connection_id: str) -> Connection:
        """End the connection in any state, tearing down a circuit that is up; terminating
        a terminated connection is refused (409)."""
        found = self.get(actor, connection_id)
        if found.states.lifecycle is LifecycleState.TERMINATED:
            raise ConflictError(f"connection {connection_id} is terminated already")
        if State(found.reservation.state) not in ENDED:
            self.service.cancel(actor, found.reservation.id)
        with self.service.db.write() as session:
            session.execute(
                update(NSI_CONNECTIONS)
                .where(NSI_CONNECTIONS.c.connection_id == connection_id)
                .values(terminated_at=self.service.clock())
            )
        return self.get(actor, connection_id)

    def get(self, actor: User, connection_id: str) -> Connection:
        with self.service.db.read() as session:
            row = session.get(NsiConnection, connection_id)
            if row is None or not _visible(actor, row.reservation):
                raise NotFoundError(f"no connection {connection_id}")
            return _connection(row, self.network)

    def notifications_of(
        self, actor: User, connection_id: str, first: int | None = None, last: int | None = None
    ) -> list[Notification]:
        """What the connection's requester was told unasked, `first` to `last` (NSI's
        notificationIds, inclusive; None: from the oldest, to the newest), oldest first."""
        self.get(actor, connection_id)  # NotFoundError unless `actor` may see it
        return self.notifications.of(connection_id, first, last)

    def results_of(
        self, actor: User, connection_id: str, first: int | None = None, last: int | None = None
    ) -> list[Result]:
        """The confirmations given for the connection's requests, `first` to `last`
        (resultIds, inclusive; None: from the oldest, to the newest), oldest first."""
        self.get(actor, connection_id)  # NotFoundError unless `actor` may see it
        return self.results.of(connection_id, first, last)

    def connections(self, actor: User, limit: int = 100, offset: int = 0) -> Sequence[Connection]:
        query = select(NsiConnection).join(Reservation).order_by(NsiConnection.created_at)
        if actor.role != "admin":
            query = query.where(Reservation.owner_id == actor.id)
        with self.service.db.read() as session:
            rows = session.scalars(query.limit(limit).offset(offset)).unique()
            return [_connection(row, self.network) for row in rows]

    def _reservation_id(self, actor: User, connection_id: str) -> int:
        return self.get(actor, connection_id).reservation.id


class VlanUnavailableError(ConflictError):
    """No VLAN of the range asked for is free at an STP for the whole slot, or the port
    an STP names is taken whole (untagged) or cannot be."""

    def __init__(self, field: str, stp: Stp, why: str = "no VLAN of it is free") -> None:
        self.field = field
        super().__init__(f"{field}: {stp}: {why} there for the whole slot")


def _stp(network: str, local: str, vlan: int | None) -> Stp:
    return Stp(network, local, None if vlan is None else (vlan, vlan))


def _vlan(stp: Stp) -> int | None:
    return None if stp.vlans is None else stp.vlans[0]


def _with_vlan(
    session: Session,
    stp: Stp,
    reservation: Reservation,
    field: str,
    also_taken: Stp | None = None,
) -> Stp:
    """`stp` with the lowest VLAN of its range that no other connection holding bandwidth
    uses at the same STP during any of the reservation's slot.

    An unlabelled STP that names a port (`node:port`) is the whole port, as an untagged
    attachment is: it is refused while any other connection uses the port in the slot,
    and so is a VLAN of a port taken whole. An unlabelled node or site is left as it is
    (its ports are the path's)."""
    port = ":" in stp.local
    if stp.vlans is None and not port:
        return stp
    taken = _labels_in_use(session, stp.local, reservation)
    if also_taken is not None and also_taken.local == stp.local:
        taken.add(_vlan(also_taken))
    if stp.vlans is None:
        if taken:
            raise VlanUnavailableError(field, stp, "the whole port is asked for; others use it")
        return stp
    if port and None in taken:
        raise VlanUnavailableError(field, stp, "the port is taken whole (untagged)")
    low, high = stp.vlans
    for free in range(low, high + 1):
        if free not in taken:
            return Stp(stp.network, stp.local, (free, free))
    raise VlanUnavailableError(field, stp)


def _labels_in_use(session: Session, local: str, reservation: Reservation) -> set[int | None]:
    """The VLANs (None: untagged) other connections holding bandwidth use at `local`
    during any of the reservation's slot."""
    c, r = NSI_CONNECTIONS.c, RESERVATIONS.c
    overlapping = and_(
        r.state.in_([state.value for state in HOLDS_BANDWIDTH]),
        r.start < reservation.end,
        r.end > reservation.start,
        r.id != reservation.id,
    )
    joined = NSI_CONNECTIONS.join(RESERVATIONS, c.reservation_id == r.id)
    taken: set[int | None] = set()
    for local_col, vlan_col in ((c.source_local, c.source_vlan), (c.dest_local, c.dest_vlan)):
        query = select(vlan_col).select_from(joined).where(overlapping, local_col == local)
        taken.update(session.scalars(query))
    return taken


def _committed(state: State, held_until: datetime | None) -> bool:
    """Whether a version was ever committed: not while first held or timed out, nor once
    that first hold was aborted (a commit clears the hold; an abort or a timeout keep it)."""
    if state in (State.HELD, State.EXPIRED):
        return False
    return not (state is State.CANCELLED and held_until is not None)


def _visible(actor: User, reservation: Reservation) -> bool:
    return actor.role == "admin" or reservation.owner_id == actor.id


def _connection(row: NsiConnection, network: str) -> Connection:
    reservation = row.reservation
    state = State(reservation.state)
    states = observe(
        state,
        provision=reservation.provision,
        committed=_committed(state, reservation.held_until),
        terminated=row.terminated_at is not None,
        change_held=reservation.held_change is not None,
    )
    return Connection(
        connection_id=row.connection_id,
        global_reservation_id=row.global_reservation_id,
        requester_nsa=row.requester_nsa,
        source_stp=str(_stp(network, row.source_local, row.source_vlan)),
        dest_stp=str(_stp(network, row.dest_local, row.dest_vlan)),
        reservation=reservation,
        states=states,
        version=row.version,
    )
