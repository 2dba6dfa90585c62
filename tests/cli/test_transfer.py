"""`longhaul transfer` over a real emulated circuit: a tree of files lands whole, at the
circuit's rate; a receiver killed mid-transfer is taken up from its verified chunks;
a channel that is not there is a clear error."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np

from longhaul.bench import hurricane as bench


def _longhaul(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from longhaul.cli import main; main()", *args],
        capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "COLUMNS": "100"},
    )  # fmt: skip


def test_a_tree_lands_whole_over_the_circuit(testbed, tmp_path):
    [circuit] = testbed.up([1400], rate_bps=1_000_000_000)
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    rng = np.random.default_rng(3)
    (tree / "a.h5").write_bytes(rng.bytes(20 << 20))
    (tree / "sub" / "b.h5").write_bytes(rng.bytes(3_000_001))
    dest = tmp_path / "dest"
    done = _longhaul("transfer", str(tree), "--dest", str(dest), "--circuit",
                     str(circuit.number), "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["bytes"] == (20 << 20) + 3_000_001
    assert (dest / "a.h5").read_bytes() == (tree / "a.h5").read_bytes()
    assert (dest / "sub" / "b.h5").read_bytes() == (tree / "sub" / "b.h5").read_bytes()
    assert sorted(p.name for p in dest.rglob("*")) == ["a.h5", "b.h5", "sub"]
    # The WAN-PHY loop carries at most 1 Gb/s of line: never more than that of payload.
    assert report["goodput_gbps"] <= 1.0


def test_a_killed_receiver_is_taken_up_where_it_stopped(testbed, tmp_path):
    [circuit] = testbed.up([1400], rate_bps=1_000_000_000)
    source = tmp_path / "source.bin"
    source.write_bytes(np.random.default_rng(4).bytes(256 << 20))
    outcome = bench._killed_and_resumed(circuit, source, tmp_path / "in")
    assert outcome == "resumed"


def test_a_channel_that_is_not_there_is_a_clear_error(testbed_env, tmp_path):
    done = _longhaul("transfer", str(tmp_path), "--dest", "/tmp/x", "--reservation", "999")
    assert done.returncode != 0
    assert "reservation 999 has no circuit on this testbed" in done.stderr
    both = _longhaul("transfer", str(tmp_path), "--dest", "/tmp/x")
    assert "--reservation N" in both.stderr
