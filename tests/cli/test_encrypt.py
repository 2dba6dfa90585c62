"""`longhaul encrypt` on a real emulated circuit: on (with the hosts' MTU, and a warning
when a sealed packet would not fit), its counters, off; bad settings are clear errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys

COMMAND = [sys.executable, "-c", "from longhaul.cli import main; main()"]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    # The testbed fixture sets its own state directory and prefix in the environment.
    return subprocess.run([*COMMAND, "encrypt", *args], capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "200"}, timeout=60, check=False)  # fmt: skip


def test_on_status_and_off_on_a_circuit(testbed, tmp_path):
    [circuit] = testbed.up([1400], rate_bps=1_000_000_000)
    number = str(circuit.number)
    unaligned = _run("--circuit", number, "--host-mtu", "9000")
    assert unaligned.returncode == 0, unaligned.stderr
    assert "encrypted, line MTU 9,000, hosts' MTU 9,000" in unaligned.stdout
    assert "--host-mtu 8952" in unaligned.stderr  # 9,048 bytes sealed will not fit
    secret = tmp_path / "secret"
    secret.write_bytes(os.urandom(32))
    aligned = _run("--circuit", number, "--host-mtu", "8950", "--secret-file", str(secret))
    assert aligned.returncode == 0 and aligned.stderr == "", aligned.stderr
    status = _run("--circuit", number, "--status", "--json")
    counters = json.loads(status.stdout)
    assert set(counters) >= {"a_to_b", "b_to_a", "mtu_bytes"}
    assert counters["oversize"] == "fragment"
    off = _run("--circuit", number, "--off")
    assert off.returncode == 0 and "encryptors off" in off.stdout, off.stderr
    assert "sealed frames" in off.stdout
    after = _run("--circuit", number, "--status")
    assert "is not encrypted" in after.stdout


def test_bad_settings_are_clear_errors(testbed):
    [circuit] = testbed.up([1400], rate_bps=1_000_000_000)
    bad = _run("--circuit", str(circuit.number), "--oversize", "squeeze")
    assert bad.returncode == 2 and "fragment or drop" in bad.stderr
    small = _run("--circuit", str(circuit.number), "--mtu", "600")
    assert small.returncode == 1 and "below 1280" in small.stderr
    none = _run("--status")
    assert none.returncode == 2 and "say which channel" in none.stderr
