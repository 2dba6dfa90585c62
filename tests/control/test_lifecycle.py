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
    assert set(State) == HOLDS_BANDWIDTH | ENDED


def test_every_state_but_the_ended_can_be_cancelled_or_is_being_released():
    for state in set(State) - ENDED - {State.RELEASING}:
        assert (state, Event.CANCEL) in TRANSITIONS, state


def test_the_happy_path():
    state = State.REQUESTED
    for event in (Event.ADMIT, Event.START, Event.PROVISIONED, Event.END, Event.RELEASED):
        state = next_state(state, event)
    assert state is State.FINISHED
