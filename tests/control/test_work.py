"""Which job a reservation's state makes due: one kind at most, at any instant."""

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from longhaul.control.lifecycle import State
from longhaul.control.work import (
    CHANGE_EXPIRED,
    END,
    HOLD_EXPIRED,
    JOBS,
    MISSED,
    PASSED,
    PROVISION,
    RELEASE,
    Timing,
    due_job,
)

START = datetime(2030, 1, 7, 9, tzinfo=UTC)
END_AT = START + timedelta(hours=2)
BEFORE, DURING, AFTER = START - timedelta(seconds=1), START + timedelta(hours=1), END_AT


@pytest.mark.parametrize(
    ("state", "now", "job"),
    [
        (State.SCHEDULED, BEFORE, None),
        (State.SCHEDULED, START, PROVISION),
        (State.SCHEDULED, DURING, PROVISION),
        (State.SCHEDULED, AFTER, MISSED),
        (State.PROVISIONING, DURING, PROVISION),  # a crash mid-provisioning: taken up again
        (State.PROVISIONING, AFTER, END),
        (State.ACTIVE, DURING, None),
        (State.ACTIVE, AFTER, RELEASE),
        (State.RELEASING, DURING, RELEASE),  # a cancel, or a crash mid-release
        (State.RELEASING, AFTER, RELEASE),
        (State.FAILED, DURING, None),
        (State.FINISHED, AFTER, None),
        (State.CANCELLED, DURING, None),
    ],
)
def test_the_state_and_the_clock_choose_the_job(state, now, job):
    assert due_job(Timing(state, START, END_AT), now) is job


HOLD_ENDS = START - timedelta(minutes=10)


@pytest.mark.parametrize(
    ("state", "provision", "now", "job"),
    [
        (State.HELD, True, HOLD_ENDS - timedelta(seconds=1), None),
        (State.HELD, True, HOLD_ENDS, HOLD_EXPIRED),
        (State.HELD, True, DURING, HOLD_EXPIRED),  # never started while only held
        (State.EXPIRED, True, DURING, None),  # waits for the requester's abort
        # An NSI connection not (or no longer) asked up: nothing starts; its end passes.
        (State.SCHEDULED, False, DURING, None),
        (State.SCHEDULED, False, AFTER, PASSED),
        (State.RELEASING, False, DURING, RELEASE),
        (State.ACTIVE, False, DURING, None),  # the release request moves it, not the clock
    ],
)
def test_holds_and_circuits_not_asked_up(state, provision, now, job):
    timing = Timing(state, START, END_AT, held_until=HOLD_ENDS, provision=provision)
    assert due_job(timing, now) is job


@given(
    state=st.sampled_from(State),
    length_s=st.integers(1, 10**6),
    now_s=st.integers(-(10**6), 2 * 10**6),
    hold_s=st.none() | st.integers(-(10**6), 10**6),
    provision=st.booleans(),
)
def test_never_two_kinds_of_job_at_once(state, length_s, now_s, hold_s, provision):
    end = START + timedelta(seconds=length_s)
    now = START + timedelta(seconds=now_s)
    held_until = None if hold_s is None else START + timedelta(seconds=hold_s)
    timing = Timing(state, START, end, held_until, provision)
    assert sum(job.is_due(timing, now) for job in JOBS) <= 1


def test_only_jobs_that_touch_no_circuit_make_no_driver_call():
    assert [job for job in JOBS if not job.calls_driver] == [MISSED, HOLD_EXPIRED, PASSED]


@pytest.mark.parametrize("state", [State.SCHEDULED, State.PROVISIONING, State.ACTIVE])
def test_a_held_change_whose_hold_ended_is_settled_before_anything_else(state):
    timing = Timing(state, START, END_AT, held_until=BEFORE, provision=True, change_held=True)
    assert due_job(timing, AFTER) is CHANGE_EXPIRED
    earlier = BEFORE - timedelta(seconds=1)  # before the hold ends: the usual job, if any
    assert due_job(timing, earlier) is due_job(replace(timing, change_held=False), earlier)
    assert CHANGE_EXPIRED not in JOBS  # it moves no state: outside the one-at-a-time table
