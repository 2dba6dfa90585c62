"""Measurements users already have: iperf3 JSON (recorded runs under fixtures/) and
pScheduler throughput results (hand-written: no perfSONAR node runs here)."""

import json
from pathlib import Path

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


RECORDED = Path(__file__).parent / "fixtures" / "iperf3"


def test_a_recorded_tcp_run_with_two_streams():
    row = from_text((RECORDED / "tcp-2-streams.json").read_text(), "c", "lo", 0.2)
    assert row.test == "tcp_throughput" and row.cc == "cubic" and row.streams == 2
    assert row.throughput_gbps > 0 and row.meta is not None
    assert row.meta["tool_version"] == "iperf 3.12" and "Linux" in row.meta["system_info"]


def test_a_recorded_udp_run_is_a_udp_row_with_its_loss_and_jitter():
    row = from_text((RECORDED / "udp-200m.json").read_text(), "c", "lo", 0.2)
    assert row.test == "udp_throughput" and row.cc is None and row.retransmits is None
    assert row.throughput_gbps == pytest.approx(0.2, rel=0.01)
    assert row.extra["lost"] == 0 and row.extra["packets"] == 1526
    assert row.extra["jitter_ms"] == pytest.approx(0.00654, rel=0.01)


@pytest.mark.parametrize(
    ("fixture", "says"),
    [
        ("error-connection-refused.json", "iperf3: unable to connect to server"),
        ("error-server-busy.json", "iperf3: the server is busy"),
        ("truncated.json", "or one cut short"),
    ],
)
def test_a_failed_or_cut_run_is_refused_with_iperf3s_message(fixture, says):
    with pytest.raises(InputError, match=says):
        from_text((RECORDED / fixture).read_text(), "c", "lo", 0.2)


def test_an_import_names_every_bad_file_and_keeps_nothing():
    files = [
        RECORDED / "tcp-reno.json",
        RECORDED / "error-server-busy.json",
        RECORDED / "truncated.json",
    ]
    with pytest.raises(InputError) as caught:
        read_files(files, "c", "lo", 0.2)
    message = str(caught.value)
    assert "error-server-busy.json: iperf3: the server is busy" in message
    assert "truncated.json" in message and "tcp-reno.json" not in message
    assert message.endswith("Nothing was imported")


def test_repetitions_are_numbered_by_start_time_not_by_file_order(tmp_path):
    early, late = dict(IPERF3), json.loads(json.dumps(IPERF3))
    late["start"]["timestamp"]["timesecs"] = IPERF3["start"]["timestamp"]["timesecs"] + 60
    (tmp_path / "a.json").write_text(json.dumps(late))
    (tmp_path / "b.json").write_text(json.dumps(early))
    rows = dict(read_files([tmp_path / "a.json", tmp_path / "b.json"], "c", "x", 1.0))
    numbers = {Path(key.split("|")[1]).name: row.repetition for key, row in rows.items()}
    assert numbers == {"a.json": 2, "b.json": 1}


def test_a_pscheduler_import_takes_its_cc_from_the_user(tmp_path):
    path = tmp_path / "run.json"
    path.write_text(json.dumps(PSCHEDULER_RUN))
    assert [row.cc for _, row in read_files([path], "c", "x", 1.0, cc="htcp")] == ["htcp"]


@pytest.mark.parametrize(
    "document",
    [
        {"result": {"succeeded": True}},
        {"result": {"succeeded": True, "summary": {"summary": {}}}},
        {"result-merged": {"summary": "x"}},
    ],
)
def test_a_malformed_pscheduler_result_is_refused_in_a_line(document):
    with pytest.raises(InputError, match="pScheduler result without"):
        from_text(json.dumps(document), "c", "x", None)


def test_a_recorded_run_keeps_its_per_interval_series():
    row = from_text((RECORDED / "tcp-2-streams.json").read_text(), "c", "lo", 0.2)
    # -t 2 -O 1: two measured one-second intervals, the warm-up second left out.
    assert len(row.extra["interval_gbps"]) == 2 and len(row.extra["interval_end_s"]) == 2
    assert len(row.extra["stream_interval_gbps"]) == 2
    per_stream = [sum(s[i] for s in row.extra["stream_interval_gbps"]) for i in range(2)]
    assert per_stream == pytest.approx(row.extra["interval_gbps"], rel=1e-4)
