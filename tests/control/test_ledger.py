"""The bookings kept in memory stay exactly what the database holds."""

import contextlib
import random
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from longhaul.control.drivers import DriverError, LogDriver
from longhaul.control.errors import ConflictError, NetworkError, UnavailableError
from longhaul.control.ledger import BookingLedger
from longhaul.control.requests import ReservationChange, ReservationRequest
from longhaul.control.service import Service
from longhaul.control.work import PROVISION
from longhaul.db import Database
from longhaul.errors import InputError
from longhaul.topology import usn

from .conftest import T0

HOUR = timedelta(hours=1)
LINKS = list(usn().links)


def fresh(service):
    """What a process that keeps nothing in memory would compute."""
    with service.db.read() as session:
        return BookingLedger(usn())._load(session, 0).avail


def same(a, b):
    window = (T0 - HOUR, T0 + 48 * HOUR)
    return all(a.free_steps(link, *window) == b.free_steps(link, *window) for link in LINKS)


def request(mbps=9600, start=T0 + HOUR, src="ORNL", dst="CHICAGO"):
    return ReservationRequest(src=src, dst=dst, bandwidth_mbps=mbps, start=start, duration=2 * HOUR)


def test_another_process_sees_what_this_one_booked(service, alice, tmp_path, clock):
    other = Service(
        Database(service.db.url), usn(), LogDriver(usn(), tmp_path / "other.jsonl"), clock=clock
    )
    assert (
        other.availability()
        .max_bandwidth("ORNL", "CHICAGO", T0 + HOUR, T0 + 2 * HOUR)
        .bandwidth_mbps
        == 9600
    )
    service.create(alice.user, request())
    service.create(alice.user, request())
    # `other` has a copy from before; the generation tells it the copy is stale.
    with pytest.raises(UnavailableError):
        other.create(alice.user, request(mbps=150))
    assert (
        other.availability()
        .max_bandwidth("ORNL", "CHICAGO", T0 + HOUR, T0 + 2 * HOUR)
        .bandwidth_mbps
        == 0
    )
    other.db.dispose()


def test_two_processes_writing_in_turn_stay_in_step(service, alice, tmp_path, clock):
    other = Service(
        Database(service.db.url), usn(), LogDriver(usn(), tmp_path / "other.jsonl"), clock=clock
    )
    full_loads = {id(service): 0, id(other): 0}
    for process in (service, other):
        load = process.ledger._load

        def counted(session, generation, load=load, process=process):
            full_loads[id(process)] += 1
            return load(session, generation)

        process.ledger._load = counted
    made = []
    for k in range(12):
        writer = service if k % 2 else other
        start = T0 + (1 + k % 4) * HOUR
        with contextlib.suppress(UnavailableError):
            made.append(writer.create(alice.user, request(mbps=4800, start=start)).id)
        if k % 3 == 2:
            (other if k % 2 else service).cancel(alice.user, made.pop(0))
        for process in (service, other):
            assert same(process.availability(), fresh(service))
    # Each read everything once, then caught up by reading only what the other changed.
    assert full_loads == {id(service): 1, id(other): 1}
    other.db.dispose()


def test_a_rolled_back_change_never_reaches_the_copy(service, alice, clock):
    made = service.create(alice.user, request(mbps=1000))
    clock.advance(hours=1)
    service.work.begin(made.id, PROVISION)
    service.work.finish(made.id, PROVISION, None)

    class Refusing(LogDriver):
        def modify(self, circuit, previous):
            raise DriverError("no")

    service.driver = Refusing(usn(), service.driver.log_file)
    before = service.availability()
    with pytest.raises(NetworkError):
        service.modify(alice.user, made.id, ReservationChange(bandwidth_mbps=9000))
    assert same(service.availability(), before)
    assert same(service.availability(), fresh(service))


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 10_000))
def test_after_any_mix_of_changes_the_copy_is_the_database(service, alice, seed):
    rng = random.Random(seed)
    made = []
    for _ in range(25):
        roll = rng.random()
        try:
            if made and roll < 0.2:
                service.cancel(alice.user, rng.choice(made))
            elif made and roll < 0.4:
                change = ReservationChange(
                    bandwidth_mbps=rng.choice([150, 3000, 9600]), end=T0 + rng.randint(3, 8) * HOUR
                )
                service.modify(alice.user, rng.choice(made), change)
            else:
                start = T0 + rng.randint(1, 6) * HOUR
                src, dst = rng.sample(["ORNL", "CHICAGO", "SEATTLE", "SUNNYVALE"], 2)
                made.append(
                    service.create(
                        alice.user, request(rng.choice([150, 4800, 9600]), start, src, dst)
                    ).id
                )
        except (UnavailableError, ConflictError, InputError):
            pass  # refused, and so changes nothing
        assert same(service.availability(), fresh(service))
