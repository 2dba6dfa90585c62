"""The HTML report from a campaign's rows: every USN figure and table there is data for,
PNG and SVG beside the page, and a page that needs nothing from the network."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pandas as pd
import pytest

from longhaul.measure.rows import COLUMNS, Row, Source
from longhaul.report import figures, write_report

LENGTHS = (0.2, 1400.2, 6600.0, 8600.0)


def tcp(miles: float, streams: int, repetition: int, cross: float = 0.0) -> Row:
    return Row(
        campaign="study",
        test="tcp_throughput",
        tool="iperf3",
        source=Source.EMULATED,
        connection=f"loop {miles} mi",
        length_miles=miles,
        repetition=repetition,
        started_at=datetime(2030, 1, 7, 9, tzinfo=UTC),
        cc="cubic",
        streams=streams,
        cross_traffic_gbps=cross,
        throughput_gbps=9.0 - miles / 2000 + 0.05 * streams - cross / 2 + 0.01 * repetition,
    )


def echo(variant: str, size: int) -> Row:
    return Row(
        campaign="study",
        test="echo_jitter",
        tool="echo",
        source=Source.EMULATED,
        connection="loop 1,400 mi",
        length_miles=1400.2,
        repetition=0,
        started_at=datetime(2030, 1, 7, 9, tzinfo=UTC),
        message_bytes=size,
        variant=variant,
        extra={"rtt_samples_ms": [26.8 + 0.01 * (i % 7) for i in range(50)]},
    )


def pings(
    miles: float,
    samples_ms: list[float],
    mean_ms: float,
    std_ms: float,
    low_high_ms: tuple[float, float] | None = None,
) -> Row:
    """An rtt run as the ping tool stores it: replies, and the summary's precise figures."""
    low, high = low_high_ms or (min(samples_ms), max(samples_ms))
    return Row(
        campaign="study",
        test="rtt",
        tool="ping",
        source=Source.EMULATED,
        connection=f"loop {miles} mi",
        length_miles=miles,
        repetition=0,
        started_at=datetime(2030, 1, 7, 9, tzinfo=UTC),
        rtt_ms=mean_ms,
        rtt_std_ms=std_ms,
        extra={"rtt_samples_ms": samples_ms, "rtt_min_ms": low, "rtt_max_ms": high},
    )


@pytest.fixture
def frame() -> pd.DataFrame:
    rows = [tcp(m, n, r) for m in LENGTHS for n in (1, 2, 4, 8) for r in (0, 1)]
    rows += [tcp(1400.2, 4, 0, cross) for cross in (1.0, 2.0, 4.0)]
    rows += [echo(v, s) for v in ("echo", "size") for s in (64, 65536)]
    return pd.DataFrame([r.as_dict() for r in rows], columns=list(COLUMNS))


def test_the_report_has_every_figure_with_png_and_svg(frame, tmp_path):
    page = write_report(frame, tmp_path / "out", "study")
    html = page.read_text()
    names = {p.stem for p in page.parent.glob("*.png")}
    assert names == {p.stem for p in page.parent.glob("*.svg")}
    assert {"distance-cubic", "throughput-by-length", "cross-traffic", "jitter-1400"} <= names
    assert {f"stability-cubic-{m}" for m in ("0.2", "1400", "6600", "8600")} <= names
    assert not [n for n in names if "," in n or " " in n]
    for name in names:
        assert f'id="{name}"' in html


def test_the_page_is_self_contained_and_captioned(frame, tmp_path):
    html = write_report(frame, tmp_path, "study").read_text()
    # Figures are inlined, so the page opens offline and can be mailed on its own.
    assert not re.search(r'(src|href)="https?://', html)
    assert "data:image/png;base64," in html or "<svg" in html
    assert "source: emulated" in html
    for heading in ("T̄", "DPM", "Jitter"):
        assert heading in html
    assert "8,600" in html and "1,400" in html


def test_published_values_are_shown_only_when_asked(frame, tmp_path):
    with_published = write_report(frame, tmp_path / "a", "study").read_text()
    without = write_report(frame, tmp_path / "b", "study", reference=False).read_text()
    assert "published" in with_published.lower()
    assert "BIC" in with_published and "BIC" not in without


def test_a_campaign_with_only_jitter_rows_still_reports(frame, tmp_path):
    only_echo = frame[frame["test"] == "echo_jitter"]
    html = write_report(only_echo, tmp_path, "study").read_text()
    assert "jitter-1400" in html and "distance-cubic" not in html


def test_the_page_says_how_the_runs_were_made_and_why_some_are_missing(tmp_path):
    made = {"host": "vm", "kernel": "6.1.0", "tool_version": "iperf 3.12", "mtu_bytes": 1500,
            "emulator": {"version": "longhaul-wan 0.1.0", "layer": "oc192"}}  # fmt: skip
    rows = [tcp(m, 1, r) for m in LENGTHS for r in (0, 1)]
    for row in rows:
        row.meta = made
    rows[0].meta = {**made, "kernel": "6.12.0"}
    failed = tcp(1400.2, 1, 2)
    failed.throughput_gbps, failed.error = None, "iperf3: the server is busy"
    single = tcp(8600.0, 2, 0)
    frame = pd.DataFrame([r.as_dict() for r in [*rows, failed, single]], columns=list(COLUMNS))
    html = write_report(frame, tmp_path, "study").read_text()
    assert "How the runs were made" in html and "6.1.0; 6.12.0" in html
    assert "iperf 3.12" in html and "oc192" in html
    assert "failed: iperf3: the server is busy" in html
    assert ">nan<" not in html


def test_time_series_and_rtt_cdfs_are_drawn_when_the_rows_hold_them(tmp_path):
    run = tcp(1400.2, 2, 0)
    run.extra = {
        "interval_end_s": [1.0, 2.0, 3.0],
        "interval_gbps": [8.0, 9.0, 9.2],
        "stream_interval_gbps": [[4.0, 4.5, 4.6], [4.0, 4.5, 4.6]],
    }
    ping = pings(1400.2, [26.8, 26.9, 27.0, 26.85], 26.8875, 0.074)
    frame = pd.DataFrame([r.as_dict() for r in (run, ping)], columns=list(COLUMNS))
    html = write_report(frame, tmp_path, "study").read_text()
    assert (tmp_path / "time-series-cubic-emulated.svg").exists()
    assert (tmp_path / "rtt-cdf.svg").exists() and "RTT distributions" in html
    assert "ping (idle)" in html and "Jitter statistics" in html  # ping in USN's statistics


def test_jitter_by_layer_compares_a_circuit_with_a_packet_switched_core(tmp_path):
    rows = []
    for layer, jitter, spread in (("oc192", None, 0.01), ("ip", "hops=4,mean=150us", 0.3)):
        for size in (64, 65536):
            row = echo("echo", size)
            row.extra = {"rtt_samples_ms": [26.8 + spread * (i % 5) for i in range(50)]}
            row.meta = {"emulator": {"layer": layer, "jitter": jitter}}
            rows.append(row)
    frame = pd.DataFrame([r.as_dict() for r in rows], columns=list(COLUMNS))
    html = write_report(frame, tmp_path, "layers").read_text()
    assert (tmp_path / "jitter-by-layer.svg").exists() and "Jitter by layer" in html
    one_layer = frame[[m["emulator"]["jitter"] is None for m in frame["meta"]]]
    write_report(one_layer, tmp_path / "one", "one")
    assert not (tmp_path / "one" / "jitter-by-layer.svg").exists()


def test_ping_jitter_comes_from_its_precise_summary_not_its_three_digit_replies(tmp_path):
    # At 164 ms ping prints "time=164 ms": the replies cannot show a 0.03 ms spread.
    ping = pings(8600.2, [164.0] * 20, 164.02, 0.03, low_high_ms=(163.98, 164.09))
    frame = pd.DataFrame([ping.as_dict()], columns=list(COLUMNS))
    html = write_report(frame, tmp_path, "long").read_text()
    # std 0.03 / 164.02 = 0.02 %; range 0.11 / 164.02 = 0.07 %.
    assert "<td>ping (idle)</td><td></td><td>164.020</td><td>0.07</td><td>0.02</td>" in html
    assert not (tmp_path / "rtt-cdf.svg").exists(), "1 ms steps would draw no spread"


def ib(miles: float, size: int) -> Row:
    """An InfiniBand run as the ib tool stores it."""
    return Row(
        campaign="ib",
        test="ib_throughput",
        tool="ib_rdma",
        source=Source.SIMULATED,
        connection=f"loop {miles} mi",
        length_miles=miles,
        repetition=1,
        started_at=datetime(2030, 1, 7, 9, tzinfo=UTC),
        message_bytes=size,
        variant="RC write",
        throughput_gbps=min(7.9, size / 1e5) - miles / 60_000,
    )


def test_infiniband_runs_are_drawn_by_size_and_beside_tcp(frame, tmp_path):
    rows = [ib(m, s) for m in LENGTHS for s in (4096, 1 << 20, 8 << 20)]
    both = pd.concat([frame, pd.DataFrame([r.as_dict() for r in rows], columns=list(COLUMNS))])
    page = write_report(both, tmp_path, "ib")
    html = page.read_text()
    names = {p.stem for p in page.parent.glob("*.png")}
    assert {"ib-beside-tcp", "ib-profile-RC-write-simulated"} <= names
    assert "InfiniBand RC write (simulated)" in html
    assert "Decrease per mile, TCP beside InfiniBand" in html
    # At 8 MB the throughput falls 1/60,000 Gb/s a mile: a DPM of 0.017 Mb/s per mile.
    assert "0.017" in html


def rdma_lan(interconnect: str, size: int, latency_us: float, queue_entries: int = 0) -> Row:
    """An rdma_lan run as the tool stores it (`sim.rdma.rdma_row_of`)."""
    return Row(
        campaign="rdma",
        test="rdma_lan",
        tool="rdma_lan",
        source=Source.SIMULATED,
        connection="machine room",
        length_miles=0.0,
        repetition=1,
        started_at=datetime(2030, 1, 7, 9, tzinfo=UTC),
        message_bytes=size,
        variant=f"{interconnect} mpi",
        throughput_gbps=size / latency_us * 8 / 1000,
        rtt_ms=2 * latency_us / 1000,
        extra={
            "interconnect": interconnect,
            "latency_us": latency_us,
            "bandwidth_mb_s": size / latency_us,
            "bothway_mb_s": 2 * size / latency_us,
            "protocol": "eager",
            "connections": 1,
            "reuse_pct": 100,
            "queue_entries": queue_entries,
            "unexpected_entries": 0,
        },
    )


def test_rdma_lan_runs_are_drawn_by_size_a_line_per_setting(tmp_path):
    rows = [
        rdma_lan(name, size, base + size / 900)
        for name, base in (("iwarp", 11.7), ("ib", 4.8))
        for size in (1, 4096, 1 << 20)
    ]
    rows.append(rdma_lan("ib", 1, 14.8, queue_entries=100))
    frame = pd.DataFrame([r.as_dict() for r in rows], columns=list(COLUMNS))
    page = write_report(frame, tmp_path, "rdma", reference=False)
    names = {p.stem for p in page.parent.glob("*.png")}
    assert {"rdma-lan-latency", "rdma-lan-bandwidth"} <= names
    assert "RDMA LAN latency by message size" in page.read_text()
    # A setting off its default names its own line.
    latency = figures.rdma_lan_by_size(frame)[0].figure
    labels = {t.get_text() for t in latency.axes[0].get_legend().get_texts()}
    assert labels == {"ib mpi (room)", "ib mpi (room, queue_entries 100)", "iwarp mpi (room)"}
