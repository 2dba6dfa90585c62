"""Fixtures shared by every part of the suite: each test that asks for `db_url` runs on
SQLite and on a real PostgreSQL (a throw-away cluster, started once per session and
removed after)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from longhaul.db.throwaway import ThrowawayPostgres


@pytest.fixture(scope="session")
def postgres() -> Iterator[ThrowawayPostgres]:
    with ThrowawayPostgres() as cluster:
        yield cluster


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/longhaul.db"
    cluster: ThrowawayPostgres = request.getfixturevalue("postgres")
    return cluster.create_database(f"test_{uuid.uuid4().hex[:12]}")
