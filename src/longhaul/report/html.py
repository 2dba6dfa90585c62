"""Writing a report: figures to PNG and SVG, tables, all into one HTML page."""

from __future__ import annotations

import io
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jinja2
import pandas as pd

from longhaul import __version__
from longhaul.analysis import jitter, normalize, profiles, quality, reference
from longhaul.analysis.segmented import k_label
from longhaul.report import figures
from longhaul.report.figures import Drawn
from longhaul.topology.circuits import miles_label

STREAMS_RANGE = (5, 15)
"""USN averaged over n = 5..15 streams; where fewer were measured, over those there are."""

_TEMPLATES = jinja2.Environment(
    loader=jinja2.PackageLoader("longhaul.report", "templates"),
    autoescape=jinja2.select_autoescape(["html"]),
)


def write_report(
    frame: pd.DataFrame,
    folder: Path,
    campaign: str,
    reference: bool = True,
    against: str | None = None,
) -> Path:
    """Write `folder/index.html` (and a PNG and an SVG of each figure); its path. Runs the
    emulator could not honestly produce are left out, and listed. With `against`, the
    frame holds two campaigns' rows: each figure draws both (the source names the
    campaign), and a table compares them congestion control by congestion control."""
    folder.mkdir(parents=True, exist_ok=True)
    split = quality.usable(frame)
    frame = split.rows
    if against is not None:
        frame = frame.assign(source=frame["source"] + " (" + frame["campaign"] + ")")
    published = _published_profiles() if reference else None
    streams = _streams_range(frame)
    drawn: list[Drawn] = [
        *figures.distance_profiles(frame),
        *figures.stability_profiles(frame),
        *[d for d in (figures.throughput_by_length(frame, published, streams),) if d],
        *[d for d in (figures.cross_traffic(frame),) if d],
        *figures.ib_profiles(frame),
        *[d for d in (figures.ib_beside_tcp(frame, streams),) if d],
        *figures.rdma_lan_by_size(frame),
        *figures.channel_profiles(frame),
        *figures.jitter_histograms(frame),
        *[d for d in (figures.jitter_by_layer(frame),) if d],
        *figures.time_series(frame),
        *[d for d in (figures.rtt_cdfs(frame),) if d],
    ]
    shown = [save_figure(d, folder) for d in drawn]
    page = _TEMPLATES.get_template("report.html").render(
        campaign=campaign,
        written=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        version=__version__,
        rows=len(frame),
        sources=sorted(frame["source"].dropna().unique()) if len(frame) else [],
        figures=shown,
        tables=_tables(frame, streams),
        ib_tables=_ib_tables(frame),
        ib_cross=_ib_cross_table(frame),
        dpm_side_by_side=_dpm_side_by_side(frame, streams),
        published=None if published is None else published.to_dict("records"),
        rtts=_rtt_table(frame),
        variants=_variant_table(frame),
        jitter=_jitter_table(frame),
        left_out_note=split.note(),
        left_out=_left_out_table(split.left_out),
        made=_made_table(frame),
        against=[] if published is None else _against_published(frame, published, streams),
        campaigns=[] if against is None else _against_campaign(frame, streams, against),
    )
    path = folder / "index.html"
    path.write_text(page, encoding="utf-8")
    return path


def _against_published(
    frame: pd.DataFrame, published: pd.DataFrame, streams: tuple[int, int]
) -> list[dict[str, Any]]:
    """Each congestion control the published profiles have, as measured here (by source),
    fitted by k-segmented regression and set against the published means joined."""
    tcp = profiles.in_stream_range(profiles.tcp_rows(frame), streams)
    found = []
    for (cc, source), rows in tcp.groupby(["cc", "source"]):
        theirs = published[published["cc"] == cc].sort_values("miles")
        if theirs.empty or rows["length_miles"].nunique() < 2:
            continue
        ours = rows.loc[:, ["length_miles", "throughput_gbps"]]
        fit = normalize.fit_table(ours, "throughput_gbps")
        curve = normalize.joined_means(theirs["miles"], theirs["avg_gbps"])
        compared = normalize.compare_fits(fit, curve, labels=(str(source), "published"))
        low, high = normalize.bootstrap_mean_difference(ours, curve, "throughput_gbps")
        means = profiles.mean_over_streams(rows, streams)
        found.append(
            {
                "cc": cc,
                "source": source,
                "k": "the line" if fit.k == -1 else f"k = {fit.k}",
                "anchors": ", ".join(f"{miles_label(a)} mi" for a in fit.anchors_miles),
                **_difference_cells(compared, (low, high)),
                "lines": [
                    {
                        "miles": miles_label(float(m["length_miles"])),
                        "ours": f"{m['mean_gbps']:.2f}",
                        "fit": f"{fit.estimate(float(m['length_miles'])):.2f}",
                        "published": _number(curve.estimate(float(m["length_miles"])), ".2f", ""),
                    }
                    for m in means.to_dict("records")
                ],
            }
        )
    return found


def _against_campaign(
    frame: pd.DataFrame, streams: tuple[int, int], second: str
) -> list[dict[str, str]]:
    """Each congestion control both campaigns ran (`second` and the other one in the
    frame): their fits compared over the lengths both measured, with a bootstrap interval
    for the difference."""
    others = [str(name) for name in frame["campaign"].unique() if name != second]
    if not others:
        return []
    first = others[0]
    tcp = profiles.in_stream_range(profiles.tcp_rows(frame), streams)
    found = []
    for cc, rows in tcp.groupby("cc"):
        sides = [rows[rows["campaign"] == name] for name in (first, second)]
        if any(side["length_miles"].nunique() < 2 for side in sides):
            continue
        tables = [side.loc[:, ["length_miles", "throughput_gbps"]] for side in sides]
        fits = [normalize.fit_table(table, "throughput_gbps") for table in tables]
        compared = normalize.compare_fits(fits[0], fits[1], labels=(first, second))
        low, high = normalize.bootstrap_mean_difference(tables[0], tables[1], "throughput_gbps")
        if low > 0 or high < 0:
            verdict = f"{compared.better_on_average} is better beyond chance"
        else:
            verdict = "neither is better beyond chance"
        found.append(
            {
                "cc": str(cc),
                "ks": " / ".join(k_label(f.k) for f in fits),
                **_difference_cells(compared, (low, high)),
                "verdict": verdict,
            }
        )
    return found


def _difference_cells(
    compared: normalize.Comparison, interval: tuple[float, float]
) -> dict[str, str]:
    """A comparison's span, mean difference and interval, as table cells."""
    low, high = interval
    start, end = compared.span_miles
    return {
        "span": f"{start:,.1f}-{end:,.0f} miles",
        "difference": f"{compared.mean_difference:+.2f}",
        "interval": f"[{low:+.2f}, {high:+.2f}]",
    }


_MADE = (
    ("host", ("host",)), ("kernel", ("kernel",)), ("CPU", ("cpu",)), ("tool", ("tool_version",)),
    ("emulator", ("emulator", "version")), ("layer", ("emulator", "layer")),
    ("MTU (bytes)", ("mtu_bytes",)), ("net.ipv4.tcp_rmem", ("sysctls", "net.ipv4.tcp_rmem")),
    ("net.ipv4.tcp_wmem", ("sysctls", "net.ipv4.tcp_wmem")),
    ("net.core.rmem_max", ("sysctls", "net.core.rmem_max")),
)  # fmt: skip
"""What the report shows of each row's `meta`, and where it is."""


def _made_table(frame: pd.DataFrame) -> list[dict[str, str]]:
    """Each recorded setting with the distinct values the runs had (a mix shows)."""
    if "meta" not in frame.columns:
        return []
    metas = [m for m in frame["meta"] if isinstance(m, dict)]
    found = []
    for what, path in _MADE:
        values = sorted({str(v) for v in (_dig(m, path) for m in metas) if v is not None})
        if values:
            found.append({"what": what, "seen": "; ".join(values)})
    return found


def _dig(data: dict[str, Any], path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(data, dict):
            return None
        data = data.get(key)  # type: ignore[assignment]
    return data


def _left_out_table(left_out: pd.DataFrame) -> list[dict[str, str]]:
    return [
        {
            "run": f"{r['test']} on {r['connection']}, repetition {r['repetition']}"
            + (f", {r['cc']} x {int(r['streams'])}" if pd.notna(r.get("streams")) else ""),
            "why": quality.reasons(r),
        }
        for _, r in left_out.iterrows()
    ]


def save_figure(drawn: Drawn, folder: Path) -> dict[str, str]:
    drawn.figure.savefig(folder / f"{drawn.name}.png", dpi=130)
    drawn.figure.savefig(folder / f"{drawn.name}.svg")
    svg = io.StringIO()
    drawn.figure.savefig(svg, format="svg")
    text = svg.getvalue()
    inline = text[text.index("<svg") :]  # without the XML prolog, to sit inside HTML
    return {"name": drawn.name, "title": drawn.title, "caption": drawn.caption, "svg": inline}


def _streams_range(frame: pd.DataFrame) -> tuple[int, int]:
    measured = sorted(frame["streams"].dropna().unique())
    low, high = STREAMS_RANGE
    inside = [int(n) for n in measured if low <= n <= high]
    if inside:
        return inside[0], inside[-1]
    return (int(measured[0]), int(measured[-1])) if measured else STREAMS_RANGE


def _tables(frame: pd.DataFrame, streams: tuple[int, int]) -> list[dict[str, Any]]:
    """Per congestion control: T̄ and its std at each length, and the DPM."""
    tcp = frame[(frame["test"] == "tcp_throughput") & (frame["cross_traffic_gbps"] == 0)]
    tcp = tcp.dropna(subset=["throughput_gbps", "streams", "length_miles"])
    tables = []
    for (cc, source), rows in tcp.groupby(["cc", "source"]):
        means = profiles.mean_over_streams(rows, streams)
        dpm = profiles.decrease_per_mile(means)
        several = tcp[tcp["cc"] == cc]["source"].nunique() > 1
        lines = []
        for entry in means.to_dict("records"):
            miles = float(entry["length_miles"])
            lines.append(
                {
                    "miles": miles_label(miles),
                    "mean_gbps": f"{entry['mean_gbps']:.2f}",
                    # One run has no sample standard deviation: say so, not "nan".
                    "std_mbps": _number(entry["std_gbps"] * 1000, ".2f", "– (one run)"),
                    "dpm": _dpm_text(dpm.get(miles)),
                }
            )
        tables.append(
            {
                "cc": f"{cc} ({source})" if several else cc,
                "streams": f"{streams[0]}..{streams[1]}",
                "sources": ", ".join(sorted(rows["source"].unique())),
                "lines": lines,
                "average_dpm": _dpm_text(profiles.average_dpm(dpm)),
            }
        )
    return tables


def _ib_tables(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Per InfiniBand profile, at its largest message: throughput and its std at each
    length, and the DPM."""
    tables = []
    for (variant, source, size), means in profiles.ib_means_at_largest(frame).items():
        dpm = profiles.decrease_per_mile(means)
        tables.append(
            {
                "what": f"InfiniBand {variant} ({source})",
                "size": f"{size:,}",
                "lines": [
                    {
                        "miles": miles_label(float(m["length_miles"])),
                        "mean_gbps": f"{m['mean_gbps']:.3f}",
                        "std_mbps": _number(m["std_gbps"] * 1000, ".2f", "– (one run)"),
                        "dpm": _dpm_text(dpm.get(float(m["length_miles"]))),
                    }
                    for m in means.to_dict("records")
                ],
                "average_dpm": _dpm_text(profiles.average_dpm(dpm)),
            }
        )
    return tables


def _ib_cross_table(frame: pd.DataFrame) -> list[dict[str, str]]:
    """InfiniBand throughput beside cross traffic, per length, size and rate."""
    table = profiles.ib_cross_traffic_profile(frame)
    return [
        {
            "what": f"{r['variant']} ({r['source']})",
            "miles": miles_label(float(r["length_miles"])),
            "size": f"{int(r['message_bytes']):,}",
            "cross": f"{r['cross_traffic_gbps']:g}",
            "gbps": f"{r['mean_gbps']:.3f}",
        }
        for r in table.to_dict("records")
    ]


def _dpm_side_by_side(frame: pd.DataFrame, streams: tuple[int, int]) -> list[dict[str, str]]:
    """Average DPM of every TCP and InfiniBand profile in the table, where there are both."""
    ib = profiles.ib_means_at_largest(frame)
    tcp = frame[(frame["test"] == "tcp_throughput") & (frame["cross_traffic_gbps"] == 0)]
    tcp = tcp.dropna(subset=["throughput_gbps", "streams", "length_miles"])
    if not ib or tcp.empty:
        return []
    found = []
    for (cc, source), rows in tcp.groupby(["cc", "source"]):
        dpm = profiles.decrease_per_mile(profiles.mean_over_streams(rows, streams))
        found.append({"what": f"TCP {cc} ({source})", "dpm": _dpm_text(profiles.average_dpm(dpm))})
    for (variant, source, size), means in ib.items():
        dpm = profiles.decrease_per_mile(means)
        what = f"InfiniBand {variant}, {size:,} B ({source})"
        found.append({"what": what, "dpm": _dpm_text(profiles.average_dpm(dpm))})
    return found


def _dpm_text(value: float | None) -> str:
    return _number(value, ".3f", "")


def _number(value: float | None, form: str, missing: str) -> str:
    """`value` formatted, or `missing` where there is none (None or NaN)."""
    return missing if value is None or not math.isfinite(value) else format(value, form)


def _variant_table(frame: pd.DataFrame) -> list[dict[str, str]]:
    """TCP through middleboxes (`profiles.variant_profile`): one line per variant."""
    table = profiles.variant_profile(frame)
    return [
        {"cc": str(r["cc"]), "source": str(r["source"]),
         "miles": miles_label(float(r["length_miles"])), "variant": str(r["variant"]),
         "streams": str(int(r["streams"])), "mean_gbps": f"{r['mean_gbps']:.2f}",
         "std_gbps": _number(r["std_gbps"], ".2f", "–"), "runs": str(int(r["count"]))}
        for _, r in table.iterrows()
    ]  # fmt: skip


def _rtt_table(frame: pd.DataFrame) -> list[dict[str, str]]:
    rows = frame[frame["test"] == "rtt"].dropna(subset=["rtt_ms"])
    found = []
    for miles, group in rows.groupby("length_miles"):
        found.append(
            {
                "miles": miles_label(float(str(miles))),
                "rtt_ms": f"{group['rtt_ms'].mean():.3f}",
                "mdev_ms": _number(group["rtt_std_ms"].mean(), ".3f", "–"),
                "sources": ", ".join(sorted(group["source"].unique())),
            }
        )
    return found


def _jitter_table(frame: pd.DataFrame) -> list[dict[str, str]]:
    """USN's jitter statistics of each sample set: idle ping per length, then the jitter
    suite per length, variant and size."""
    found = []
    pings = frame[frame["test"] == "rtt"].dropna(subset=["rtt_ms", "rtt_std_ms"])
    for miles, group in pings.groupby("length_miles"):
        # From ping's summaries, which are precise to the microsecond: its per-reply
        # times have three significant digits (1 ms steps above 100 ms).
        mean_ms = float(group["rtt_ms"].mean())
        pooled_var = float((group["rtt_std_ms"] ** 2 + group["rtt_ms"] ** 2).mean()) - mean_ms**2
        lows = _extra_values(group, "rtt_min_ms")
        highs = _extra_values(group, "rtt_max_ms")
        spread = max(highs) - min(lows) if lows and highs else math.nan
        found.append(
            {
                "miles": miles_label(float(str(miles))),
                "variant": "ping (idle)",
                "size": "",
                "mean_ms": f"{mean_ms:.3f}",
                "range_pct": _number(100 * spread / mean_ms, ".2f", "–"),
                "std_pct": f"{100 * math.sqrt(max(pooled_var, 0.0)) / mean_ms:.2f}",
            }
        )
    for echo in figures.echo_samples(frame):
        stats = jitter.statistics(echo.samples_ms)
        found.append(
            {
                "miles": miles_label(echo.length_miles),
                "variant": echo.variant,
                "size": f"{echo.message_bytes:,}",
                "mean_ms": f"{stats.mean_ms:.3f}",
                "range_pct": f"{stats.range_pct:.2f}",
                "std_pct": f"{stats.std_pct:.2f}",
            }
        )
    return found


def _extra_values(rows: pd.DataFrame, key: str) -> list[float]:
    return [float(e[key]) for e in rows["extra"] if isinstance(e, dict) and e.get(key) is not None]


def _published_profiles() -> pd.DataFrame:
    return reference.tcp_profiles()
