"""Recurring campaigns: kept in the database, due when their time comes, rounds counted,
missed rounds skipped, cancellable; and one real round, booked through a running
reservation service on the emulated testbed."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from longhaul.db import Database, migrate
from longhaul.errors import InputError
from longhaul.measure.schedules import Schedules

from ..control.live import LiveServer

T0 = datetime(2030, 1, 7, 9, tzinfo=UTC)
PINGS = Path(__file__).parent / "fixtures" / "campaigns" / "pings.toml"
"""Five pings over the 0.2-mile loop."""


@pytest.fixture
def schedules(db_url):
    db = Database(db_url)
    migrate(db.engine)
    yield Schedules(db)
    db.dispose()


def test_a_schedule_falls_due_counts_its_rounds_and_skips_what_it_missed(schedules):
    made = schedules.add("study", "name = 'study'", timedelta(hours=6), T0)
    assert made.next_campaign == "study-round-1"
    assert schedules.due(T0 - timedelta(seconds=1)) == []
    assert [s.id for s in schedules.due(T0)] == [made.id]
    # The scheduler was down for a day: the next round is the first one still ahead.
    after = schedules.finished_round(made.id, "round 1: 3 run(s)", T0 + timedelta(hours=25))
    assert after.rounds == 1 and after.next_at == T0 + timedelta(hours=30)
    assert after.next_campaign == "study-round-2" and after.last_note == "round 1: 3 run(s)"
    gone = schedules.cancel(made.id)
    assert gone.state == "cancelled" and schedules.due(T0 + timedelta(days=9)) == []
    assert [s.state for s in schedules.all()] == ["cancelled"]


def test_bad_schedules_are_refused(schedules):
    with pytest.raises(InputError, match="at least 0:01:00"):
        schedules.add("study", "", timedelta(seconds=5), T0)
    with pytest.raises(InputError, match="no schedule 9"):
        schedules.cancel(9)


def test_a_round_books_its_loop_runs_stores_and_reports(tmp_path, testbed):
    with LiveServer(tmp_path, None, "--driver", "emulated") as server:
        token = server.add_user("scheduler")
        env = {"LONGHAUL_TOKEN": token, "LONGHAUL_HOME": str(tmp_path / "home")}
        server.cli("campaign", "schedule", str(PINGS), "--every", "1h", env=env)
        ran = server.cli("campaign", "scheduler", "--once", env=env, check=False)
        assert ran.returncode == 0, ran.stderr
        [after] = json.loads(server.cli("campaign", "schedules", "--json", env=env).stdout)
        assert after["rounds"] == 1 and "1 run(s) stored as 'pings-round-1'" in after["last_note"]
        assert datetime.fromisoformat(after["next_at"]) > datetime.now(UTC)
        rows = json.loads(server.cli("results", "list", "--json", env=env).stdout)
        assert [(r["name"], r["rows"]) for r in rows] == [("pings-round-1", 1)]
        booked = server.cli("reservations", env=env).stdout
        assert "longhaul schedule 1: pings-round-1" in booked or "cancelled" in booked
        assert testbed.circuits() == [], "the round's circuit went with its reservation"
        assert list(
            (tmp_path / "home" / "schedules" / "reports" / "pings-round-1").glob("index.html")
        )
