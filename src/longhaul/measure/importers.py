"""Measurements users already have, as tidy rows (source: measured): iperf3's JSON
(`iperf3 -J`, TCP or UDP), and perfSONAR pScheduler throughput results (a result, or a
run as the pScheduler API returns it, with the result under `result-merged` or `result`).

An import is all or nothing: every file is read before anything is stored, and a file
that holds a failed run, output cut short or something else is refused by name with the
tool's own message. Repetitions are numbered by start time within each set of runs that
share their parameters, not by the order files were named in.
"""

from __future__ import annotations

import contextlib
import json
import statistics
from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from longhaul.errors import InputError
from longhaul.measure.rows import Row, Source
from longhaul.measure.tools import iperf3


def read_files(
    files: Iterable[Path],
    campaign: str,
    connection: str,
    length_miles: float | None,
    cc: str | None = None,
) -> list[tuple[str, Row]]:
    """(run key, row) for each file, or `InputError` naming every file that is not a
    finished run. `cc` is the congestion control where the files do not say (pScheduler
    results never do)."""
    rows: list[tuple[str, Row]] = []
    problems: list[str] = []
    for path in files:
        try:
            row = from_text(path.read_text(errors="replace"), campaign, connection, length_miles)
        except InputError as exc:
            problems.append(f"{path}: {exc.reason}")
            continue
        except OSError as exc:
            problems.append(f"{path}: {exc.strerror}")
            continue
        row.raw_ref = str(path)
        row.cc = row.cc or cc
        rows.append((f"import|{path.resolve()}", row))
    if problems:
        raise InputError("files", "; ".join(problems) + ". Nothing was imported")
    _number_repetitions([row for _, row in rows])
    return rows


def _number_repetitions(rows: list[Row]) -> None:
    """1, 2, ... by start time among the rows that share test, connection, length, cc and
    stream count."""
    groups: dict[tuple[Any, ...], list[Row]] = defaultdict(list)
    for row in rows:
        groups[(row.test, row.connection, row.length_miles, row.cc, row.streams)].append(row)
    for group in groups.values():
        for number, row in enumerate(sorted(group, key=lambda r: r.started_at), start=1):
            row.repetition = number


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
    if isinstance(document, dict) and _looks_like_pscheduler(document):
        return _from_pscheduler(document, base)
    try:
        result = iperf3.parse(text)
    except iperf3.NoResultError as exc:
        raise InputError(
            "files", f"neither iperf3 JSON nor a pScheduler result, or one cut short ({exc})"
        ) from exc
    except iperf3.Iperf3Error as exc:
        raise InputError("files", str(exc)) from exc
    return _from_iperf3(result, base)


def _from_iperf3(result: iperf3.Iperf3Result, row: Row) -> Row:
    start = result.raw.get("start", {})
    test_start = start.get("test_start", {})
    stamp = start.get("timestamp", {}).get("timesecs")
    if stamp:
        row.started_at = datetime.fromtimestamp(float(stamp), UTC)
    row.streams = test_start.get("num_streams")
    row.duration_s = test_start.get("duration")
    row.throughput_gbps = result.goodput_bps / 1e9
    row.meta = {"tool_version": result.version, "system_info": result.system_info}
    if result.protocol == "UDP":
        row.test = "udp_throughput"
        row.extra.update(
            {
                "sent_gbps": result.sent_bps / 1e9,
                "lost": result.lost_packets,
                "packets": result.packets,
                "jitter_ms": result.jitter_ms,
            }
        )
        return row
    row.cc = result.raw.get("end", {}).get("sender_tcp_congestion")
    row.retransmits = result.retransmits
    row.rtt_ms = result.rtt_mean_ms
    row.rtt_std_ms = result.rtt_std_ms
    row.extra.update(result.series)
    return row


def _looks_like_pscheduler(document: dict[str, Any]) -> bool:
    return any(key in document for key in ("result-merged", "result", "summary", "succeeded"))


def _pscheduler_result(document: dict[str, Any]) -> dict[str, Any]:
    for candidate in (document.get("result-merged"), document.get("result"), document):
        if isinstance(candidate, dict) and ("summary" in candidate or "succeeded" in candidate):
            return candidate
    raise InputError("files", "a pScheduler run without a result")


def _from_pscheduler(document: dict[str, Any], row: Row) -> Row:
    result = _pscheduler_result(document)
    if result.get("succeeded") is False:
        raise InputError(
            "files", f"the pScheduler run failed: {result.get('error') or 'no reason given'}"
        )
    try:
        summary = result["summary"]["summary"]
        row.throughput_gbps = float(summary["throughput-bits"]) / 1e9
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(
            "files", f"a pScheduler result without summary.summary.throughput-bits ({exc!r})"
        ) from exc
    row.tool = "pscheduler"
    row.streams = len(result["summary"].get("streams", [])) or None
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
    row.meta = {"tool_version": document.get("tool")} if document.get("tool") else None
    return row


def _float(value: Any) -> float | None:
    return None if value is None else float(value)
