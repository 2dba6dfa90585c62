"""NSI's three state machines, read off a reservation."""

import pytest

from longhaul.control.lifecycle import State
from longhaul.control.nsi.states import (
    LifecycleState,
    ProvisionState,
    ReservationState,
    observe,
)

R, P, L = ReservationState, ProvisionState, LifecycleState


@pytest.mark.parametrize(
    ("state", "provision", "committed", "terminated", "expected"),
    [
        # reserve -> ReserveHeld; no PSM before the first commit (GFD.212 §4.3.2)
        (State.HELD, False, False, False, (R.HELD, None, L.CREATED, False)),
        (State.EXPIRED, False, False, False, (R.TIMEOUT, None, L.CREATED, False)),
        # aborted before any commit: ReserveStart with nothing, the connection still there
        (State.CANCELLED, False, False, False, (R.START, None, L.CREATED, False)),
        (State.SCHEDULED, False, True, False, (R.START, P.RELEASED, L.CREATED, False)),
        (State.SCHEDULED, True, True, False, (R.START, P.PROVISIONED, L.CREATED, False)),
        (State.ACTIVE, True, True, False, (R.START, P.PROVISIONED, L.CREATED, True)),
        (State.RELEASING, False, True, False, (R.START, P.RELEASING, L.CREATED, False)),
        (State.RELEASING, True, True, True, (R.START, P.PROVISIONED, L.TERMINATING, False)),
        (State.CANCELLED, True, True, True, (R.START, P.PROVISIONED, L.TERMINATED, False)),
        # a cancel through longhaul's own API terminates the connection too
        (State.CANCELLED, False, True, False, (R.START, P.RELEASED, L.TERMINATED, False)),
        (State.FINISHED, True, True, False, (R.START, P.PROVISIONED, L.PASSED_END_TIME, False)),
        (State.FINISHED, True, True, True, (R.START, P.PROVISIONED, L.TERMINATED, False)),
        (State.FAILED, True, True, False, (R.START, P.PROVISIONED, L.FAILED, False)),
    ],
)
def test_each_reservation_state_reads_as_nsi_states(
    state, provision, committed, terminated, expected
):
    seen = observe(state, provision, committed, terminated)
    assert (seen.reservation, seen.provision, seen.lifecycle, seen.data_plane_active) == expected


def test_the_names_are_the_specifications():
    assert [s.value for s in ReservationState] == [
        "ReserveStart", "ReserveChecking", "ReserveHeld", "ReserveCommitting",
        "ReserveFailed", "ReserveTimeout", "ReserveAborting",
    ]  # fmt: skip
    assert [s.value for s in ProvisionState] == [
        "Released", "Provisioning", "Provisioned", "Releasing",
    ]  # fmt: skip
    assert [s.value for s in LifecycleState] == [
        "Created", "Failed", "PassedEndTime", "Terminating", "Terminated",
    ]  # fmt: skip
