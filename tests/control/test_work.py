"""Which job a reservation's state makes due: one kind at most, at any instant."""

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from longhaul.control.lifecycle import State
from longhaul.control.work import END, JOBS, MISSED, PROVISION, RELEASE, due_job

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
    assert due_job(state, START, END_AT, now) is job


@given(
    state=st.sampled_from(State),
    length_s=st.integers(1, 10**6),
    now_s=st.integers(-(10**6), 2 * 10**6),
)
def test_never_two_kinds_of_job_at_once(state, length_s, now_s):
    end = START + timedelta(seconds=length_s)
    now = START + timedelta(seconds=now_s)
    assert sum(job.is_due(state, START, end, now) for job in JOBS) <= 1


def test_only_a_missed_slot_makes_no_driver_call():
    assert [job for job in JOBS if not job.calls_driver] == [MISSED]
