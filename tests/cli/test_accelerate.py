"""`longhaul accelerate` on a real emulated circuit: files sent through it land byte-exact
and its counters say what it did; bad forwards and a missing channel are clear errors."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from longhaul.measure import payloads
from longhaul.measure.tools import accelerator

COMMAND = [sys.executable, "-c", "from longhaul.cli import main; main()"]


def _env() -> dict[str, str]:
    """Read when run: the testbed fixture sets its own state directory and prefix."""
    return {**os.environ, "COLUMNS": "200"}


def test_files_cross_the_accelerated_circuit_byte_exact(testbed, tmp_path):
    [circuit] = testbed.up([1400], rate_bps=1_000_000_000)
    source = payloads.write("hdf", tmp_path / "hdf", 16 << 20)
    running = subprocess.Popen([*COMMAND, "accelerate", "--circuit", str(circuit.number),
                                "--forward", f"6000={accelerator.SINK_PORT}"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=_env())  # fmt: skip
    try:
        assert running.stdout is not None
        said = running.stdout.readline()
        assert "connect to 127.0.0.1:6000" in said, said + (running.stderr.read() if
                                                           running.poll() is not None else "")  # fmt: skip
        for _ in range(2):
            moved = accelerator.transfer(circuit.src_ns, circuit.dst_ns, circuit.dst_addr, source,
                                         2, 8 << 20, connect_to="127.0.0.1:6000", timeout_s=60)  # fmt: skip
            assert moved.intact and moved.bytes == 16 << 20
    finally:
        running.send_signal(signal.SIGTERM)
        out, err = running.communicate(timeout=30)
    assert running.returncode == 0, err
    # The second copy crossed as references to the first.
    assert "carried 33,554,432 bytes" in out and "as cache references" in out, out


def test_a_bad_forward_or_no_channel_is_a_clear_error():
    bad = subprocess.run([*COMMAND, "accelerate", "--forward", "http", "--circuit", "1"],
                         capture_output=True, text=True, env=_env(), timeout=60, check=False)  # fmt: skip
    assert bad.returncode == 2 and "NEAR_PORT=SERVER_PORT" in bad.stderr
    none = subprocess.run([*COMMAND, "accelerate", "--forward", "80"], capture_output=True,
                          text=True, env=_env(), timeout=60, check=False)  # fmt: skip
    assert none.returncode == 2 and "say which channel" in none.stderr


def test_every_feature_is_byte_exact_over_a_lossy_reordering_circuit(testbed, tmp_path):
    """1 Gb/s over 26.7 ms with 1e-3 random loss and 1 % of frames delivered after the
    next: the session's TCP recovers what the line drops and puts back in order what it
    swaps; what reaches the sink is what was sent, stream by stream."""
    from pathlib import Path  # noqa: PLC0415

    from longhaul.bench import wan  # noqa: PLC0415
    from longhaul.testbed import emulator  # noqa: PLC0415

    source = payloads.write("hdf", tmp_path / "hdf", 8 << 20)
    with wan.circuit_for(testbed, wan.Case(1.0, 26.7, "accelerator", loss=1e-3)) as circuit:
        emulator.request(Path(circuit.control), {"op": "set", "faults": {"reorder": 0.01}})
        for features in ("tfo", "tfo+dre", "tfo+dre+lz"):
            with accelerator.Pair(circuit.src_ns, circuit.dst_ns, circuit.dst_addr, features,
                                  16 << 20) as pair:  # fmt: skip
                for _ in range(2):
                    moved = accelerator.transfer(circuit.src_ns, circuit.dst_ns,
                                                 circuit.dst_addr, source, 2, 4 << 20,
                                                 connect_to=pair.address, timeout_s=60)  # fmt: skip
                    assert moved.intact and moved.bytes == 8 << 20, features
            assert pair.reports["near"]["streams_reset"] == 0
        stats = emulator.request(Path(circuit.control), {"op": "stats"})
        assert stats["a_to_b"]["reordered"] > 0
