"""`longhaul campaign run` when a tool fails: the run is stored as failed, the command
names it with the tool's message and exits 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

RECORDED = Path(__file__).parents[1] / "measure" / "fixtures" / "ping" / "network-unreachable.txt"
PINGS = Path(__file__).parents[1] / "measure" / "fixtures" / "campaigns" / "pings.toml"
"""Five pings over the 0.2-mile loop."""


def test_a_failed_tool_run_is_named_and_the_command_exits_2(tmp_path, testbed, testbed_env):
    # ping here replays what the real one printed with no route to its target.
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "ping").write_text(f"#!/bin/sh\ncat {RECORDED}\nexit 2\n")
    (fake / "ping").chmod(0o755)
    env = {**os.environ, **testbed_env, "LONGHAUL_HOME": str(tmp_path / "home"),
           "PATH": f"{fake}:{os.environ['PATH']}", "COLUMNS": "200"}  # fmt: skip
    db = str(tmp_path / "r.db")
    result = subprocess.run(
        [sys.executable, "-m", "longhaul", "campaign", "run", str(PINGS), "--db", db],
        capture_output=True, text=True, timeout=300, check=False, env=env,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert (
        "failed: rtt on loop 0.2 mi, repetition 1: not ping's output: ping: connect: Network is unreachable"
        in result.stderr
    )
    assert "1 run(s) failed and are stored without a measurement" in result.stderr
    assert "pings: 1 run(s) stored" in result.stdout
    assert testbed.circuits() == []
