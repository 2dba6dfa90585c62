"""`longhaul sim rdma`: the RDMA LAN report, written from the real simulator."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from longhaul.report.rdma import write_rdma_report

FIGURES = (
    "rdma-latency-user",
    "rdma-bandwidth-user",
    "rdma-latency-mpi",
    "rdma-bandwidth-mpi",
    "rdma-bothway-mpi",
    "rdma-connections",
    "rdma-logp",
    "rdma-reuse",
    "rdma-queue",
    "rdma-wan",
)


def test_the_report_draws_every_sweep_and_explains_it(tmp_path: Path):
    page = write_rdma_report(tmp_path / "rdma").read_text()
    for name in FIGURES:
        assert f'id="{name}"' in page
        assert (tmp_path / "rdma" / f"{name}.png").is_file()
    # Captions name the mechanism, with this run's numbers.
    assert "cache" in page and "MemFree" in page
    assert "pinned" in page and "translation table" in page
    assert "firmware" in page and "ns per entry" in page
    assert "window / RTT" in page
    assert "29 of 29 figures within their rule" in page


def test_the_command_prints_the_side_by_side_table_and_the_json(tmp_path: Path):
    env = {**os.environ, "COLUMNS": "120"}
    out = tmp_path / "report"
    shown = subprocess.run(
        [sys.executable, "-m", "longhaul", "sim", "rdma", "--out", str(out)],
        capture_output=True, text=True, timeout=300, check=False, env=env,
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert "iWARP (NetEffect NE010e)" in shown.stdout and "128 KiB" in shown.stdout
    assert (out / "index.html").is_file()
    as_json = subprocess.run(
        [sys.executable, "-m", "longhaul", "sim", "rdma", "--json"],
        capture_output=True, text=True, timeout=300, check=False, env=env,
    )  # fmt: skip
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout)["ib"]["summary"]["switch_point_bytes"] == 8192
