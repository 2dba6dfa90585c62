"""The RDMA LAN report: iWARP, InfiniBand and Myri-10G side by side in the simulator, as
Rashti and Afsahi measured them and beyond (many connections, LogP, buffer re-use, MPI
queue length, and what-if over the USN loops), with the validation against the study.
Every figure comes from `longhaul-sim rdma` and its caption says which mechanism of the
model makes the trend, with the numbers of this run."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jinja2
from matplotlib.figure import Figure

from longhaul import __version__
from longhaul.report.figures import Drawn
from longhaul.report.html import save_figure
from longhaul.sim import rdma
from longhaul.sim.validation.against_rdma_lan import validate_rdma_lan

_TEMPLATES = jinja2.Environment(
    loader=jinja2.PackageLoader("longhaul.report", "templates"),
    autoescape=jinja2.select_autoescape(["html"]),
)


def _by_size(profiles: dict[str, Any], level: str, key: str, title: str, label: str) -> Figure:
    figure = Figure(figsize=(7, 3.6), layout="constrained")
    axes = figure.subplots()
    for name, profile in profiles.items():
        points = profile[level]
        axes.plot(
            [p["bytes"] for p in points],
            [p[key] for p in points],
            marker="o",
            markersize=3,
            label=rdma.LABELS[name],
        )
    axes.set_xscale("log", base=2)
    if key == "latency_us":
        axes.set_yscale("log")
    axes.set_xlabel("message size (bytes)")
    axes.set_ylabel(label)
    axes.set_title(title)
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize=8)
    return figure


def _profile_figures(profiles: dict[str, Any]) -> list[Drawn]:
    s = {name: p["summary"] for name, p in profiles.items()}
    lib = {name: p["mpi_library"] for name, p in profiles.items()}
    drawn = []
    for level, what in (("user", "user level (verbs, MX)"), ("mpi", "MPI")):
        drawn.append(
            Drawn(
                f"rdma-latency-{level}",
                f"Ping-pong latency, {what}",
                "Half the round trip against message size. Short messages cost the host's "
                "post and poll, a doorbell, the adapter's own time (fitted to the study's "
                "short-message latency) and one DMA read round trip; from a few KiB on, "
                "the slowest server of the path (bus or line) sets the slope"
                + (
                    ". Under MPI the copy through the library's buffers adds to eager "
                    "messages, and above the eager limit the rendezvous adds a round trip: "
                    + ", ".join(
                        f"{rdma.LABELS[n]} switches after {lib[n]['eager_limit_bytes']:,} B"
                        for n in profiles
                    )
                    + "."
                    if level == "mpi"
                    else "."
                ),
                _by_size(profiles, level, "latency_us", f"latency, {what}", "µs"),
            )
        )
        drawn.append(
            Drawn(
                f"rdma-bandwidth-{level}",
                f"Ping-pong bandwidth, {what}",
                "Bytes over half the round trip (the study's way). The peaks are the "
                "slowest part of each path: iWARP's internal PCI-X bus, whose split reads "
                "cost 10 clocks per 512 bytes beside 64 of data "
                f"({s['iwarp']['bus_read_mb_s']:.0f} MB/s at most); Myri-10G's PCIe x4 link, "
                "whose reads return in 64-byte completions of 84 bytes on the link "
                f"({s['mxom']['bus_read_mb_s']:.0f} MB/s); InfiniBand's 4X SDR line with "
                f"26 bytes of headers per 1 KiB packet ({s['ib']['user_peak_mb_s']:.0f} MB/s).",
                _by_size(profiles, level, "bandwidth_mb_s", f"bandwidth, {what}", "MB/s"),
            )
        )
    drawn.append(
        Drawn(
            "rdma-bothway-mpi",
            "Both-way bandwidth, MPI",
            "Both sides sending at once (bytes both ways per second). PCIe is full duplex, "
            "so InfiniBand and Myri-10G nearly double their one-way figures "
            f"({s['ib']['mpi_bothway_peak_mb_s']:.0f} and "
            f"{s['mxom']['mpi_bothway_peak_mb_s']:.0f} MB/s); iWARP's PCI-X bus carries the "
            "outgoing reads and the incoming writes in turn, so both ways together stay "
            f"under its 1,067 MB/s ({s['iwarp']['mpi_bothway_peak_mb_s']:.0f} MB/s).",
            _by_size(profiles, "mpi", "bothway_mb_s", "both-way bandwidth, MPI", "MB/s"),
        )
    )
    return drawn


def _lines(sweeps: dict[str, Any], x: str, y: str, xlabel: str, ylabel: str, log_x: bool) -> Figure:
    figure = Figure(figsize=(7, 3.4), layout="constrained")
    axes = figure.subplots()
    for name, points in sweeps.items():
        if points:
            axes.plot(
                [p[x] for p in points],
                [p[y] for p in points],
                marker="o",
                markersize=3,
                label=rdma.LABELS[name],
            )
    if log_x:
        axes.set_xscale("log", base=2)
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize=8)
    return figure


def _queue_figure(queue: dict[str, Any]) -> Figure:
    figure = _lines(queue, "entries", "latency_us", "queue entries", "µs", False)
    axes = figure.axes[0]
    for line, points in zip(list(axes.get_lines()), queue.values(), strict=True):
        axes.plot(
            [p["entries"] for p in points],
            [p["unexpected_latency_us"] for p in points],
            linestyle="--",
            color=line.get_color(),
        )
    return figure


def _rise(points: list[dict[str, Any]], x: str, y: str) -> tuple[Any, float]:
    """Where `y` first rises above its first value, and by how much at the end."""
    first = points[0][y]
    at = next((p[x] for p in points if p[y] > first + 1e-6), None)
    return at, points[-1][y] - first


def _slope_ns(points: list[dict[str, Any]]) -> float:
    """Latency added per queue entry, ns."""
    rise_us = float(points[-1]["latency_us"]) - float(points[0]["latency_us"])
    return rise_us * 1e3 / float(points[-1]["entries"])


def _sweep_figures(sweeps: dict[str, dict[str, Any]], ics: dict[str, Any]) -> list[Drawn]:
    connections = sweeps["connections"]
    rises = {n: _rise(points, "connections", "latency_us") for n, points in connections.items()}
    cache = {n: ics[n]["context"]["entries"] for n in ics}
    conn_text = "; ".join(
        f"{rdma.LABELS[n]}: "
        + (
            f"flat up to {cache[n]} (its context cache, an assumption), then +{r[1]:.2f} µs"
            if r[0] is not None
            else "flat" + (" (MX keeps no per-connection state)" if cache[n] is None else "")
        )
        for n, r in rises.items()
    )
    queue = sweeps["queue"]
    queue_text = "; ".join(
        f"{rdma.LABELS[n]} +{_slope_ns(p):.0f} ns per entry" for n, p in queue.items()
    )
    reuse = sweeps["reuse"]
    big = max(p["bytes"] for p in next(iter(reuse.values())))
    reuse_big = {n: [p for p in points if p["bytes"] == big] for n, points in reuse.items()}
    reuse_text = "; ".join(
        f"{rdma.LABELS[n]} {p[0]['latency_us']:.0f} µs at 0 % against {p[-1]['latency_us']:.0f}"
        " µs at 100 %"
        for n, p in reuse_big.items()
    )
    logp = sweeps["logp"]
    drawn = [
        Drawn(
            "rdma-connections",
            "Latency against connections",
            "A 1-byte user-level ping-pong rotating over N connections (each used once "
            "before timing). A connection's state that is not in the adapter's cache is "
            "fetched where it lives: host memory over PCIe for the MemFree InfiniBand HCA, "
            "the card's DDR2 for iWARP, nowhere for MX. Round-robin over more connections "
            "than the cache holds misses every time (LRU). " + conn_text + ".",
            _lines(connections, "connections", "latency_us", "connections", "µs", True),
        ),
        Drawn(
            "rdma-logp",
            "Parameterized LogP: the gap g",
            "g(m), the time between messages in a stream of MPI sends, against size: for "
            "messages of up to a few hundred bytes the sender's CPU time per send sets it "
            "(o_s: posting and half the library's own time); above that the slowest server "
            "of the path does, and g is bytes over the peak bandwidth. The eager copy shows "
            "in o_s and o_r (the table below), not in g, because the copy of one message "
            "overlaps the DMA of the one before.",
            _lines(logp, "bytes", "g_us", "message size (bytes)", "g (µs)", True),
        ),
        Drawn(
            "rdma-reuse",
            f"Buffer re-use, {big // 1024} KiB MPI messages",
            "Latency of a rendezvous-size ping-pong against the share of sends whose "
            "buffers were registered before. A new buffer must be pinned and its pages "
            "written to the adapter's translation table before the zero-copy transfer, at "
            "both ends, every time it is new (10 µs + 0.25 µs a page, an assumption); eager "
            "messages copy into pre-registered buffers and do not care (1 KiB: flat). "
            + reuse_text
            + ".",
            _lines(reuse_big, "reuse_pct", "latency_us", "buffers re-used (%)", "µs", False),
        ),
        Drawn(
            "rdma-queue",
            "Latency against MPI's queue lengths",
            "A 1-byte MPI ping-pong. Solid: N non-matching receives posted ahead of the one "
            "that matches, each passed over in turn as the message arrives, by the host's "
            "MPI library for MPICH2-iWARP and MVAPICH2 (a list node not in cache per entry, "
            "0.1 µs, an assumption) and by the NIC's firmware for MX (0.2 µs, an "
            "assumption: a slower processor, though it spares the host's CPU): "
            + queue_text
            + ". Dashed: N unexpected messages queued, searched when each receive is posted, "
            "right after the send: the search hides behind the message's flight until it "
            "outlasts the round trip, then costs half as much as the posted queue's walk "
            "(one search per round trip).",
            _queue_figure(queue),
        ),
        Drawn(
            "rdma-wan",
            "What-if: the interconnects over USN loops",
            "1 MiB messages streamed with enough outstanding to cover twice the loop's "
            "bandwidth-delay product, the switch ports a loop apart. What is left is each "
            "interconnect's own window: iWARP's offload TCP window (256 KiB, an assumption), "
            "MX's pull window (128 KiB, from Open-MX's MX-compatible constants), "
            "InfiniBand's range extenders' buffer (256 MiB, as the IB model): "
            "throughput = window / RTT until the bus or line caps it. Myrinet itself "
            "cannot leave the machine room and is not drawn.",
            _lines(sweeps["wan"], "miles", "stream_mb_s", "loop (miles)", "MB/s", False),
        ),
    ]
    for figure in (drawn[1].figure, drawn[-1].figure):
        figure.axes[0].set_yscale("log")
    return drawn


def _validation_rows(validation: dict[str, Any]) -> list[dict[str, str]]:
    return [
        {
            "what": c["what"],
            "unit": c["unit"],
            "published": f"{c['published']:g}",
            "sim": f"{c['sim']:g}",
            "error": f"{c['error']:+.1%}",
            "rule": c["rule"],
            "basis": c["basis"],
            "within": "yes" if c["within"] else "no",
        }
        for c in validation["cases"]
    ]


def _summary_rows(profiles: dict[str, Any]) -> list[dict[str, str]]:
    rows = []
    for name, p in profiles.items():
        s = p["summary"]
        rows.append(
            {
                "what": rdma.LABELS[name],
                "latency": f"{s['user_latency_us']:.2f}",
                "mpi_latency": f"{s['mpi_latency_us']:.2f}",
                "peak": f"{s['user_peak_mb_s']:.0f}",
                "mpi_peak": f"{s['mpi_peak_mb_s']:.0f}",
                "bothway": f"{s['mpi_bothway_peak_mb_s']:.0f}",
                "switch": f"{s['switch_point_bytes'] // 1024} KiB",
            }
        )
    return rows


def _logp_rows(logp: dict[str, Any]) -> list[dict[str, str]]:
    return [
        {
            "what": rdma.LABELS[name],
            "bytes": f"{p['bytes']:,}",
            "o_s": f"{p['o_s_us']:.2f}",
            "o_r": f"{p['o_r_us']:.2f}",
            "g": f"{p['g_us']:.2f}",
            "l": f"{p['l_us']:.2f}",
        }
        for name, points in logp.items()
        for p in points
    ]


def _wan_rows(wan: dict[str, Any]) -> list[dict[str, str]]:
    return [
        {
            "what": rdma.LABELS[name],
            "miles": f"{p['miles']:,g}",
            "rtt": f"{p['rtt_ms']:g}",
            "latency": f"{p['user_latency_us'] / 1000:.3f}",
            "stream": f"{p['stream_mb_s']:.1f}",
        }
        for name, points in wan.items()
        for p in points
    ]


def write_rdma_report(folder: Path, profiles: dict[str, Any] | None = None) -> Path:
    """Run the models and write `folder/index.html` with its figures; its path.
    `profiles`: the models' profiles when already run."""
    folder.mkdir(parents=True, exist_ok=True)
    if profiles is None:
        profiles = rdma.run("profile")
    sweeps = {what: rdma.run(what) for what in rdma.SWEEPS}
    validation = validate_rdma_lan(profiles=profiles)
    ics = {name: p["interconnect"] for name, p in profiles.items()}
    drawn = [*_profile_figures(profiles), *_sweep_figures(sweeps, ics)]
    shown = [save_figure(d, folder) for d in drawn]
    page = _TEMPLATES.get_template("rdma.html").render(
        written=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        version=__version__,
        summary=validation["summary"],
        fitted=validation["fitted"],
        validation=_validation_rows(validation),
        side_by_side=_summary_rows(profiles),
        logp=_logp_rows(sweeps["logp"]),
        wan=_wan_rows(sweeps["wan"]),
        figures=shown,
    )
    path = folder / "index.html"
    path.write_text(page, encoding="utf-8")
    return path
