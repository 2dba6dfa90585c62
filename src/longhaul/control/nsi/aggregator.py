"""An NSI aggregator (GFD.212 §2.2): one connection across several domains, each
segment a connection of the domain it crosses, reserved, committed, provisioned,
released and terminated together.

The request is split along the domains' peerings (`domains.Domains.split`); segments
are reserved in path order, and each boundary's VLAN is the one the upstream domain
chose from the range both sides accept, asked for exactly of the downstream domain: so
both sides of every boundary use the same VLAN. If any domain refuses, everything held
so far is aborted, and the refusal names that domain. A commit that fails anywhere
terminates what was committed and aborts the rest: nothing stays held.

Each domain is a `Peer`: this domain's own provider (in process) or another longhaul
server's `/api/v1/nsi/connections` over HTTP.
"""

from __future__ import annotations

import tomllib
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Protocol, TypeVar

import httpx
from sqlalchemy import insert, select

from longhaul.control.db import NSI_AGGREGATES, NsiAggregate, User
from longhaul.control.errors import (
    ConflictError,
    ForbiddenError,
    NetworkError,
    NotFoundError,
    UnavailableError,
)
from longhaul.control.nsi.domains import Domains, Segment, load_domains, shipped_domains
from longhaul.control.nsi.provider import (
    Connection,
    Provider,
    ReserveRequest,
    VlanUnavailableError,
)
from longhaul.control.nsi.queries import Run, SegmentAnswers
from longhaul.control.nsi.states import (
    ConnectionStates,
    LifecycleState,
    ProvisionState,
    ReservationState,
)
from longhaul.control.nsi.stp import URN_PREFIX, Stp, parse_stp
from longhaul.control.policy import PolicyError
from longhaul.control.service import Service
from longhaul.errors import InputError

S = TypeVar("S")

REFUSALS = (
    ConflictError,
    ForbiddenError,
    InputError,
    NetworkError,
    NotFoundError,
    PolicyError,
    UnavailableError,
)
"""What this domain's service raises when it says no (not when it breaks)."""

VLAN_RETRIES = 16
"""How many times a reserve asks an upstream domain for another VLAN at a boundary whose
downstream side has the one chosen taken, before it gives up (each retry is an abort and
a reserve in the upstream domain)."""

PEER_TIMEOUT_S = 30.0
"""How long a peer's answer may take before the request counts as refused."""


@dataclass(frozen=True)
class SegmentView:
    """One domain's connection, as that domain reports it."""

    network: str
    connection_id: str
    source_stp: str
    dest_stp: str
    states: ConnectionStates


class PeerError(ConflictError):
    """A domain refused a request (or did not answer): which, and what it said."""

    def __init__(
        self,
        network: str,
        what: str,
        detail: str,
        status: int = 409,
        vlan_field: str | None = None,
    ) -> None:
        self.network, self.status = network, status
        self.vlan_field = vlan_field
        """`source_stp` or `dest_stp` when the refusal was for want of a free VLAN there."""
        super().__init__(f"{network} refused {what}: {detail}")


class Peer(Protocol):
    network: str

    def reserve(self, request: ReserveRequest) -> SegmentView: ...
    def modify(self, connection_id: str, change: Change) -> SegmentView: ...
    def act(self, what: str, connection_id: str) -> SegmentView: ...
    def get(self, connection_id: str) -> SegmentView: ...


@dataclass(frozen=True)
class Change:
    """NSI's modify: a new capacity, a new end time, or both."""

    capacity_mbps: int | None = None
    end: datetime | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "capacity_mbps": self.capacity_mbps,
            "end_time": None if self.end is None else self.end.isoformat(),
        }


class LocalPeer:
    """This domain's own provider, acting for the user who asked the aggregator."""

    def __init__(self, provider: Provider, actor: User) -> None:
        self.provider, self.actor, self.network = provider, actor, provider.network

    def reserve(self, request: ReserveRequest) -> SegmentView:
        return self._guarded("reserve", lambda: self.provider.reserve(self.actor, request))

    def modify(self, connection_id: str, change: Change) -> SegmentView:
        return self._guarded(
            "modify",
            lambda: self.provider.modify(
                self.actor, connection_id, change.capacity_mbps, change.end
            ),
        )

    def act(self, what: str, connection_id: str) -> SegmentView:
        calls: dict[str, Callable[[User, str], Connection]] = {
            "reserve-commit": self.provider.commit,
            "reserve-abort": self.provider.abort,
            "provision": self.provider.provision,
            "release": self.provider.release,
            "terminate": self.provider.terminate,
        }
        return self._guarded(what, lambda: calls[what](self.actor, connection_id))

    def get(self, connection_id: str) -> SegmentView:
        return _local_view(self.network, self.provider.get(self.actor, connection_id))

    def _guarded(self, what: str, call: Callable[[], Connection]) -> SegmentView:
        """This domain's refusals as any other domain's: a `PeerError` naming it."""
        try:
            return _local_view(self.network, call())
        except REFUSALS as exc:
            status = 502 if isinstance(exc, NetworkError) else 409
            field = exc.field if isinstance(exc, VlanUnavailableError) else None
            raise PeerError(self.network, what, str(exc), status, field) from exc


class RemotePeer:
    """Another longhaul domain's NSI provider over its REST API."""

    def __init__(self, network: str, url: str, token: str, timeout_s: float = PEER_TIMEOUT_S):
        self.network = network
        self.client = httpx.Client(
            base_url=url.rstrip("/") + "/api/v1",
            headers={"Authorization": f"Bearer {token}"},
            timeout=timeout_s,
        )

    def reserve(self, request: ReserveRequest) -> SegmentView:
        body = {
            "source_stp": request.source_stp,
            "dest_stp": request.dest_stp,
            "capacity_mbps": request.capacity_mbps,
            "start_time": None if request.start is None else request.start.isoformat(),
            "end_time": request.end.isoformat(),
            "global_reservation_id": request.global_reservation_id,
            "description": request.description,
            "requester_nsa": request.requester_nsa,
        }
        return self._call("reserve", "POST", "/nsi/connections", body)

    def modify(self, connection_id: str, change: Change) -> SegmentView:
        path = f"/nsi/connections/{connection_id}/modify"
        return self._call("modify", "POST", path, change.to_json())

    def act(self, what: str, connection_id: str) -> SegmentView:
        return self._call(what, "POST", f"/nsi/connections/{connection_id}/{what}")

    def get(self, connection_id: str) -> SegmentView:
        return self._call("query", "GET", f"/nsi/connections/{connection_id}")

    def availability(self, query: str, params: dict[str, str]) -> dict[str, Any]:
        """One of the four queries, asked of that domain (`/api/v1/availability/QUERY`)."""
        answer: dict[str, Any] = self._json(query, "GET", f"/availability/{query}", params=params)
        return answer

    def _call(self, what: str, method: str, path: str, body: Any = None) -> SegmentView:
        return _remote_view(self.network, self._json(what, method, path, body))

    def _json(self, what: str, method: str, path: str, body: Any = None, params: Any = None) -> Any:
        try:
            answer = self.client.request(method, path, json=body, params=params)
        except httpx.HTTPError as exc:
            raise PeerError(self.network, what, f"no answer ({exc})", 504) from exc
        if answer.status_code >= 300:
            try:
                problem = answer.json()
            except ValueError:
                problem = {"detail": answer.text}
            detail = problem.get("detail", answer.text)
            vlan = str(problem.get("type", "")).endswith("/vlan-unavailable")
            raise PeerError(
                self.network,
                what,
                f"{answer.status_code} {detail}",
                answer.status_code,
                problem.get("field") if vlan else None,
            )
        return answer.json()

    def close(self) -> None:
        self.client.close()


@dataclass(frozen=True)
class Aggregate:
    connection_id: str
    global_reservation_id: str
    requester_nsa: str
    source_stp: str
    dest_stp: str
    capacity_mbps: int
    start: datetime
    end: datetime
    segments: tuple[SegmentView, ...]
    states: ConnectionStates


@dataclass(frozen=True)
class PeerAddress:
    network: str
    url: str
    token: str


@dataclass(frozen=True)
class Peering:
    """What `serve --nsi-peers FILE` gives: the domains and how to reach the others."""

    domains: Domains
    peers: tuple[PeerAddress, ...]


def load_peering(path: Path | str) -> Peering:
    """`domains = "usn-peers"` (a shipped name, or a file beside this one) and one
    `[[peers]]` (network, url, token) for each other domain this one reaches."""
    path = Path(path)
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    named = str(data.get("domains", "usn-peers"))
    beside = path.parent / named
    domains = load_domains(beside) if beside.is_file() else shipped_domains(named)
    peers = []
    for number, entry in enumerate(data.get("peers", []), 1):
        try:
            peers.append(PeerAddress(entry["network"], entry["url"], entry["token"]))
        except KeyError as exc:
            raise InputError(str(path), f"peer {number} needs network, url and token") from exc
    return Peering(domains, tuple(peers))


class Aggregator:
    def __init__(self, provider: Provider, peering: Peering) -> None:
        self.provider = provider
        self.domains = peering.domains
        self.remote = {p.network: RemotePeer(p.network, p.url, p.token) for p in peering.peers}
        self.network = provider.network
        self.db = provider.service.db
        self.clock = provider.service.clock

    def answers(self, source_stp: str, dest_stp: str) -> list[SegmentAnswers]:
        """Who answers the four queries for each segment of the way between two STPs
        (each domain answers any signed-in user: the queries only read)."""
        src = _any_stp(source_stp, "source_stp", self.domains)
        dst = _any_stp(dest_stp, "dest_stp", self.domains)
        found: list[SegmentAnswers] = []
        for segment in self.domains.split(src, dst):
            ends = segment.src.local, segment.dst.local
            if segment.network == self.network:
                found.append(LocalAnswers(self.network, self.provider.service, *ends))
                continue
            peer = self.remote.get(segment.network)
            if peer is None:
                raise PeerError(
                    segment.network, "the query", "this domain has no address for it", 502
                )
            found.append(RemoteAnswers(peer, *ends))
        return found

    def is_remote(self, stp_text: str) -> bool:
        """Whether an STP lies outside this domain (so the request needs the aggregator)."""
        return isinstance(stp_text, str) and not stp_text.startswith(self.network + ":")

    def reserve(self, actor: User, request: ReserveRequest) -> Aggregate:
        src = _any_stp(request.source_stp, "source_stp", self.domains)
        dst = _any_stp(request.dest_stp, "dest_stp", self.domains)
        segments = self.domains.split(src, dst)
        exits = [segment.dst for segment in segments]  # with the VLANs still to choose from
        held: list[tuple[Peer, SegmentView]] = []
        retries = 0
        try:
            while len(held) < len(segments):
                k = len(held)
                peer = self._peer(actor, segments[k].network)
                entry = segments[k].src if k == 0 else _entry(held[-1][1], segments[k])
                asked = replace(
                    request,
                    source_stp=str(entry),
                    dest_stp=str(exits[k]),
                    requester_nsa=self.network,
                )
                try:
                    view = peer.reserve(asked)
                except PeerError as refused:
                    if k == 0 or refused.vlan_field != "source_stp" or retries >= VLAN_RETRIES:
                        raise
                    # The VLAN the upstream domain chose is taken on this side: it gives
                    # its hold back and chooses again from above it.
                    upstream, chose = held.pop()
                    _quietly(upstream.act, "reserve-abort", chose.connection_id)
                    exits[k - 1] = _above(exits[k - 1], chose.dest_stp, refused)
                    retries += 1
                    continue
                held.append((peer, view))
        except Exception:
            # Whatever stopped it (a refusal, or a fault here), nothing stays held.
            for peer, view in held:
                _quietly(peer.act, "reserve-abort", view.connection_id)
            raise
        connection_id = str(uuid.uuid4())
        with self.db.write() as session:
            session.execute(
                insert(NSI_AGGREGATES).values(
                    connection_id=connection_id,
                    owner_id=actor.id,
                    global_reservation_id=request.global_reservation_id,
                    requester_nsa=request.requester_nsa,
                    source_stp=held[0][1].source_stp,
                    dest_stp=held[-1][1].dest_stp,
                    capacity_mbps=request.capacity_mbps,
                    start=request.start or self.clock(),
                    end=request.end,
                    segments=[[view.network, view.connection_id] for _, view in held],
                    created_at=self.clock(),
                )
            )
        return self.get(actor, connection_id)

    def act(self, actor: User, what: str, connection_id: str) -> Aggregate:
        """One NSI request on every segment, in path order. A commit that fails anywhere
        terminates what was committed and aborts the rest; other requests go to every
        segment and the first refusal is raised after all were tried."""
        row = self._row(actor, connection_id)
        parts = [(self._peer(actor, network), child) for network, child in row.segments]
        changing = row.held_change is not None
        if what == "reserve-commit":
            try:
                self._commit_all(parts, changing)
            except PeerError:
                if changing:
                    self._settle_change(connection_id, applied=None)
                raise
            if changing:
                self._settle_change(connection_id, applied=row.held_change)
        else:
            errors = [e for peer, child in parts if (e := _quietly(peer.act, what, child))]
            if changing and what in ("reserve-abort", "terminate"):
                self._settle_change(connection_id, applied=None)
            if errors:
                raise errors[0]
        return self.get(actor, connection_id)

    def _settle_change(self, connection_id: str, applied: dict[str, Any] | None) -> None:
        """The aggregate's held change is over: made its own (`applied`), or dropped."""
        with self.db.write() as session:
            row = session.get_one(NsiAggregate, connection_id)
            if applied is not None:
                if applied.get("capacity_mbps") is not None:
                    row.capacity_mbps = int(applied["capacity_mbps"])
                if applied.get("end") is not None:
                    row.end = datetime.fromisoformat(applied["end"])
            row.held_change = None

    def modify(self, actor: User, connection_id: str, change: Change) -> Aggregate:
        """NSI's modify across domains: the change held in every segment, in path order;
        if any domain refuses, the changes held so far are aborted and the connection
        stays as it was."""
        row = self._row(actor, connection_id)
        parts = [(self._peer(actor, network), child) for network, child in row.segments]
        done: list[tuple[Peer, str]] = []
        try:
            for peer, child in parts:
                peer.modify(child, change)
                done.append((peer, child))
        except Exception:
            for peer, child in done:
                _quietly(peer.act, "reserve-abort", child)
            raise
        with self.db.write() as session:
            held = {"capacity_mbps": change.capacity_mbps, "end": change.to_json()["end_time"]}
            session.get_one(NsiAggregate, connection_id).held_change = held
        return self.get(actor, connection_id)

    def _commit_all(self, parts: Sequence[tuple[Peer, str]], changing: bool) -> None:
        """Commit every segment. When one refuses, the rest are aborted; on a first
        commit, the segments committed already are terminated (nothing is left of a
        connection that could not be made whole); on a change, they keep it."""
        for number, (peer, child) in enumerate(parts):
            try:
                peer.act("reserve-commit", child)
            except PeerError:
                if not changing:
                    for done, done_child in parts[:number]:
                        _quietly(done.act, "terminate", done_child)
                for rest, rest_child in parts[number + 1 :]:
                    _quietly(rest.act, "reserve-abort", rest_child)
                raise

    def get(self, actor: User, connection_id: str) -> Aggregate:
        return self._aggregate(actor, self._row(actor, connection_id))

    def _aggregate(self, actor: User, row: NsiAggregate) -> Aggregate:
        """The aggregate `row` names, with each segment as its domain reports it now."""
        views = tuple(self._peer(actor, net).get(child) for net, child in row.segments)
        return Aggregate(
            connection_id=row.connection_id,
            global_reservation_id=row.global_reservation_id,
            requester_nsa=row.requester_nsa,
            source_stp=row.source_stp,
            dest_stp=row.dest_stp,
            capacity_mbps=row.capacity_mbps,
            start=row.start,
            end=row.end,
            segments=views,
            states=combine([view.states for view in views]),
        )

    def aggregates(self, actor: User, limit: int = 100, offset: int = 0) -> list[Aggregate]:
        query = select(NsiAggregate).order_by(NsiAggregate.created_at)
        if actor.role != "admin":
            query = query.where(NsiAggregate.owner_id == actor.id)
        with self.db.read() as session:
            rows = list(session.scalars(query.limit(limit).offset(offset)))
        return [self._aggregate(actor, row) for row in rows]

    def has(self, connection_id: str) -> bool:
        with self.db.read() as session:
            return session.get(NsiAggregate, connection_id) is not None

    def check_visible(self, actor: User, connection_id: str) -> None:
        """`NotFoundError` unless `actor` may see the aggregate: read here, without asking
        its domains for their segments as `get` does."""
        self._row(actor, connection_id)

    def _row(self, actor: User, connection_id: str) -> NsiAggregate:
        with self.db.read() as session:
            row = session.get(NsiAggregate, connection_id)
        if row is None or (actor.role != "admin" and row.owner_id != actor.id):
            raise NotFoundError(f"no connection {connection_id}")
        return row

    def _peer(self, actor: User, network: str) -> Peer:
        if network == self.network:
            return LocalPeer(self.provider, actor)
        peer = self.remote.get(network)
        if peer is None:
            raise PeerError(network, "the request", "this domain has no address for it", 502)
        return peer

    def close(self) -> None:
        for peer in self.remote.values():
            peer.close()


class LocalAnswers:
    """This domain's answers for its segment, from its own calendar."""

    def __init__(self, network: str, service: Service, src: str, dst: str) -> None:
        self.network, self.service, self.src, self.dst = network, service, src, dst

    def fixed_slot(self, mbps: int, start: datetime, end: datetime) -> bool:
        avail = self.service.availability()
        return avail.fixed_slot(self.src, self.dst, mbps, start, end) is not None

    def earliest_start(
        self, mbps: int, duration: timedelta, not_before: datetime
    ) -> datetime | None:
        found = self.service.availability().earliest_start(
            self.src, self.dst, mbps, duration, not_before
        )
        return None if found is None else found.start

    def max_bandwidth(self, start: datetime, end: datetime) -> int:
        return self.service.availability().max_bandwidth(self.src, self.dst, start, end)[0]

    def all_slots(
        self, mbps: int, duration: timedelta, window_start: datetime, window_end: datetime
    ) -> list[Run]:
        slots = self.service.availability().all_slots(
            self.src, self.dst, mbps, duration, (window_start, window_end)
        )
        return slots.windows()


class RemoteAnswers:
    """Another domain's answers for its segment, through its `/api/v1/availability`."""

    def __init__(self, peer: RemotePeer, src: str, dst: str) -> None:
        self.peer, self.network, self.src, self.dst = peer, peer.network, src, dst

    def _ask(self, query: str, **params: object) -> dict[str, Any]:
        texts = {k: v.isoformat() if isinstance(v, datetime) else str(v) for k, v in params.items()}
        return self.peer.availability(query, {"src": self.src, "dst": self.dst, **texts})

    def fixed_slot(self, mbps: int, start: datetime, end: datetime) -> bool:
        answer = self._ask("fixed-slot", bandwidth_mbps=mbps, start=start, end=end)
        return answer["path"] is not None

    def earliest_start(
        self, mbps: int, duration: timedelta, not_before: datetime
    ) -> datetime | None:
        seconds = int(duration.total_seconds())
        answer = self._ask(
            "earliest-start", bandwidth_mbps=mbps, duration=seconds, not_before=not_before
        )
        return None if answer["start"] is None else datetime.fromisoformat(answer["start"])

    def max_bandwidth(self, start: datetime, end: datetime) -> int:
        return int(self._ask("max-bandwidth", start=start, end=end)["bandwidth_mbps"])

    def all_slots(
        self, mbps: int, duration: timedelta, window_start: datetime, window_end: datetime
    ) -> list[Run]:
        answer = self._ask(
            "all-slots",
            bandwidth_mbps=mbps,
            duration=int(duration.total_seconds()),
            window_start=window_start,
            window_end=window_end,
        )
        return [
            (datetime.fromisoformat(run["first_start"]), datetime.fromisoformat(run["last_start"]))
            for run in answer["slots"]
        ]


def combine(children: Sequence[ConnectionStates]) -> ConnectionStates:
    """An aggregate's states from its segments': where they agree, theirs; where they
    differ, the one furthest from done (a timeout over a hold over a start; a release
    under way over either end of it; terminating until all are terminated)."""
    rsm = _first_of(
        [c.reservation for c in children],
        (ReservationState.TIMEOUT, ReservationState.FAILED, ReservationState.HELD),
        ReservationState.START,
    )
    provisions = [c.provision for c in children]
    psm: ProvisionState | None = None
    if None not in provisions:
        psm = _first_of(
            [p for p in provisions if p is not None],
            (ProvisionState.RELEASING, ProvisionState.PROVISIONING, ProvisionState.RELEASED),
            ProvisionState.PROVISIONED,
        )
    lifecycles = {c.lifecycle for c in children}
    if lifecycles == {LifecycleState.TERMINATED}:
        lsm = LifecycleState.TERMINATED
    elif LifecycleState.TERMINATED in lifecycles or LifecycleState.TERMINATING in lifecycles:
        lsm = LifecycleState.TERMINATING
    else:
        lsm = _first_of(
            list(lifecycles),
            (LifecycleState.FAILED, LifecycleState.CREATED),
            LifecycleState.PASSED_END_TIME,
        )
    return ConnectionStates(rsm, psm, lsm, all(c.data_plane_active for c in children))


def _first_of(found: list[S], precedence: Sequence[S], otherwise: S) -> S:
    if len(set(found)) == 1:
        return found[0]
    return next((state for state in precedence if state in found), otherwise)


def _any_stp(text: str, field: str, domains: Domains) -> Stp:
    if not isinstance(text, str) or not text.startswith(URN_PREFIX):
        raise InputError(field, f"an STP is a URN starting {URN_PREFIX!r}, got {text!r}")
    networks = [d.network for d in domains.domains if text.startswith(d.network + ":")]
    if not networks:
        known = ", ".join(d.network for d in domains.domains)
        raise InputError(field, f"{text!r} is in none of the peering domains ({known})")
    return parse_stp(text, field, max(networks, key=len))


def _entry(upstream: SegmentView, segment: Segment) -> Stp:
    """A segment's entry: the boundary's other side, with the VLAN the upstream chose."""
    chosen = parse_stp(upstream.dest_stp, "dest_stp", upstream.network)
    return Stp(segment.src.network, segment.src.local, chosen.vlans)


def _above(exit_: Stp, chosen_text: str, refused: PeerError) -> Stp:
    """`exit_` with only the VLANs above the one chosen at it (which the other side has
    taken); `refused` again if there are none."""
    chosen = parse_stp(chosen_text, "dest_stp", exit_.network)
    assert exit_.vlans is not None and chosen.vlans is not None
    low, high = chosen.vlans[0] + 1, exit_.vlans[1]
    if low > high:
        raise refused
    return Stp(exit_.network, exit_.local, (low, high))


def _quietly(call: Callable[[str, str], SegmentView], what: str, child: str) -> PeerError | None:
    """Best effort (a rollback, or a request sent to every segment): the refusal, if any."""
    try:
        call(what, child)
    except PeerError as exc:
        return exc
    return None


def _local_view(network: str, connection: Connection) -> SegmentView:
    return SegmentView(
        network=network,
        connection_id=connection.connection_id,
        source_stp=connection.source_stp,
        dest_stp=connection.dest_stp,
        states=connection.states,
    )


def _remote_view(network: str, data: dict[str, Any]) -> SegmentView:
    provision = data.get("provision_state")
    return SegmentView(
        network=network,
        connection_id=data["connection_id"],
        source_stp=data["source_stp"],
        dest_stp=data["dest_stp"],
        states=ConnectionStates(
            ReservationState(data["reservation_state"]),
            None if provision is None else ProvisionState(provision),
            LifecycleState(data["lifecycle_state"]),
            bool(data["data_plane_active"]),
        ),
    )
