"""`longhaul results` as a user runs it: imports that refuse failed runs, exports that
work for every campaign, and one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

FIXTURES = Path(__file__).parents[1] / "measure" / "fixtures" / "iperf3"


def test_a_failed_iperf3_run_is_refused_and_nothing_is_left_behind(cli, tmp_path):
    db = str(tmp_path / "r.db")
    result = cli(
        "results", "import", "--db", db, "--campaign", "failed",
        str(FIXTURES / "tcp-reno.json"), str(FIXTURES / "error-connection-refused.json"),
    )  # fmt: skip
    assert result.returncode == 2
    assert "error-connection-refused.json: iperf3: unable to connect to server" in result.stderr
    assert "Nothing was imported" in result.stderr and "Traceback" not in result.stderr
    listed = json.loads(cli("results", "list", "--db", db, "--json").stdout)
    assert listed == []


def test_import_then_export_to_csv_and_parquet(cli, tmp_path):
    db = str(tmp_path / "r.db")
    imported = cli(
        "results", "import", "--db", db, "--campaign", "lo", "--length-miles", "0.2",
        str(FIXTURES / "tcp-reno.json"), str(FIXTURES / "udp-200m.json"),
    )  # fmt: skip
    assert imported.returncode == 0, imported.stderr
    for name in ("r.csv", "r.parquet"):
        exported = cli("results", "export", "--db", db, "lo", str(tmp_path / name))
        assert exported.returncode == 0, exported.stderr
    back = pd.read_parquet(tmp_path / "r.parquet")
    assert sorted(back["test"]) == ["tcp_throughput", "udp_throughput"]
    assert json.loads(back["meta"][0])["tool_version"] == "iperf 3.12"


def test_an_import_without_a_length_says_what_it_costs(cli, tmp_path):
    result = cli(
        "results", "import", "--db", str(tmp_path / "r.db"), "--campaign", "x",
        str(FIXTURES / "tcp-reno.json"),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "--length-miles" in result.stderr


def test_export_errors_are_one_line(cli, tmp_path):
    db = str(tmp_path / "r.db")
    cli("results", "import", "--db", db, "--campaign", "lo", str(FIXTURES / "tcp-reno.json"))
    missing = cli("results", "export", "--db", db, "lo", str(tmp_path / "no" / "r.parquet"))
    assert missing.returncode == 2 and "does not exist" in missing.stderr
    assert not (tmp_path / "no").exists()
    unknown = cli("results", "export", "--db", db, "nosuch", str(tmp_path / "r.csv"))
    assert unknown.returncode == 2 and "no campaign named 'nosuch'" in unknown.stderr


def test_forget_removes_a_campaign(cli, tmp_path):
    db = str(tmp_path / "r.db")
    cli("results", "import", "--db", db, "--campaign", "lo", str(FIXTURES / "tcp-reno.json"))
    result = cli("results", "forget", "--db", db, "lo")
    assert result.returncode == 0 and "1 row(s) removed" in result.stdout
    assert json.loads(cli("results", "list", "--db", db, "--json").stdout) == []
