"""The JSON the API takes and gives. Times are RFC 3339 with a zone; naive ones are refused."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, model_validator

from longhaul.control.db import Reservation, StateChange
from longhaul.schedule import EarliestStart, WidestPath
from longhaul.topology import Path

MAX_MBPS = 1_000_000
"""A terabit: more than any link longhaul knows, small enough to stay an ordinary integer."""

Name = Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9][A-Za-z0-9._/-]*$")


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EndIn(_In):
    """A switch (or host, or site) and, optionally, the port on it."""

    node: str = Name
    port: str | None = Field(default=None, min_length=1, max_length=64, pattern=r"^[^:\s]+$")

    def text(self) -> str:
        return self.node if self.port is None else f"{self.node}:{self.port}"


class ReservationIn(_In):
    """A request for bandwidth between two ends, for a slot or as soon as possible."""

    src: EndIn
    dst: EndIn
    bandwidth_mbps: int = Field(gt=0, le=MAX_MBPS, strict=True)
    start: AwareDatetime | Literal["now", "asap"] = Field(
        default="now",
        description="When to start: a time with a zone, 'now', or 'asap' (the earliest "
        "start at or after not_before, else now).",
    )
    not_before: AwareDatetime | None = Field(default=None, description="With start = 'asap'.")
    end: AwareDatetime | None = None
    duration: timedelta | None = Field(
        default=None, description="ISO 8601 (PT2H) or seconds; give end or duration."
    )
    route: list[str] | None = Field(
        default=None, max_length=1000, description="Link ids to walk instead of searching a path."
    )
    loop: str | None = Field(default=None, max_length=128, description="A loop-back to walk.")
    description: str = Field(default="", max_length=1000)

    @model_validator(mode="after")
    def _one_of_end_and_duration(self) -> ReservationIn:
        if (self.end is None) == (self.duration is None):
            raise ValueError("give either end or duration")
        return self


class ReservationPatch(_In):
    end: AwareDatetime | None = None
    bandwidth_mbps: int | None = Field(default=None, gt=0, le=MAX_MBPS, strict=True)
    version: int | None = Field(
        default=None,
        ge=1,
        le=2**31,
        strict=True,
        description="Apply only if still at this version.",
    )


class EndOut(BaseModel):
    node: str
    port: str | None


class PathOut(BaseModel):
    nodes: list[str]
    links: list[str]
    hops: int
    length_miles: float
    rtt_ms: float

    @classmethod
    def of(cls, path: Path | None) -> PathOut | None:
        return None if path is None else cls.model_validate(path.as_dict())


class ReservationOut(BaseModel):
    id: int
    owner: str
    src: EndOut
    dst: EndOut
    bandwidth_mbps: int
    start: datetime
    end: datetime
    route: list[str] | None
    path: PathOut | None
    """None only if the topology no longer has the reservation's links."""
    state: str
    version: int
    description: str
    cancelled_at: datetime | None
    held_until: datetime | None
    """When a held reservation's hold times out (kept after an abort or a timeout)."""
    provision: bool
    """Whether its circuit is to be up during its slot (False for an NSI connection until
    it is provisioned)."""
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, reservation: Reservation, path: Path | None) -> ReservationOut:
        return cls(
            id=reservation.id,
            owner=reservation.owner.name,
            src=EndOut(node=reservation.src_node, port=reservation.src_port),
            dst=EndOut(node=reservation.dst_node, port=reservation.dst_port),
            bandwidth_mbps=reservation.bandwidth_mbps,
            start=reservation.start,
            end=reservation.end,
            route=reservation.route,
            path=PathOut.of(path),
            state=reservation.state,
            version=reservation.version,
            description=reservation.description,
            cancelled_at=reservation.cancelled_at,
            held_until=reservation.held_until,
            provision=reservation.provision,
            created_at=reservation.created_at,
            updated_at=reservation.updated_at,
        )


class ReservationPage(BaseModel):
    items: list[ReservationOut]
    total: int
    limit: int
    offset: int


class StateChangeOut(BaseModel):
    at: datetime
    from_state: str | None
    to_state: str
    reason: str
    actor: str

    @classmethod
    def of(cls, change: StateChange) -> StateChangeOut:
        return cls(
            at=change.at,
            from_state=change.from_state,
            to_state=change.to_state,
            reason=change.reason,
            actor=change.actor,
        )


class FixedSlotOut(BaseModel):
    start: datetime
    end: datetime
    bandwidth_mbps: int
    path: PathOut | None


class EarliestStartOut(BaseModel):
    start: datetime | None
    """None when no path can ever carry the bandwidth."""
    path: PathOut | None

    @classmethod
    def of(cls, found: EarliestStart | None) -> EarliestStartOut:
        if found is None:
            return cls(start=None, path=None)
        return cls(start=found.start, path=PathOut.of(found.path))


class MaxBandwidthOut(BaseModel):
    start: datetime
    end: datetime
    bandwidth_mbps: int
    path: PathOut | None

    @classmethod
    def of(cls, widest: WidestPath, start: datetime, end: datetime) -> MaxBandwidthOut:
        return cls(
            start=start, end=end, bandwidth_mbps=widest.bandwidth_mbps, path=PathOut.of(widest.path)
        )


class SlotRun(BaseModel):
    first_start: datetime
    last_start: datetime


class AllSlotsOut(BaseModel):
    window_start: datetime
    window_end: datetime
    duration_s: float
    bandwidth_mbps: int
    slots: list[SlotRun]


class FreeStep(BaseModel):
    at: datetime
    free_mbps: int


class LinkFreeOut(BaseModel):
    link: str
    capacity_mbps: int
    steps: list[FreeStep]


class Health(BaseModel):
    status: Literal["ok"]
    database: str
    topology: str
    driver: str


class TokenOut(BaseModel):
    """A new API token, shown this once."""

    user: str
    token: str


class AuditEventOut(BaseModel):
    at: datetime
    actor: str
    action: str
    target: str
    source: str
    outcome: str
    detail: str
