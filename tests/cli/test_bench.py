"""`longhaul bench paths` prints its figures as JSON (a tiny run: shape, not speed)."""

import json

from longhaul.bench.paths import QUERIES


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
