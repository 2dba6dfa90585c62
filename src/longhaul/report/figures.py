"""The USN figures, drawn with matplotlib from a results table (rows.COLUMNS).

Each function returns a figure and its caption (what it shows, from which source, with
which parameters), or None when the table holds nothing for it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure  # not pyplot: figures are freed with their last reference

from longhaul.analysis import channel, jitter, normalize, profiles
from longhaul.analysis.segmented import k_label
from longhaul.topology.circuits import miles_label


@dataclass(frozen=True)
class EchoSamples:
    """The RTT samples of one jitter-suite setting, all repetitions together."""

    length_miles: float
    variant: str
    message_bytes: int
    samples_ms: list[float]
    rows: pd.DataFrame


def echo_samples(frame: pd.DataFrame) -> list[EchoSamples]:
    """The echo_jitter runs grouped by length, variant and message size (those with
    samples), in that order."""
    rows = frame[frame["test"] == "echo_jitter"]
    found = []
    for key, group in rows.groupby(["length_miles", "variant", "message_bytes"]):
        miles, variant, size = cast(tuple[float, str, int], key)
        samples = [s for extra in group["extra"] for s in (extra or {}).get("rtt_samples_ms", [])]
        if samples:
            found.append(EchoSamples(float(miles), str(variant), int(size), samples, group))
    return found


@dataclass(frozen=True)
class Drawn:
    name: str
    """The file name (without extension) and the anchor in the report."""
    title: str
    caption: str
    figure: Figure


def _sources(frame: pd.DataFrame) -> str:
    return ", ".join(sorted(frame["source"].dropna().unique())) or "no rows"


def _tcp(frame: pd.DataFrame) -> pd.DataFrame:
    tcp = frame[(frame["test"] == "tcp_throughput") & (frame["cross_traffic_gbps"] == 0)]
    return tcp.dropna(subset=["throughput_gbps", "streams", "length_miles"])


def distance_profiles(frame: pd.DataFrame) -> list[Drawn]:
    """T(d, n) per congestion control: a heatmap over (length, streams)."""
    tcp = _tcp(frame)
    drawn = []
    for (cc, source), rows in tcp.groupby(["cc", "source"]):
        table = profiles.distance_profile(rows)
        figure = Figure(figsize=(7, 3.2), layout="constrained")
        axes = figure.subplots()
        _heatmap(axes, table, "streams n", "length (miles)", figure)
        name = _profile_name(tcp, str(cc), str(source))
        axes.set_title(f"Distance profile T(d, n), {name}")
        reps = rows["repetition"].nunique()
        caption = (
            f"Mean throughput (Gb/s) over {reps} repetition(s) for each connection "
            f"length and number of parallel streams; {cc}; source: {_sources(rows)}."
        )
        slug = _file_slug(name)
        drawn.append(Drawn(f"distance-{slug}", f"Distance profile, {name}", caption, figure))
    return drawn


def stability_profiles(frame: pd.DataFrame) -> list[Drawn]:
    """T(d, n) repetition by repetition at each length: a heatmap over (repetition, n)."""
    tcp = _tcp(frame)
    drawn = []
    for key, rows in tcp.groupby(["cc", "source", "length_miles"]):
        cc, source, miles = cast(tuple[str, str, float], key)
        if rows["repetition"].nunique() < 2:
            continue
        table = profiles.stability_profile(rows, float(miles))
        figure = Figure(figsize=(7, 2.6), layout="constrained")
        axes = figure.subplots()
        _heatmap(axes, table, "streams n", "repetition", figure)
        label = miles_label(float(miles))
        cc = _profile_name(tcp, str(cc), str(source))
        axes.set_title(f"Stability profile at {label} miles, {cc}")
        caption = (
            f"Throughput (Gb/s) of each repetition and number of streams at {label} "
            f"miles; {cc}; source: {_sources(rows)}."
        )
        drawn.append(
            Drawn(
                f"stability-{_file_slug(cc)}-{_slug(miles)}",
                f"Stability, {cc}, {label} mi",
                caption,
                figure,
            )
        )
    return drawn


def throughput_by_length(
    frame: pd.DataFrame, published: pd.DataFrame | None, streams: tuple[int, int]
) -> Drawn | None:
    """T̄(d) per congestion control, with published USN values beside it."""
    tcp = _tcp(frame)
    if tcp.empty:
        return None
    figure = Figure(figsize=(7, 3.6), layout="constrained")
    axes = figure.subplots()
    for (cc, source), rows in tcp.groupby(["cc", "source"]):
        means = profiles.mean_over_streams(rows, streams)
        drawn = axes.errorbar(
            means["length_miles"],
            means["mean_gbps"],
            yerr=means["std_gbps"],
            marker="o",
            capsize=3,
            label=f"{cc} ({source})",
        )
        _draw_fit(axes, rows, streams, drawn.lines[0].get_color())
    if published is not None and not published.empty:
        for name, rows in published.groupby("cc"):
            axes.plot(
                rows["miles"],
                rows["avg_gbps"],
                linestyle="--",
                marker="s",
                alpha=0.6,
                label=f"{name!s} (published, USN hosts)",
            )
    _throughput_axes(axes, "connection length (miles)")
    low, high = streams
    caption = (
        f"T̄(d): mean throughput over n = {low}..{high} streams (those measured) and "
        "the repetitions, with one standard deviation, and dotted its k-segmented "
        f"regression (k chosen by the VC bound); source: {_sources(tcp)}."
    )
    if published is not None and not published.empty:
        caption += (
            " Dashed: the published USN profiles (BIC and HTCP on the 2008 hosts, "
            "measured), for comparison."
        )
    return Drawn("throughput-by-length", "Throughput against length", caption, figure)


def ib_profiles(frame: pd.DataFrame) -> list[Drawn]:
    """T_B(d, s) per InfiniBand profile: throughput against message size, a line per
    length (USN's InfiniBand RDMA profile)."""
    table = profiles.ib_size_profile(frame)
    drawn = []
    for (variant, source), rows in table.groupby(list(profiles.IB_PROFILE)):
        figure = Figure(figsize=(7, 3.6), layout="constrained")
        axes = figure.subplots()
        for miles, group in rows.groupby("length_miles"):
            line = group.sort_values("message_bytes")
            axes.plot(
                line["message_bytes"],
                line["mean_gbps"],
                marker="o",
                markersize=3,
                label=f"{miles_label(float(str(miles)))} mi",
            )
        axes.set_xscale("log", base=2)
        _throughput_axes(axes, "message size (bytes)")
        caption = (
            f"T_B(d, s): InfiniBand {variant} throughput (payload, 10^9 bits/s) against "
            "message size, a line per connection length, as perftest measures it (first "
            f"post to last completion); source: {source}."
        )
        name = f"ib-profile-{_file_slug(f'{variant}-{source}')}"
        drawn.append(Drawn(name, f"InfiniBand {variant} by message size", caption, figure))
    return drawn


def ib_beside_tcp(frame: pd.DataFrame, streams: tuple[int, int]) -> Drawn | None:
    """InfiniBand's throughput against length (at its largest message) beside each TCP
    profile's T̄(d): the comparison USN drew, on the same lengths."""
    ib = profiles.ib_means_at_largest(frame)
    tcp = _tcp(frame)
    if not ib or tcp.empty:
        return None
    figure = Figure(figsize=(7, 3.6), layout="constrained")
    axes = figure.subplots()
    for (cc, source), rows in tcp.groupby(["cc", "source"]):
        means = profiles.mean_over_streams(rows, streams)
        axes.plot(
            means["length_miles"], means["mean_gbps"], marker="o", label=f"TCP {cc} ({source})"
        )
    for (variant, source, size), means in ib.items():
        axes.plot(
            means["length_miles"],
            means["mean_gbps"],
            marker="s",
            linestyle="--",
            label=f"IB {variant}, {size:,} B ({source})",
        )
    _throughput_axes(axes, "connection length (miles)")
    low, high = streams
    caption = (
        f"TCP's T̄(d) (mean over n = {low}..{high} streams) and InfiniBand's throughput at "
        "its largest message size, on the same lengths: how much each loses per mile."
    )
    return Drawn("ib-beside-tcp", "InfiniBand beside TCP", caption, figure)


def _throughput_axes(axes: Axes, x_label: str) -> None:
    """Throughput in Gb/s from zero against `x_label`, with a grid and a legend."""
    axes.set_xlabel(x_label)
    axes.set_ylabel("throughput (Gb/s)")
    axes.set_ylim(bottom=0)
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8)


def _draw_fit(axes: Axes, rows: pd.DataFrame, streams: tuple[int, int], color: Any) -> None:
    """The k-segmented regression of the runs in the stream range, dotted."""
    inside = profiles.in_stream_range(rows, streams)
    if inside["length_miles"].nunique() < 2:
        return
    fit = normalize.fit_table(inside.loc[:, ["length_miles", "throughput_gbps"]], "throughput_gbps")
    lengths = np.linspace(*fit.span_miles, 200)
    label = f"fit ({k_label(fit.k)})"
    axes.plot(lengths, fit.estimate(lengths), linestyle=":", color=color, label=label)


def cross_traffic(frame: pd.DataFrame) -> Drawn | None:
    """Throughput against the rate of UDP cross-traffic, per length and stream count."""
    rows = frame[frame["test"] == "tcp_throughput"].dropna(subset=["throughput_gbps"])
    crossed_lengths = rows[rows["cross_traffic_gbps"] > 0]["length_miles"].unique()
    rows = rows[rows["length_miles"].isin(crossed_lengths)]
    if rows.empty:
        return None
    table = profiles.cross_traffic_profile(rows)
    figure = Figure(figsize=(7, 3.4), layout="constrained")
    axes = figure.subplots()
    for key, group in table.groupby(["length_miles", "streams"]):
        miles, streams = cast(tuple[float, int], key)
        axes.plot(
            group["cross_traffic_gbps"],
            group["mean_gbps"],
            marker="o",
            label=f"{miles_label(float(miles))} mi, n = {int(streams)}",
        )
    axes.set_xlabel("UDP cross-traffic (Gb/s)")
    axes.set_ylabel("TCP throughput (Gb/s)")
    axes.set_ylim(bottom=0)
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8)
    caption = (
        "Cross-traffic profile: TCP throughput while real UDP from the cross-traffic "
        "host crosses the same circuit at each rate (no cross-traffic at 0); source: "
        f"{_sources(rows)}."
    )
    return Drawn("cross-traffic", "Cross-traffic profile", caption, figure)


def jitter_histograms(frame: pd.DataFrame) -> list[Drawn]:
    """RTT samples of the jitter suite: per length, a histogram per variant and size."""
    by_length: dict[float, list[EchoSamples]] = {}
    for echo in echo_samples(frame):
        by_length.setdefault(echo.length_miles, []).append(echo)
    drawn = []
    for miles, settings in by_length.items():
        figure = Figure(figsize=(3.2 * len(settings), 2.8), layout="constrained")
        axes_list = figure.subplots(1, len(settings), squeeze=False)
        for axes, echo in zip(axes_list[0], settings, strict=True):
            stats = jitter.statistics(echo.samples_ms)
            axes.hist(echo.samples_ms, bins=jitter.bins(echo.samples_ms), color="#2b6cb0")
            axes.set_title(f"{echo.variant}, {echo.message_bytes:,} B", fontsize=9)
            axes.set_xlabel("RTT (ms)", fontsize=8)
            axes.text(
                0.98,
                0.95,
                f"std {stats.std_pct:.2f} %\nrange {stats.range_pct:.2f} %",
                transform=axes.transAxes,
                ha="right",
                va="top",
                fontsize=7,
            )
        label = miles_label(miles)
        rows = pd.concat([echo.rows for echo in settings])
        caption = (
            f"Jitter suite at {label} miles: round-trip times of TCP exchanges, the "
            "message echoed back (echo) or a size asked for and sent back (size); std "
            f"and range as % of the mean; source: {_sources(rows)}."
        )
        drawn.append(Drawn(f"jitter-{_slug(miles)}", f"Jitter, {label} mi", caption, figure))
    return drawn


def jitter_by_layer(frame: pd.DataFrame) -> Drawn | None:
    """USN's layer comparison of jitter: the jitter suite's RTT spread (std as % of the
    mean) per message size, one bar per layer the runs crossed (a circuit's framing, or a
    packet-switched core's queueing), when the table holds more than one."""
    echo = frame[frame["test"] == "echo_jitter"]
    if echo.empty or "meta" not in echo.columns:
        return None
    labelled = echo.assign(layer=echo["meta"].map(_layer_label))
    if labelled["layer"].nunique() < 2:
        return None
    spreads = []
    for key, group in labelled.groupby(["layer", "variant", "message_bytes"]):
        layer, variant, size = cast(tuple[str, str, int], key)
        samples = [s for extra in group["extra"] for s in (extra or {}).get("rtt_samples_ms", [])]
        if len(samples) > 1:
            stats = jitter.statistics(samples)
            spreads.append((str(layer), f"{variant}, {int(size):,} B", stats.std_pct))
    if not spreads:
        return None
    table = pd.DataFrame(spreads, columns=["layer", "setting", "std_pct"])
    pivot = table.pivot_table(index="setting", columns="layer", values="std_pct")
    figure = Figure(figsize=(7, 3.0), layout="constrained")
    axes = figure.subplots()
    width = 0.8 / len(pivot.columns)
    for i, layer in enumerate(pivot.columns):
        positions = np.arange(len(pivot.index)) + i * width
        axes.bar(positions, pivot[layer].to_numpy(), width, label=str(layer))
    axes.set_xticks(np.arange(len(pivot.index)) + width * (len(pivot.columns) - 1) / 2)
    axes.set_xticklabels(list(pivot.index), fontsize=8)
    axes.set_ylabel("RTT std (% of mean)")
    axes.grid(alpha=0.3, axis="y")
    axes.legend(fontsize=7)
    caption = (
        "The jitter suite's round-trip spread by layer: each setting's standard deviation "
        "as % of its mean, for each layer and queueing the runs crossed (from each run's "
        f"record of its emulated line); source: {_sources(echo)}."
    )
    return Drawn("jitter-by-layer", "Jitter by layer", caption, figure)


def _layer_label(meta: Any) -> str:
    line = (meta or {}).get("emulator") if isinstance(meta, dict) else None
    if not isinstance(line, dict):
        return "unknown"
    layer = str(line.get("layer") or "ip")
    return f"{layer} + queueing {line['jitter']}" if line.get("jitter") else f"{layer} circuit"


def time_series(frame: pd.DataFrame) -> list[Drawn]:
    """Throughput over time, per interval, of one TCP run per length and source (the one
    with the most streams, its first repetition): each stream and their sum."""
    tcp = _tcp(frame)
    has_series = tcp["extra"].map(lambda extra: bool((extra or {}).get("interval_gbps")))
    with_series = tcp[has_series.astype(bool)]
    picked = [
        group.sort_values(["streams", "repetition"], ascending=[False, True]).iloc[0]
        for _, group in with_series.groupby(["source", "cc", "length_miles"])
    ]
    if not picked:
        return []
    drawn = []
    for (source, cc), rows in pd.DataFrame(picked).groupby(["source", "cc"]):
        runs = cast(list[dict[str, Any]], rows.sort_values("length_miles").to_dict("records"))
        figure = Figure(figsize=(3.0 * len(runs), 2.8), layout="constrained")
        axes_list = figure.subplots(1, len(runs), squeeze=False, sharey=True)
        for axes, run in zip(axes_list[0], runs, strict=True):
            _draw_series(axes, run["extra"])
            title = f"{miles_label(float(run['length_miles']))} mi, n = {int(run['streams'])}"
            axes.set_title(title, fontsize=9)
        axes_list[0][0].set_ylabel("throughput (Gb/s)")
        caption = (
            f"{cc} ({source}): the sender's rate per interval (warm-up left out) of one run "
            "per length, the one with the most streams: each stream (thin) and their sum "
            "(black)."
        )
        name = f"time-series-{cc}-{source}"
        drawn.append(Drawn(name, f"Over time, {cc} ({source})", caption, figure))
    return drawn


def _draw_series(axes: Axes, extra: dict[str, Any]) -> None:
    totals = extra["interval_gbps"]
    ends = extra.get("interval_end_s") or list(range(1, len(totals) + 1))
    streams = extra.get("stream_interval_gbps") or []
    if len(streams) > 1:
        for stream in streams:
            axes.plot(ends[: len(stream)], stream, linewidth=0.6, alpha=0.5)
    axes.plot(ends, totals, color="black", linewidth=1.6)
    axes.set_xlabel("time (s)", fontsize=8)
    axes.set_ylim(bottom=0)
    axes.grid(alpha=0.3)


RDMA_LAN_KNOBS = {"connections": 1, "reuse_pct": 100, "queue_entries": 0, "unexpected_entries": 0}
"""An rdma_lan row's settings besides interconnect, level and size, and their defaults
(`sim.rdma.RdmaPoint`)."""


def rdma_lan_by_size(frame: pd.DataFrame) -> list[Drawn]:
    """The rdma_lan runs (the simulator's iWARP, InfiniBand and Myri-10G): latency and
    ping-pong bandwidth against message size, a line per interconnect, level, place and
    setting of the knobs."""
    rows = frame[frame["test"] == "rdma_lan"]
    if rows.empty:
        return []
    lines: dict[str, list[tuple[int, float, float]]] = {}
    for _, row in rows.iterrows():
        extra = row["extra"] or {}
        knobs = ", ".join(
            f"{k} {extra[k]}"
            for k, default in RDMA_LAN_KNOBS.items()
            if extra.get(k, default) != default
        )
        place = f"{miles_label(float(row['length_miles']))} mi" if row["length_miles"] else "room"
        label = f"{row['variant']} ({place}{', ' + knobs if knobs else ''})"
        point = (
            int(row["message_bytes"]),
            float(extra["latency_us"]),
            float(extra["bandwidth_mb_s"]),
        )
        lines.setdefault(label, []).append(point)
    drawn = []
    for index, (what, unit) in enumerate((("latency", "µs"), ("bandwidth", "MB/s")), start=1):
        figure = Figure(figsize=(7, 3.6), layout="constrained")
        axes = figure.subplots()
        for label, points in sorted(lines.items()):
            points.sort()
            axes.plot(
                [p[0] for p in points],
                [p[index] for p in points],
                marker="o",
                markersize=3,
                label=label,
            )
        axes.set_xscale("log", base=2)
        if what == "latency":
            axes.set_yscale("log")
        axes.set_xlabel("message size (bytes)")
        axes.set_ylabel(f"{what} ({unit})")
        axes.grid(alpha=0.3)
        axes.legend(fontsize=7)
        caption = (
            f"RDMA on a LAN: ping-pong {what} against message size (bandwidth: bytes over "
            "half the round trip, 10^6 bytes/s), a line per interconnect and level, where "
            f"the hosts were and the knobs set; source: {_sources(rows)}. `longhaul sim "
            "rdma` explains the shapes from the models' mechanisms."
        )
        drawn.append(Drawn(f"rdma-lan-{what}", f"RDMA LAN {what} by message size", caption, figure))
    return drawn


def channel_profiles(frame: pd.DataFrame) -> list[Drawn]:
    """USN's channel throughput profile: Hurricane's goodput over T_s and W_c, one
    surface (a heat map) per loop, its maximum named in the caption."""
    runs = channel.profile_rows(frame)
    drawn = []
    for length, at in runs.groupby("length_miles"):
        miles = float(cast(float, length))
        table = channel.surface(at)
        figure = Figure(figsize=(6.5, 4), layout="constrained")
        axes = figure.subplots()
        _heatmap(axes, table, "W_c (datagrams per burst)", "T_s (µs idle after each)", figure)
        top = channel.best(at)
        caption = (
            f"Channel throughput profile, {miles_label(miles)} miles: Hurricane's goodput "
            "(Gb/s, mean of the repetitions) for each W_c and T_s, memory to memory at the "
            f"circuit's rate; the most, {top['goodput_gbps']:.3f} Gb/s, at W_c "
            f"{top['burst_datagrams']} and T_s {top['idle_us']:g} µs. "
            "`longhaul analyze channel-profile` gives the ridge and whether it is unimodal."
        )
        drawn.append(Drawn(f"channel-profile-{_slug(miles)}",
                           f"Channel throughput profile, {miles_label(miles)} mi", caption,
                           figure))  # fmt: skip
    return drawn


def rtt_cdfs(frame: pd.DataFrame) -> Drawn | None:
    """Empirical CDFs of the round-trip samples above each run's least: ping (idle) per
    length, and the jitter suite's exchanges per length, variant and size."""
    curves: list[tuple[str, str, list[float]]] = []
    pings = frame[frame["test"] == "rtt"]
    for miles, group in pings.groupby("length_miles"):
        samples = [s for extra in group["extra"] for s in (extra or {}).get("rtt_samples_ms", [])]
        if samples and _ping_resolves(samples, group["rtt_std_ms"]):
            curves.append(("ping", f"{miles_label(float(str(miles)))} mi", samples))
    for echo in echo_samples(frame):
        label = f"{miles_label(echo.length_miles)} mi, {echo.variant} {echo.message_bytes:,} B"
        curves.append(("echo", label, echo.samples_ms))
    if not curves:
        return None
    panels = [kind for kind in ("ping", "echo") if any(c[0] == kind for c in curves)]
    figure = Figure(figsize=(3.6 * len(panels), 3.0), layout="constrained")
    axes_list = figure.subplots(1, len(panels), squeeze=False)
    for axes, kind in zip(axes_list[0], panels, strict=True):
        for _, label, samples in (c for c in curves if c[0] == kind):
            above = np.sort(np.asarray(samples) - min(samples))
            axes.step(above, np.arange(1, above.size + 1) / above.size, where="post", label=label)
        axes.set_title("ping (idle)" if kind == "ping" else "jitter suite (TCP)", fontsize=9)
        axes.set_xlabel("RTT above the least (ms)", fontsize=8)
        axes.set_ylabel("share of samples", fontsize=8)
        axes.grid(alpha=0.3)
        axes.legend(fontsize=6)
    caption = (
        "How the round-trip times spread: the empirical CDF of each sample's excess over "
        "the least of its set (ping only where its three-digit times resolve the spread); "
        f"source: {_sources(frame)}."
    )
    return Drawn("rtt-cdf", "RTT distributions", caption, figure)


def _profile_name(tcp: pd.DataFrame, cc: str, source: str) -> str:
    """`cc`, or `cc (source)` where the table holds that cc from more than one source."""
    sources = tcp[tcp["cc"] == cc]["source"].nunique()
    return cc if sources == 1 else f"{cc} ({source})"


def _file_slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-")


def _ping_resolves(samples: list[float], std_ms: pd.Series) -> bool:
    """Whether ping's per-reply times resolve the spread they would draw: printed with
    three significant digits (1 ms steps above 100 ms), their step must stay under twice
    the std of ping's precise summary."""
    step_ms = 10 ** (math.floor(math.log10(max(*samples, 1e-3))) - 2)
    spread = std_ms.dropna()
    return bool(len(spread)) and float(spread.mean()) > step_ms / 2


def _slug(miles: float) -> str:
    """A file name and anchor for a length: `0.2`, `1400` (no commas in URLs)."""
    return miles_label(miles).replace(",", "")


def _heatmap(axes: Axes, table: pd.DataFrame, x: str, y: str, figure: Figure) -> None:
    values = table.to_numpy(dtype=float)
    image = axes.imshow(values, aspect="auto", cmap="viridis", origin="lower")
    axes.set_xticks(range(len(table.columns)), [str(c) for c in table.columns])
    names = [miles_label(float(i)) if y.startswith("length") else str(i) for i in table.index]
    axes.set_yticks(range(len(table.index)), names)
    axes.set_xlabel(x)
    axes.set_ylabel(y)
    low, high = np.nanmin(values), np.nanmax(values)
    for (row, column), value in np.ndenumerate(values):
        if np.isfinite(value):
            axes.text(
                column,
                row,
                f"{value:.2f}",
                ha="center",
                va="center",
                fontsize=7,
                # Dark cells of viridis need light text.
                color="white" if value - low < (high - low) / 2 else "black",
            )
    figure.colorbar(image, ax=axes, label="Gb/s")
