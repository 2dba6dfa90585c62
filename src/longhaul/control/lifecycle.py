"""The life of a reservation, declared as one table (TRANSITIONS below).

    requested ─admit→ scheduled ─start→ provisioning ─provisioned→ active ─end→ releasing
    releasing ─released→ finished          releasing ─released_cancelled→ cancelled
    scheduled ─cancel→ cancelled           provisioning, active, failed ─cancel→ releasing
    provisioning ─provision_failed→ failed      releasing ─release_failed→ failed
    failed ─retry_provision→ provisioning   failed ─retry_release→ releasing
    failed ─clear→ cancelled                scheduled ─missed→ failed

Two-phase reservation (NSI CS v2, GFD.212 §4.3.1) and provision/release (§4.3.2):

    requested ─hold→ held ─commit→ scheduled     held ─abort, cancel→ cancelled
    held ─hold_expired→ expired ─abort, commit, cancel→ cancelled
    provisioning, active ─release→ releasing ─released_idle→ scheduled
    scheduled ─passed→ finished   (its slot ended with the circuit never asked up)

Every change of state goes through `next_state`, which refuses what the table does not
allow. Which event to fire (a release after a cancel ends in `cancelled`; a retry
repeats what failed) is the service's choice; the table only says where each leads.
"""

from __future__ import annotations

from enum import StrEnum


class State(StrEnum):
    REQUESTED = "requested"
    SCHEDULED = "scheduled"
    PROVISIONING = "provisioning"
    ACTIVE = "active"
    RELEASING = "releasing"
    FINISHED = "finished"
    CANCELLED = "cancelled"
    FAILED = "failed"
    HELD = "held"
    """Admitted and holding its bandwidth until committed, aborted or the hold times out."""
    EXPIRED = "expired"
    """Its hold timed out uncommitted: it holds nothing and waits to be aborted."""


class Event(StrEnum):
    ADMIT = "admit"
    START = "start"
    PROVISIONED = "provisioned"
    PROVISION_FAILED = "provision_failed"
    END = "end"
    RELEASED = "released"
    RELEASED_CANCELLED = "released_cancelled"
    RELEASE_FAILED = "release_failed"
    CANCEL = "cancel"
    MISSED = "missed"
    """The whole slot passed while longhaul was down."""
    RETRY_PROVISION = "retry_provision"
    RETRY_RELEASE = "retry_release"
    CLEAR = "clear"
    """An admin states the network holds nothing for it any more."""
    HOLD = "hold"
    COMMIT = "commit"
    ABORT = "abort"
    HOLD_EXPIRED = "hold_expired"
    RELEASE = "release"
    """The circuit is no longer wanted up, though the reservation stays (NSI's release)."""
    RELEASED_IDLE = "released_idle"
    PASSED = "passed"
    """Its slot ended while its circuit was not wanted up: nothing to tear down."""


TRANSITIONS: dict[tuple[State, Event], State] = {
    (State.REQUESTED, Event.ADMIT): State.SCHEDULED,
    (State.REQUESTED, Event.CANCEL): State.CANCELLED,
    (State.SCHEDULED, Event.START): State.PROVISIONING,
    (State.SCHEDULED, Event.CANCEL): State.CANCELLED,
    (State.SCHEDULED, Event.MISSED): State.FAILED,
    (State.PROVISIONING, Event.PROVISIONED): State.ACTIVE,
    (State.PROVISIONING, Event.PROVISION_FAILED): State.FAILED,
    (State.PROVISIONING, Event.CANCEL): State.RELEASING,
    (State.PROVISIONING, Event.END): State.RELEASING,
    (State.ACTIVE, Event.END): State.RELEASING,
    (State.ACTIVE, Event.CANCEL): State.RELEASING,
    (State.RELEASING, Event.RELEASED): State.FINISHED,
    (State.RELEASING, Event.RELEASED_CANCELLED): State.CANCELLED,
    (State.RELEASING, Event.RELEASE_FAILED): State.FAILED,
    (State.FAILED, Event.RETRY_PROVISION): State.PROVISIONING,
    (State.FAILED, Event.RETRY_RELEASE): State.RELEASING,
    (State.FAILED, Event.CANCEL): State.RELEASING,
    (State.FAILED, Event.CLEAR): State.CANCELLED,
    (State.REQUESTED, Event.HOLD): State.HELD,
    (State.HELD, Event.COMMIT): State.SCHEDULED,
    (State.HELD, Event.ABORT): State.CANCELLED,
    (State.HELD, Event.CANCEL): State.CANCELLED,
    (State.HELD, Event.HOLD_EXPIRED): State.EXPIRED,
    (State.EXPIRED, Event.ABORT): State.CANCELLED,
    (State.EXPIRED, Event.COMMIT): State.CANCELLED,  # reserveCommitFailed: nothing is held
    (State.EXPIRED, Event.CANCEL): State.CANCELLED,
    (State.PROVISIONING, Event.RELEASE): State.RELEASING,
    (State.ACTIVE, Event.RELEASE): State.RELEASING,
    (State.RELEASING, Event.RELEASED_IDLE): State.SCHEDULED,
    (State.SCHEDULED, Event.PASSED): State.FINISHED,
}

HOLDS_BANDWIDTH = frozenset(
    {
        State.REQUESTED,
        State.HELD,
        State.SCHEDULED,
        State.PROVISIONING,
        State.ACTIVE,
        State.RELEASING,
        # Until retried or cleared, a failed circuit may still hold the network.
        State.FAILED,
    }
)
ENDED = frozenset({State.FINISHED, State.CANCELLED})
CIRCUIT_UP = frozenset({State.PROVISIONING, State.ACTIVE})
"""The circuit is up in the network or being set up: a change must reach its devices."""


class TransitionError(ValueError):
    """An event the lifecycle does not allow in the current state."""

    def __init__(self, state: State, event: Event) -> None:
        self.state = state
        self.event = event
        allowed = sorted(e.value for (s, e) in TRANSITIONS if s == state)
        hint = f"; in {state.value} it can: {', '.join(allowed)}" if allowed else ""
        super().__init__(f"a {state.value} reservation cannot {event.value}{hint}")


def next_state(state: State, event: Event) -> State:
    """Where `event` leads from `state`; `TransitionError` if the table has no such row."""
    try:
        return TRANSITIONS[(state, event)]
    except KeyError:
        raise TransitionError(state, event) from None
