"""Fixtures for the control plane (`db_url`, SQLite and PostgreSQL, is in tests/conftest.py)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from longhaul.control.db import User
from longhaul.control.drivers import Circuit, CircuitStatus, DriverError, LogDriver
from longhaul.control.jobs import JobRunner
from longhaul.control.service import Service
from longhaul.db import Database, migrate
from longhaul.topology import usn

T0 = datetime(2030, 1, 7, 8, 0, tzinfo=UTC)


class Clock:
    """A clock the test moves by hand."""

    def __init__(self, now: datetime = T0) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> datetime:
        self.now += timedelta(**delta)
        return self.now


def settle(runner: JobRunner) -> None:
    """Run what is due until nothing more is (a job may make the next one due)."""
    for _ in range(20):
        started = runner.run_due()
        if not started:
            return
        for future in started:
            future.result(timeout=30)
    raise AssertionError("jobs kept coming")


@pytest.fixture
def clock() -> Clock:
    return Clock()


@dataclass
class Account:
    user: User
    token: str


@pytest.fixture
def service(db_url: str, tmp_path: Path, clock: Clock) -> Iterator[Service]:
    db = Database(db_url)
    migrate(db.engine)
    topology = usn()
    yield Service(db, topology, LogDriver(topology, tmp_path / "driver.jsonl"), clock=clock)
    db.dispose()


@pytest.fixture
def alice(service: Service) -> Account:
    return Account(*service.accounts.add("alice"))


@pytest.fixture
def bob(service: Service) -> Account:
    return Account(*service.accounts.add("bob"))


@pytest.fixture
def admin(service: Service) -> Account:
    return Account(*service.accounts.add("root", admin=True))


@dataclass
class FlakyDriver:
    """The log driver, failing (or hanging) when told to."""

    inner: LogDriver
    name: str = "flaky"
    fail_provision: int = 0
    fail_release: int = 0
    fail_modify: int = 0
    hang_s: float = 0.0
    calls: list[tuple[str, int]] = field(default_factory=list)

    def provision(self, circuit: Circuit) -> None:
        self.calls.append(("provision", circuit.reservation_id))
        if self.hang_s:
            time.sleep(self.hang_s)
        if self.fail_provision:
            self.fail_provision -= 1
            raise DriverError("port 1/1 is down")
        self.inner.provision(circuit)

    def modify(self, circuit: Circuit, previous: Circuit) -> None:
        self.calls.append(("modify", circuit.reservation_id))
        if self.fail_modify:
            self.fail_modify -= 1
            raise DriverError("switch busy")
        self.inner.modify(circuit, previous)

    def release(self, circuit: Circuit) -> None:
        self.calls.append(("release", circuit.reservation_id))
        if self.fail_release:
            self.fail_release -= 1
            raise DriverError("session lost")
        self.inner.release(circuit)

    def status(self, circuit: Circuit) -> CircuitStatus:
        return self.inner.status(circuit)

    def close(self) -> None:
        self.inner.close()


@pytest.fixture
def driver(service):
    flaky = FlakyDriver(service.driver)
    service.driver = flaky
    return flaky
