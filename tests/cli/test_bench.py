"""`longhaul bench paths` prints its figures as JSON (a tiny run: shape, not speed); the
testbed benchmarks refuse what they cannot run and say how long they will take."""

import json

import pytest

from longhaul.bench.paths import QUERIES
from longhaul.cli.bench import _say_how_long


def test_bench_paths_json_shape(cli):
    result = cli(
        "bench",
        "paths",
        "--json",
        "--topologies",
        "usn,n30",
        "--reservations",
        "60",
        "--samples",
        "5",
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert set(report["topologies"]) == {"usn", "n30"}
    for entry in report["topologies"].values():
        assert entry["reservations"] == 60
        for query in QUERIES:
            assert entry[query]["samples"] == 5
            assert 0 < entry[query]["p50_ms"] <= entry[query]["p99_ms"]
    assert report["topologies"]["n30"]["nodes"] == 30
    assert report["topologies"]["n30"]["links"] == 60


def test_bench_paths_a_year_calendar_holds_the_bookings_it_is_named_for(cli):
    result = cli("bench", "paths", "--json", "--topologies", "n30_2k", "--samples", "3")
    assert result.returncode == 0, result.stderr
    entry = json.loads(result.stdout)["topologies"]["n30_2k"]
    assert entry["days"] == 365
    # Whole reservations are booked until the links hold 2,000 bookings between them.
    assert 2000 <= entry["link_bookings"] < 2000 + 30
    assert entry["reservations"] < entry["link_bookings"]


def test_bench_paths_refuses_a_calendar_it_cannot_read(cli):
    result = cli("bench", "paths", "--json", "--topologies", "n30_2x", "--samples", "3")
    assert result.returncode != 0
    assert "n30_2x" in result.stderr


def test_bench_hurricane_names_the_tools_it_knows_when_asked_for_another(cli):
    result = cli("bench", "hurricane", "--tool", "iperf3-cubic-8", "--tool", "scp")
    assert result.returncode == 2
    assert "no tool scp" in result.stderr and "gridftp-8" in result.stderr


def test_bench_hurricane_says_how_to_write_a_circuit(cli):
    result = cli("bench", "hurricane", "--circuit", "9.6")
    assert result.returncode == 2
    assert "RATExRTT[xLOSS]" in result.stderr and "9.6x163x1e-4" in result.stderr


@pytest.mark.parametrize(
    ("seconds", "said"),
    [(20, "Under a minute."), (70, "About 1 minute."), (1500, "About 25 minutes.")],
)
def test_a_benchmark_says_how_long_it_will_take(seconds, said, capsys):
    _say_how_long(seconds)
    assert capsys.readouterr().err.strip() == said
