"""`longhaul campaign schedule`, `schedules` and `unschedule` as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path

PINGS = Path(__file__).parents[1] / "measure" / "fixtures" / "campaigns" / "pings.toml"
"""Five pings over the 0.2-mile loop."""


def test_the_cli_schedules_lists_and_cancels(cli, tmp_path):
    db = str(tmp_path / "s.db")
    made = cli("campaign", "schedule", str(PINGS), "--every", "6h", "--db", db,
               "--start", "2030-01-07T09:00Z")  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert "schedule 1: pings every 6:00:00, first round at 2030-01-07 09:00 UTC" in made.stdout
    listed = json.loads(cli("campaign", "schedules", "--db", db, "--json").stdout)
    assert [(s["name"], s["every_s"], s["state"]) for s in listed] == [("pings", 21600, "active")]
    assert cli("campaign", "unschedule", "1", "--db", db).returncode == 0
    simulated = tmp_path / "sim.toml"
    simulated.write_text(
        'name = "s"\n[connections]\nloops_miles = [0.2]\n[[tests]]\n'
        'test = "tcp_throughput"\ntool = "sim"\ncc = ["bic"]\n'
    )
    refused = cli("campaign", "schedule", str(simulated), "--every", "6h", "--db", db)
    assert refused.returncode == 2 and "books its own loops" in refused.stderr
