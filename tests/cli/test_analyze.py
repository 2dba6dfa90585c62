"""`longhaul analyze`, `longhaul report` and `longhaul demo` as a user runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime

import numpy as np
import pytest

from longhaul.db import Database, migrate
from longhaul.measure.rows import Row, Source
from longhaul.measure.store import ResultsStore


@pytest.fixture
def campaign_db(tmp_path):
    """A SQLite file with a small cubic-and-reno campaign over three lengths."""
    path = tmp_path / "results.db"
    runs = [
        (f"{cc}-{miles}-{n}-{rep}", _row(cc, miles, n, rep))
        for cc in ("cubic", "reno")
        for miles in (0.2, 1400.2, 8600.0)
        for n in (1, 5, 10, 15)
        for rep in (0, 1)
    ]
    store_campaign(path, "study", runs)
    return path


def store_campaign(path, name: str, runs: list[tuple[str, Row]]) -> None:
    """`runs` stored as campaign `name` in the SQLite file at `path` (made if new)."""
    db = Database(f"sqlite:///{path}")
    migrate(db.engine)
    store = ResultsStore(db)
    store.add_many(store.open_campaign(name), runs)
    db.dispose()


def _row(cc: str, miles: float, streams: int, repetition: int) -> Row:
    slope = 0.2 if cc == "cubic" else 0.4  # Gb/s lost per 1,000 miles
    return Row(
        campaign="study",
        test="tcp_throughput",
        tool="iperf3",
        source=Source.EMULATED,
        connection=f"loop {miles} mi",
        length_miles=miles,
        repetition=repetition,
        started_at=datetime(2030, 1, 7, 9, tzinfo=UTC),
        cc=cc,
        streams=streams,
        throughput_gbps=9.0 - slope * miles / 1000 + 0.01 * repetition,
    )


def test_reference_json_says_whether_all_is_within_rounding(cli):
    result = cli("analyze", "reference", "--json")
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert isinstance(found["all_within_rounding"], bool)
    figures = [f for entry in found["tables"].values() for f in entry["figures"]]
    assert len(figures) == 20
    assert found["all_within_rounding"] == all(f["within_rounding"] for f in figures)


def test_reference_table_names_each_figure_that_misses(cli):
    result = cli("analyze", "reference")
    assert result.returncode == 0, result.stderr
    assert "Published figures recomputed" in result.stdout
    assert "not within rounding" in result.stdout or "all within rounding" in result.stdout


def test_profile_prints_mean_and_dpm_per_length(cli, campaign_db):
    result = cli("analyze", "profile", "study", "--db", str(campaign_db), "--json")
    assert result.returncode == 0, result.stderr
    found = {p["cc"]: p for p in json.loads(result.stdout)["profiles"]}
    assert set(found) == {"cubic", "reno"}
    cubic = {line["length_miles"]: line for line in found["cubic"]["lengths"]}
    # 0.2 Gb/s per 1,000 miles is 0.2 Mb/s per mile, whatever the stream count.
    assert cubic[8600.0]["dpm_mbps_per_mile"] == pytest.approx(0.2, rel=1e-3)
    table = cli("analyze", "profile", "study", "--db", str(campaign_db))
    assert "8,600" in table.stdout and "average" in table.stdout


def test_compare_finds_the_better_connection(cli, campaign_db):
    result = cli("analyze", "compare", "study", "cubic", "reno", "--db", str(campaign_db))
    assert result.returncode == 0, result.stderr
    assert "cubic beats reno by" in result.stdout and "95 % interval" in result.stdout
    assert "cubic: the least-squares line" in result.stdout and "bounds:" in result.stdout


def add_a_slower_campaign(path, name: str) -> None:
    """The study's cubic runs at n = 5, 10, 15 again, 1 Gb/s lower everywhere."""
    runs = []
    for miles in (0.2, 1400.2, 8600.0):
        for n in (5, 10, 15):
            for rep in (0, 1):
                row = _row("cubic", miles, n, rep)
                row.throughput_gbps = (row.throughput_gbps or 0) - 1.0
                runs.append((f"{miles}-{n}-{rep}", row))
    store_campaign(path, name, runs)


def test_compare_two_campaigns_with_the_same_method(cli, campaign_db):
    add_a_slower_campaign(campaign_db, "study-later")
    result = cli("analyze", "compare", "study", "cubic", "cubic", "--against", "study-later",
                 "--db", str(campaign_db), "--json")  # fmt: skip
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert found["against"] == "study-later"
    assert found["better_on_average"] == "cubic (study)"
    assert found["mean_difference_gbps"] == pytest.approx(1.0, abs=1e-6)
    same = cli("analyze", "compare", "study", "cubic", "cubic", "--db", str(campaign_db))
    assert same.returncode == 2 and "--against" in same.stderr


@pytest.fixture
def two_knot_db(tmp_path):
    """htcp falls with two knees over 21 lengths (15 runs each, noise 0.5 Gb/s); bic
    falls in a straight line."""
    path = tmp_path / "knots.db"
    db = Database(f"sqlite:///{path}")
    migrate(db.engine)
    store = ResultsStore(db)
    cid = store.open_campaign("knots")
    rng = np.random.default_rng(3)
    grid = np.linspace(0, 8600, 21)
    shapes = {
        "htcp": ((0.0, grid[5], grid[14], 8600.0), (9.4, 9.0, 3.0, 2.5)),
        "bic": ((0.0, 8600.0), (9.0, 1.5)),
    }
    runs = []
    for cc, (knots, values) in shapes.items():
        for miles in grid:
            for rep in range(15):
                row = _row(cc, float(miles), 5, rep)
                row.throughput_gbps = float(np.interp(miles, knots, values) + rng.normal(0, 0.5))
                runs.append((f"{cc}-{miles}-{rep}", row))
    store.add_many(cid, runs)
    db.dispose()
    return path, float(grid[1]), (float(grid[5]), float(grid[14]))


def test_compare_chooses_two_knots_and_places_them(cli, two_knot_db):
    path, step_miles, knots_miles = two_knot_db
    result = cli("analyze", "compare", "knots", "htcp", "bic", "--db", str(path), "--json")
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    htcp = found["fits"]["htcp"]
    assert htcp["k"] == 2
    assert all(
        abs(a - b) <= step_miles for a, b in zip(htcp["anchors_miles"], knots_miles, strict=True)
    )
    assert found["fits"]["bic"]["k"] == -1
    low, high = found["mean_difference_interval_gbps"]
    assert low <= found["mean_difference_gbps"] <= high


def test_unknown_campaign_is_a_clear_error(cli, campaign_db):
    result = cli("analyze", "profile", "nosuch", "--db", str(campaign_db))
    assert result.returncode != 0
    assert "no campaign named 'nosuch'" in result.stderr and "study" in result.stderr


def test_report_writes_the_page(cli, campaign_db, tmp_path):
    out = tmp_path / "report"
    result = cli("report", "study", "--db", str(campaign_db), "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("index.html")
    assert (out / "index.html").exists() and (out / "distance-cubic.svg").exists()


def test_demo_without_root_says_what_it_cannot_run(tmp_path):
    os.chmod(tmp_path, 0o777)
    result = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
         sys.executable, "-m", "longhaul", "demo"],
        capture_output=True, text=True, timeout=60, check=False,
        env={**os.environ, "LONGHAUL_HOME": str(tmp_path)},
    )  # fmt: skip
    assert result.returncode == 1
    assert "cannot here" in result.stderr and "root" in result.stderr
    assert "longhaul analyze reference" in result.stderr


def test_a_report_of_two_campaigns_draws_both_and_compares_them(cli, campaign_db, tmp_path):
    add_a_slower_campaign(campaign_db, "later")
    out = tmp_path / "both"
    result = cli(
        "report", "study", "--against", "later", "--db", str(campaign_db), "--out", str(out)
    )
    assert result.returncode == 0, result.stderr
    html = (out / "index.html").read_text()
    assert "Campaign against campaign" in html and "study is better beyond chance" in html
    assert "emulated (study)" in html and "emulated (later)" in html


@pytest.fixture
def encrypted_db(tmp_path):
    """A campaign whose runs went through link encryptors beside plain ones, at 1,400 mi."""
    path = tmp_path / "encrypted.db"
    runs = []
    for name, gbps in (("plain, MTU 8950", 9.1), ("encrypted, MTU 8950", 9.0)):
        for n in (1, 4):
            for rep in (0, 1):
                row = _row("cubic", 1400.2, n, rep)
                row.campaign, row.variant, row.throughput_gbps = "sealed", name, gbps + rep / 100
                runs.append((f"{name}-{n}-{rep}", row))
    store_campaign(path, "sealed", runs)
    return path


def test_variants_compare_encrypted_and_plain_runs(cli, encrypted_db, campaign_db, tmp_path):
    result = cli("analyze", "variants", "sealed", "--db", str(encrypted_db), "--json")
    assert result.returncode == 0, result.stderr
    found = {(v["variant"], v["streams"]): v for v in json.loads(result.stdout)["variants"]}
    assert found[("encrypted, MTU 8950", 4)]["mean_gbps"] == pytest.approx(9.005)
    assert found[("plain, MTU 8950", 1)]["runs"] == 2
    table = cli("analyze", "variants", "sealed", "--db", str(encrypted_db))
    assert "encrypted, MTU 8950" in table.stdout and "n=4" in table.stdout
    out = tmp_path / "report"
    page = cli("report", "sealed", "--db", str(encrypted_db), "--out", str(out))
    assert page.returncode == 0, page.stderr
    assert "TCP through middleboxes" in (out / "index.html").read_text()
    none = cli("analyze", "variants", "study", "--db", str(campaign_db))
    assert none.returncode != 0 and "no TCP runs through middleboxes" in none.stderr
