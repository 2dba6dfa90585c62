"""The lifecycle table."""

import pytest

from longhaul.control.lifecycle import (
    ENDED,
    HOLDS_BANDWIDTH,
    TRANSITIONS,
    Event,
    State,
    TransitionError,
    next_state,
)


@pytest.mark.parametrize(("key", "target"), list(TRANSITIONS.items()))
def test_every_row_of_the_table_is_a_transition(key, target):
    assert next_state(*key) is target


def test_everything_else_is_refused_naming_what_is_allowed():
    for state in State:
        for event in Event:
            if (state, event) in TRANSITIONS:
                continue
            with pytest.raises(TransitionError) as caught:
                next_state(state, event)
            assert f"a {state.value} reservation cannot {event.value}" in str(caught.value)


def test_ended_states_go_nowhere_and_hold_nothing():
    assert not any(state in ENDED for state, _ in TRANSITIONS)
    assert not HOLDS_BANDWIDTH & ENDED
    # An expired hold alone neither holds bandwidth nor has ended: it waits for an abort.
    assert set(State) == HOLDS_BANDWIDTH | ENDED | {State.EXPIRED}


def test_every_state_but_the_ended_can_be_cancelled_or_is_being_released():
    for state in set(State) - ENDED - {State.RELEASING}:
        assert (state, Event.CANCEL) in TRANSITIONS, state


def test_the_happy_path():
    state = State.REQUESTED
    for event in (Event.ADMIT, Event.START, Event.PROVISIONED, Event.END, Event.RELEASED):
        state = next_state(state, event)
    assert state is State.FINISHED


def test_the_two_phase_paths():
    held = next_state(State.REQUESTED, Event.HOLD)
    assert held in HOLDS_BANDWIDTH
    assert next_state(held, Event.COMMIT) is State.SCHEDULED
    assert next_state(held, Event.ABORT) is State.CANCELLED
    expired = next_state(held, Event.HOLD_EXPIRED)
    assert expired not in HOLDS_BANDWIDTH
    # A commit that comes too late fails and leaves nothing: reserveCommitFailed.
    assert next_state(expired, Event.COMMIT) is State.CANCELLED


def test_a_released_circuit_keeps_its_reservation():
    state = next_state(State.ACTIVE, Event.RELEASE)
    assert next_state(state, Event.RELEASED_IDLE) is State.SCHEDULED
