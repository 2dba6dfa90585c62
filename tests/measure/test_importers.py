"""Measurements users already have: iperf3 JSON and pScheduler throughput results."""

import json

import pytest

from longhaul.errors import InputError
from longhaul.measure.importers import from_text, read_files
from longhaul.measure.rows import Source

IPERF3 = {
    "start": {
        "timestamp": {"timesecs": 1893920400},
        "test_start": {"num_streams": 4, "duration": 10},
    },
    "intervals": [{"sum": {"omitted": False}, "streams": [{"rtt": 27000}, {"rtt": 28000}]}],
    "end": {
        "sum_sent": {"bits_per_second": 9.0e9, "retransmits": 3},
        "sum_received": {"bits_per_second": 8.9e9},
        "sender_tcp_congestion": "cubic",
    },
}
PSCHEDULER_RUN = {
    "start-time": "2030-01-07T09:00:00Z",
    "result-merged": {
        "succeeded": True,
        "intervals": [{"streams": [{"rtt": 26800, "omitted": False}]}],
        "summary": {
            "streams": [{}, {}],
            "summary": {"start": 0, "end": 10.0, "throughput-bits": 5.5e9, "retransmits": 12},
        },
    },
}


def test_iperf3_json_becomes_a_measured_row():
    row = from_text(json.dumps(IPERF3), "imported", "ornl-chicago", 1400.0)
    assert row.source is Source.MEASURED and row.tool == "iperf3"
    assert (row.cc, row.streams, row.duration_s) == ("cubic", 4, 10)
    assert row.throughput_gbps == 8.9 and row.retransmits == 3 and row.rtt_ms == 27.5
    assert row.started_at.year == 2030


def test_a_pscheduler_run_becomes_a_measured_row():
    row = from_text(json.dumps(PSCHEDULER_RUN), "imported", "perfsonar", None)
    assert row.tool == "pscheduler" and row.streams == 2
    assert row.throughput_gbps == 5.5 and row.retransmits == 12 and row.rtt_ms == 26.8
    failed = {
        "result": {
            "succeeded": False,
            "error": "no route",
            "summary": {"summary": {"throughput-bits": 0}},
        }
    }
    with pytest.raises(InputError, match="no route"):
        from_text(json.dumps(failed), "c", "x", None)


def test_files_of_neither_kind_are_refused(tmp_path):
    good, bad = tmp_path / "a.json", tmp_path / "b.txt"
    good.write_text(json.dumps(IPERF3))
    bad.write_text("Connecting to host 198.18.0.6, port 5201")
    [(key, row)] = read_files([good], "c", "x", 1.0)
    assert key.startswith("import|") and row.raw_ref == str(good)
    with pytest.raises(InputError, match="neither iperf3 JSON nor a pScheduler result"):
        read_files([bad], "c", "x", 1.0)
