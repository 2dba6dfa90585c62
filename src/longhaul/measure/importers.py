"""Measurements users already have, as tidy rows (source: measured): iperf3's JSON
(`iperf3 -J`), and perfSONAR pScheduler throughput results (a result, or a run as the
pScheduler API returns it, with the result under `result-merged` or `result`)."""

from __future__ import annotations

import contextlib
import json
import statistics
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from longhaul.errors import InputError
from longhaul.measure.rows import Row, Source
from longhaul.measure.tools import iperf3


def read_files(
    files: Iterable[Path], campaign: str, connection: str, length_miles: float | None
) -> list[tuple[str, Row]]:
    """(run key, row) for each file; a file of neither kind is refused, naming it."""
    rows = []
    for number, path in enumerate(files, start=1):
        text = path.read_text(errors="replace")
        row = from_text(text, campaign, connection, length_miles, repetition=number)
        row.raw_ref = str(path)
        rows.append((f"import|{path.resolve()}", row))
    return rows


def from_text(
    text: str, campaign: str, connection: str, length_miles: float | None, repetition: int = 1
) -> Row:
    base = Row(
        campaign=campaign,
        test="tcp_throughput",
        tool="iperf3",
        source=Source.MEASURED,
        connection=connection,
        length_miles=length_miles,
        repetition=repetition,
        started_at=datetime.now(UTC),
    )
    try:
        document = json.loads(text)
    except json.JSONDecodeError:
        document = None
    if isinstance(document, dict) and _pscheduler_result(document) is not None:
        return _from_pscheduler(_pscheduler_result(document) or {}, document, base)
    try:
        result = iperf3.parse(text)
    except iperf3.Iperf3Error as exc:
        raise InputError("files", f"neither iperf3 JSON nor a pScheduler result: {exc}") from exc
    return _from_iperf3(result, base)


def _from_iperf3(result: iperf3.Iperf3Result, row: Row) -> Row:
    start = result.raw.get("start", {})
    test_start = start.get("test_start", {})
    stamp = start.get("timestamp", {}).get("timesecs")
    if stamp:
        row.started_at = datetime.fromtimestamp(float(stamp), UTC)
    row.streams = test_start.get("num_streams")
    row.duration_s = test_start.get("duration")
    row.cc = result.raw.get("end", {}).get("sender_tcp_congestion")
    row.throughput_gbps = result.goodput_bps / 1e9
    row.retransmits = result.retransmits
    row.rtt_ms = result.rtt_mean_ms
    row.rtt_std_ms = result.rtt_std_ms
    return row


def _pscheduler_result(document: dict[str, Any]) -> dict[str, Any] | None:
    for candidate in (document.get("result-merged"), document.get("result"), document):
        if isinstance(candidate, dict) and isinstance(candidate.get("summary"), dict):
            summary = candidate["summary"].get("summary")
            if isinstance(summary, dict) and "throughput-bits" in summary:
                return candidate
    return None


def _from_pscheduler(result: dict[str, Any], document: dict[str, Any], row: Row) -> Row:
    if result.get("succeeded") is False:
        raise InputError("files", f"the pScheduler run failed: {result.get('error', '')}")
    summary = result["summary"]["summary"]
    row.tool = "pscheduler"
    row.streams = len(result["summary"].get("streams", [])) or None
    row.throughput_gbps = float(summary["throughput-bits"]) / 1e9
    retransmits = summary.get("retransmits")
    row.retransmits = None if retransmits is None else int(retransmits)
    row.duration_s = _float(summary.get("end"))
    rtts = [
        stream["rtt"] / 1000
        for interval in result.get("intervals", [])
        for stream in interval.get("streams", [])
        if stream.get("rtt") and not stream.get("omitted")
    ]
    if rtts:
        row.rtt_ms = statistics.fmean(rtts)
        row.rtt_std_ms = statistics.pstdev(rtts) if len(rtts) > 1 else None
    started = document.get("start-time")
    if isinstance(started, str):
        with contextlib.suppress(ValueError):
            row.started_at = datetime.fromisoformat(started.replace("Z", "+00:00"))
    return row


def _float(value: Any) -> float | None:
    return None if value is None else float(value)
