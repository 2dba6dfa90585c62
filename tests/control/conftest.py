"""Fixtures for the control plane (`db_url`, SQLite and PostgreSQL, is in tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from longhaul.control.db import User
from longhaul.control.drivers import LogDriver
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
