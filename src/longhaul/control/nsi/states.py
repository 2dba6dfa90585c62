"""The three state machines of an NSI CS v2 connection (GFD.212 §4.3), read off the
reservation that carries it.

The reservation's lifecycle (`longhaul.control.lifecycle`) is the one machine longhaul
moves; NSI's are views of it, so the two can never disagree. Whether a version was ever
committed (the provision machine exists only from then, §4.3.2) is told by the
reservation's state and hold; only whether a terminate was asked is kept on the
connection.

The transitional states (ReserveChecking, ReserveCommitting, ReserveAborting,
Provisioning, Terminating where no circuit is up) last only while a request is being
answered: longhaul answers each request in one transaction, so they are never seen
from outside, as GFD.212 allows for a provider that confirms at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from longhaul.control.lifecycle import State


class ReservationState(StrEnum):
    """The Reservation State Machine (RSM), GFD.212 §4.3.1."""

    START = "ReserveStart"
    CHECKING = "ReserveChecking"
    HELD = "ReserveHeld"
    COMMITTING = "ReserveCommitting"
    FAILED = "ReserveFailed"
    TIMEOUT = "ReserveTimeout"
    ABORTING = "ReserveAborting"


class ProvisionState(StrEnum):
    """The Provision State Machine (PSM), GFD.212 §4.3.2."""

    RELEASED = "Released"
    PROVISIONING = "Provisioning"
    PROVISIONED = "Provisioned"
    RELEASING = "Releasing"


class LifecycleState(StrEnum):
    """The Lifecycle State Machine (LSM), GFD.212 §4.3.3."""

    CREATED = "Created"
    FAILED = "Failed"
    PASSED_END_TIME = "PassedEndTime"
    TERMINATING = "Terminating"
    TERMINATED = "Terminated"


@dataclass(frozen=True)
class ConnectionStates:
    reservation: ReservationState
    provision: ProvisionState | None
    """None until a version is committed: the PSM is created by the first commit."""
    lifecycle: LifecycleState
    data_plane_active: bool
    """The circuit is up in the network (GFD.212's dataPlaneStatus `active`)."""


def observe(
    state: State,
    provision: bool,
    committed: bool,
    terminated: bool,
    change_held: bool = False,
) -> ConnectionStates:
    """The NSI states of a connection whose reservation is in `state`, wanted up or not
    (`provision`), ever committed or not, terminated or not, with a change (NSI's modify)
    held or not."""
    return ConnectionStates(
        reservation=ReservationState.HELD if change_held else _reservation(state),
        provision=_provision(state, provision) if committed else None,
        lifecycle=_lifecycle(state, committed, terminated),
        data_plane_active=state is State.ACTIVE,
    )


def _reservation(state: State) -> ReservationState:
    if state is State.HELD:
        return ReservationState.HELD
    if state is State.EXPIRED:
        return ReservationState.TIMEOUT
    return ReservationState.START


def _provision(state: State, provision: bool) -> ProvisionState:
    if state is State.RELEASING and not provision:
        return ProvisionState.RELEASING
    return ProvisionState.PROVISIONED if provision else ProvisionState.RELEASED


def _lifecycle(state: State, committed: bool, terminated: bool) -> LifecycleState:
    if terminated or (state is State.CANCELLED and committed):
        # A circuit still coming down is terminating; a cancel through longhaul's own API
        # terminates the connection too.
        return LifecycleState.TERMINATING if state is State.RELEASING else LifecycleState.TERMINATED
    if state is State.FAILED:
        return LifecycleState.FAILED
    if state is State.FINISHED:
        return LifecycleState.PASSED_END_TIME
    return LifecycleState.CREATED
