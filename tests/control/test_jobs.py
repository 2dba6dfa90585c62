"""The job runner, driven by hand: the clock moves and the test runs what is due."""

import threading
import time
from datetime import datetime, timedelta

import pytest

from longhaul.control.drivers import CircuitStatus
from longhaul.control.errors import ConflictError
from longhaul.control.jobs import Doorbell, JobRunner
from longhaul.control.lifecycle import State
from longhaul.control.requests import ReservationChange, ReservationRequest
from longhaul.control.transitions import circuit_of
from longhaul.control.work import PROVISION

from .conftest import T0, settle

HOUR = timedelta(hours=1)
SECOND = timedelta(seconds=1)


@pytest.fixture
def runner(service, driver):
    runner = JobRunner(service, call_timeout_s=2)
    yield runner
    runner.stop()


def book(service, account, start=T0 + HOUR, hours=2, mbps=1000):
    return service.create(
        account.user,
        ReservationRequest(
            src="ORNL", dst="SUNNYVALE", bandwidth_mbps=mbps, start=start, duration=hours * HOUR
        ),
    )


def path_of_states(service, account, reservation_id):
    return [c.to_state for c in service.history(account.user, reservation_id)]


def test_provisioned_at_the_start_and_released_at_the_end(service, runner, driver, alice, clock):
    made = book(service, alice)
    settle(runner)
    assert service.get(alice.user, made.id).state == State.SCHEDULED
    clock.advance(hours=1)
    settle(runner)
    assert service.get(alice.user, made.id).state == State.ACTIVE
    assert driver.inner.status(circuit_of(service.topology, made)) is CircuitStatus.UP
    clock.advance(hours=2)
    settle(runner)
    assert service.get(alice.user, made.id).state == State.FINISHED
    assert driver.calls == [("provision", made.id), ("release", made.id)]
    assert path_of_states(service, alice, made.id) == [
        "requested", "scheduled", "provisioning", "active", "releasing", "finished",
    ]  # fmt: skip
    actors = {c.actor for c in service.history(alice.user, made.id)[2:]}
    assert actors == {"scheduler"}


def test_next_due_is_the_next_start_or_end(service, runner, alice, clock):
    made = book(service, alice)
    assert service.work.next_due(clock.now) == made.start
    clock.advance(hours=1)
    settle(runner)
    assert service.work.next_due(clock.now) == made.end


def test_cancelling_an_active_reservation_tears_it_down_and_ends_cancelled(
    service, runner, driver, alice, clock
):
    made = book(service, alice)
    clock.advance(hours=1)
    settle(runner)
    assert service.cancel(alice.user, made.id).state == State.RELEASING
    settle(runner)
    assert service.get(alice.user, made.id).state == State.CANCELLED
    assert driver.calls[-1] == ("release", made.id)


def test_a_failed_provision_can_be_retried(service, runner, driver, alice, clock):
    driver.fail_provision = 1
    made = book(service, alice)
    clock.advance(hours=1)
    settle(runner)
    failed = service.get(alice.user, made.id)
    assert failed.state == State.FAILED
    assert (
        "the flaky driver failed: port 1/1 is down"
        in service.history(alice.user, made.id)[-1].reason
    )
    assert service.retry(alice.user, made.id).state == State.PROVISIONING
    settle(runner)
    assert service.get(alice.user, made.id).state == State.ACTIVE


def test_a_failed_release_can_be_retried_or_cleared(service, runner, driver, alice, admin, clock):
    driver.fail_release = 2
    made = book(service, alice)
    clock.advance(hours=1)
    settle(runner)
    clock.advance(hours=2)
    settle(runner)
    assert service.get(alice.user, made.id).state == State.FAILED
    service.retry(alice.user, made.id)
    settle(runner)
    assert service.get(alice.user, made.id).state == State.FAILED
    assert service.clear(admin.user, made.id).state == State.CANCELLED


def test_a_failed_reservation_still_holds_its_bandwidth_until_cleared(
    service, runner, driver, alice, admin, clock
):
    driver.fail_provision = 1
    made = book(service, alice, mbps=9600)
    book(service, alice, mbps=9600)
    clock.advance(hours=1)
    settle(runner)
    assert service.get(alice.user, made.id).state == State.FAILED
    with pytest.raises(Exception, match="not free"):
        book(service, alice, start=clock.now, hours=1, mbps=150)
    service.clear(admin.user, made.id)
    book(service, alice, start=clock.now, hours=1, mbps=150)


def test_a_hung_driver_call_fails_instead_of_provisioning_forever(
    service, runner, driver, alice, clock
):
    driver.hang_s = 3.0  # the runner gives up after 2 s
    made = book(service, alice)
    clock.advance(hours=1)
    settle(runner)
    assert service.get(alice.user, made.id).state == State.FAILED
    assert "did not answer within 2 s" in service.history(alice.user, made.id)[-1].reason


def test_modifying_an_active_circuit_changes_it_in_the_network_or_not_at_all(
    service, runner, driver, alice, clock
):
    made = book(service, alice)
    clock.advance(hours=1)
    settle(runner)
    before = service.get(alice.user, made.id)
    changes_before = len(service.history(alice.user, made.id))
    driver.fail_modify = 1
    with pytest.raises(Exception, match="the network refused the change"):
        service.modify(alice.user, made.id, ReservationChange(bandwidth_mbps=2000))
    kept = service.get(alice.user, made.id)
    assert (kept.bandwidth_mbps, kept.version) == (1000, before.version)
    assert len(service.history(alice.user, made.id)) == changes_before
    changed = service.modify(
        alice.user, made.id, ReservationChange(bandwidth_mbps=2000, end=made.end + HOUR)
    )
    assert changed.bandwidth_mbps == 2000
    assert driver.calls[-1] == ("modify", made.id)
    clock.advance(hours=2)
    settle(runner)
    assert service.get(alice.user, made.id).state == State.ACTIVE  # the end moved
    clock.advance(hours=1)
    settle(runner)
    assert service.get(alice.user, made.id).state == State.FINISHED


def test_a_releasing_or_ended_reservation_cannot_be_modified(service, runner, alice, clock):
    made = book(service, alice)
    clock.advance(hours=3)
    settle(runner)
    with pytest.raises(ConflictError, match="a failed reservation cannot be modified"):
        service.modify(alice.user, made.id, ReservationChange(bandwidth_mbps=10))


# -- what passed while longhaul was down ---------------------------------------------------------


def test_a_start_passed_while_down_is_provisioned_late(service, runner, alice, clock):
    made = book(service, alice)
    clock.advance(hours=2)  # longhaul was down at the start
    settle(runner)
    assert service.get(alice.user, made.id).state == State.ACTIVE
    assert any("late start" in c.reason for c in service.history(alice.user, made.id))


def test_a_slot_passed_entirely_while_down_fails_and_holds_nothing_after(
    service, runner, alice, clock
):
    made = book(service, alice)
    clock.advance(hours=5)
    settle(runner)
    assert service.get(alice.user, made.id).state == State.FAILED
    assert (
        "its slot passed while longhaul was down" in service.history(alice.user, made.id)[-1].reason
    )
    with pytest.raises(ConflictError, match="its slot has ended"):
        service.retry(alice.user, made.id)


def test_an_end_passed_while_down_is_released(service, runner, driver, alice, clock):
    made = book(service, alice)
    clock.advance(hours=1)
    settle(runner)
    clock.advance(hours=10)
    settle(runner)
    assert service.get(alice.user, made.id).state == State.FINISHED


def test_a_crash_mid_provisioning_is_taken_up_again(service, driver, alice, clock):
    made = book(service, alice)
    clock.advance(hours=1)
    service.work.begin(made.id, PROVISION)  # the process dies right after this commit
    assert service.get(alice.user, made.id).state == State.PROVISIONING
    fresh = JobRunner(service, call_timeout_s=2)
    settle(fresh)
    fresh.stop()
    assert service.get(alice.user, made.id).state == State.ACTIVE


def test_a_cancel_during_provisioning_wins(service, driver, alice, clock):
    """The user cancels while the driver is still setting up: it is torn down after."""
    gate = threading.Event()
    inner = driver.provision

    def slow(circuit):
        gate.wait(10)
        inner(circuit)

    driver.provision = slow
    runner = JobRunner(service, call_timeout_s=20)
    made = book(service, alice)
    clock.advance(hours=1)
    started = runner.run_due()
    deadline = time.monotonic() + 10
    while (
        service.get(alice.user, made.id).state != State.PROVISIONING and time.monotonic() < deadline
    ):
        time.sleep(0.01)
    service.cancel(alice.user, made.id)
    gate.set()
    for future in started:
        future.result(timeout=30)
    settle(runner)
    runner.stop()
    assert service.get(alice.user, made.id).state == State.CANCELLED
    assert [c.to_state for c in service.history(alice.user, made.id)][-2:] == [
        "releasing",
        "cancelled",
    ]


def test_the_runner_thread_wakes_for_new_work(service, alice, clock, driver):
    runner = JobRunner(service, max_sleep_s=30)
    runner.start()
    try:
        made = book(service, alice, start=clock.now, hours=1)
        deadline = time.monotonic() + 10
        while (
            service.get(alice.user, made.id).state != State.ACTIVE and time.monotonic() < deadline
        ):
            time.sleep(0.02)
        assert service.get(alice.user, made.id).state == State.ACTIVE
    finally:
        runner.stop()


def test_a_doorbell_carries_when_work_falls_due_to_the_leader(tmp_path):
    rings = []
    heard = threading.Event()

    def on_ring(due_at):
        rings.append(due_at)
        heard.set()

    leader = Doorbell(tmp_path / "jobs.sock", on_ring)
    other = Doorbell(tmp_path / "jobs.sock", on_ring)
    other.ring(T0)  # nobody listens yet: dropped, no error
    leader.listen()
    for due_at in (T0 + HOUR, None):
        heard.clear()
        other.ring(due_at)
        assert heard.wait(5)
    assert rings == [T0 + HOUR, None]
    leader.close()
    other.close()
    assert not (tmp_path / "jobs.sock").exists()


def test_only_the_leader_runs_jobs_and_hears_the_others(service, driver, tmp_path, clock):
    lock = tmp_path / "jobs.lock"
    first = JobRunner(service, leader_lock=lock)
    second = JobRunner(service, leader_lock=lock)
    try:
        assert first._lead() and not second._lead()
        second.note_here_or_at_leader(T0 + HOUR)  # as a change made in `second` does
        deadline = time.monotonic() + 5
        while first._noted is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert first._noted == T0 + HOUR  # the leader (not running its loop here) noted it
    finally:
        second.stop()
        first.stop()
    # With the leader gone, the other takes over.
    third = JobRunner(service, leader_lock=lock)
    try:
        assert third._lead()
    finally:
        third.stop()


# -- two phases and circuits asked up or not (NSI CS v2) ---------------------------------


def hold(service, account, held_s=120, provision=True, start=T0 + HOUR, mbps=1000):
    return service.create(
        account.user,
        ReservationRequest(
            src="ORNL",
            dst="SUNNYVALE",
            bandwidth_mbps=mbps,
            start=start,
            duration=2 * HOUR,
            hold=timedelta(seconds=held_s),
            provision=provision,
        ),
    )


def free_mbps(service, path=("ornl-chicago-1", "chicago-seattle-1", "seattle-sunnyvale-1")):
    """What is still free during the booked slot along one of ORNL-SUNNYVALE's paths (the
    one every test here is booked on: the first of two alike)."""
    found = service.availability().max_bandwidth(
        "ornl-cdci", "sunnyvale-cdci", T0 + HOUR, T0 + 3 * HOUR, route=path
    )
    return found[0] if found else 0


def test_a_held_reservation_keeps_its_bandwidth_until_committed(service, runner, alice, clock):
    idle = free_mbps(service)
    made = hold(service, alice)
    assert made.state == State.HELD
    assert made.held_until == T0 + timedelta(seconds=120)
    assert free_mbps(service) == idle - 1050  # seven OC-3 granules of 150 Mb/s
    assert service.work.next_due(clock.now) == made.held_until
    committed = service.commit(alice.user, made.id)
    assert committed.state == State.SCHEDULED
    assert committed.held_until is None  # how a commit is told from an abort later
    clock.advance(minutes=5)
    settle(runner)  # past the old hold: nothing times out
    assert service.get(alice.user, made.id).state == State.SCHEDULED
    assert free_mbps(service) == idle - 1050  # seven OC-3 granules of 150 Mb/s


def test_an_uncommitted_hold_times_out_and_gives_its_bandwidth_back(service, runner, alice, clock):
    idle = free_mbps(service)
    made = hold(service, alice, held_s=30)
    clock.advance(seconds=29)
    settle(runner)
    assert service.get(alice.user, made.id).state == State.HELD
    clock.advance(seconds=1)
    settle(runner)
    assert service.get(alice.user, made.id).state == State.EXPIRED
    assert free_mbps(service) == idle
    with pytest.raises(ConflictError, match="timed out"):
        service.commit(alice.user, made.id)
    assert service.get(alice.user, made.id).state == State.CANCELLED
    assert path_of_states(service, alice, made.id) == [
        "requested", "held", "expired", "cancelled",
    ]  # fmt: skip


def test_an_aborted_hold_gives_its_bandwidth_back(service, runner, alice, clock):
    idle = free_mbps(service)
    made = hold(service, alice)
    assert service.abort(alice.user, made.id).state == State.CANCELLED
    assert free_mbps(service) == idle
    with pytest.raises(ConflictError):
        service.abort(alice.user, made.id)
    with pytest.raises(ConflictError):
        service.commit(alice.user, made.id)


def test_a_circuit_not_asked_up_is_never_set_up_and_its_slot_passes(
    service, runner, driver, alice, clock
):
    made = hold(service, alice, provision=False)
    service.commit(alice.user, made.id)
    clock.advance(hours=2)
    settle(runner)
    assert service.get(alice.user, made.id).state == State.SCHEDULED
    clock.advance(hours=1)
    settle(runner)
    assert service.get(alice.user, made.id).state == State.FINISHED
    assert driver.calls == []


def test_provision_and_release_bring_the_circuit_up_and_down_within_the_slot(
    service, runner, driver, alice, clock
):
    made = hold(service, alice, provision=False)
    with pytest.raises(ConflictError, match="commit"):
        service.want_up(alice.user, made.id, True)
    service.commit(alice.user, made.id)
    clock.advance(hours=1, minutes=10)
    settle(runner)
    assert service.get(alice.user, made.id).state == State.SCHEDULED
    service.want_up(alice.user, made.id, True)
    settle(runner)
    assert service.get(alice.user, made.id).state == State.ACTIVE
    assert service.want_up(alice.user, made.id, False).state == State.RELEASING
    settle(runner)
    assert service.get(alice.user, made.id).state == State.SCHEDULED  # down, still reserved
    service.want_up(alice.user, made.id, True)
    settle(runner)
    assert service.get(alice.user, made.id).state == State.ACTIVE
    clock.advance(hours=2)
    settle(runner)
    assert service.get(alice.user, made.id).state == State.FINISHED
    assert driver.calls == [
        ("provision", made.id), ("release", made.id), ("provision", made.id), ("release", made.id)
    ]  # fmt: skip


def test_a_held_change_holds_the_larger_version_until_committed(service, runner, alice, clock):
    idle = free_mbps(service)
    made = book(service, alice, mbps=1000)
    change = ReservationChange(bandwidth_mbps=3000, end=made.end - HOUR)
    held = service.hold_change(alice.user, made.id, change, timedelta(seconds=60))
    assert (held.bandwidth_mbps, held.end) == (1000, made.end)  # still the old version
    assert held.held_until == T0 + timedelta(seconds=60)
    # The larger of both: 3,000 Mb/s (20 granules) in the first hour, 1,050 in the second.
    assert free_mbps(service) == idle - 3000
    with pytest.raises(ConflictError, match="held"):
        service.modify(alice.user, made.id, ReservationChange(bandwidth_mbps=500))
    committed = service.commit(alice.user, made.id)
    assert (committed.bandwidth_mbps, committed.end) == (3000, made.end - HOUR)
    assert committed.held_change is None
    assert free_mbps(service) == idle - 3000
    assert service.availability().max_bandwidth(
        "ornl-cdci", "sunnyvale-cdci", T0 + 2 * HOUR, T0 + 3 * HOUR,
        route=("ornl-chicago-1", "chicago-seattle-1", "seattle-sunnyvale-1"),
    )[0] == idle  # fmt: skip


def test_committing_a_change_tells_the_runner_when_work_may_fall_due(service, alice):
    rung: list[datetime | None] = []
    service.on_change = rung.append
    made = book(service, alice, mbps=1000)
    service.hold_change(alice.user, made.id, ReservationChange(end=made.end - HOUR), HOUR)
    rung.clear()
    service.commit(alice.user, made.id)
    assert rung == [made.end - HOUR]  # the release, an hour sooner


def test_an_aborted_or_timed_out_change_leaves_the_reservation_as_it_was(
    service, runner, alice, clock
):
    idle = free_mbps(service)
    made = book(service, alice, mbps=1000)
    service.hold_change(alice.user, made.id, ReservationChange(bandwidth_mbps=3000), HOUR)
    aborted = service.abort(alice.user, made.id)
    assert (aborted.state, aborted.bandwidth_mbps, aborted.held_change) == (
        State.SCHEDULED, 1000, None,
    )  # fmt: skip
    assert free_mbps(service) == idle - 1050
    service.hold_change(alice.user, made.id, ReservationChange(bandwidth_mbps=3000), 30 * SECOND)
    clock.advance(seconds=30)
    settle(runner)
    timed_out = service.get(alice.user, made.id)
    assert (timed_out.bandwidth_mbps, timed_out.held_change) == (1000, None)
    assert free_mbps(service) == idle - 1050
    reasons = [c.reason for c in service.history(alice.user, made.id)]
    assert "the change held was not committed before its hold timed out" in reasons


def test_committing_a_change_to_an_active_circuit_changes_the_network(
    service, runner, driver, alice, clock
):
    made = book(service, alice, mbps=1000)
    clock.advance(hours=1)
    settle(runner)
    service.hold_change(alice.user, made.id, ReservationChange(bandwidth_mbps=2000), HOUR)
    assert driver.calls == [("provision", made.id)]  # nothing changes while only held
    service.commit(alice.user, made.id)
    assert driver.calls == [("provision", made.id), ("modify", made.id)]


def test_a_change_cannot_be_held_before_the_first_commit(service, alice):
    made = hold(service, alice)
    with pytest.raises(ConflictError, match="no committed version"):
        service.hold_change(alice.user, made.id, ReservationChange(bandwidth_mbps=2), HOUR)
