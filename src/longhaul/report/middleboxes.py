"""The WAN-middleboxes report: what `longhaul bench middleboxes` measured, beside USN's
published figures (the bench's `published_mbps` and `published_gbps`): the accelerator's
tables and one figure per loop, the encryptor's table and its figure."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jinja2
from matplotlib.figure import Figure

from longhaul import __version__
from longhaul.report.figures import Drawn
from longhaul.report.html import save_figure

FEATURES = ("none", "tfo", "tfo+dre", "tfo+dre+lz")
_TEMPLATES = jinja2.Environment(
    loader=jinja2.PackageLoader("longhaul.report", "templates"),
    autoescape=jinja2.select_autoescape(["html"]),
)


def _mbps(value: float | None) -> str:
    return "" if value is None else f"{value:,.1f}"


def _hdf_rows(cells: list[dict[str, Any]]) -> list[dict[str, str]]:
    rows = []
    for c in cells:
        if c["data"] != "hdf":
            continue
        published, measured = c.get("published_mbps"), c.get("mbps")
        ratio = "" if not published or measured is None else f"{measured / published:.2f}"
        spread = "" if measured is None else f" ({_mbps(c['mbps_min'])}-{_mbps(c['mbps_max'])})"
        rows.append({"miles": f"{c['miles']:,}", "streams": str(c["streams"]),
                     "features": c["features"], "measured": _mbps(measured) + spread,
                     "published": _mbps(published), "ratio": ratio,
                     "wire": f"{c['wire_ratio']:.3f}" if "wire_ratio" in c else "",
                     "intact": f"{c['intact_runs']}/{c['runs']}"})  # fmt: skip
    return rows


def _other_rows(cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[tuple[int, str], dict[str, dict[str, Any]]] = {}
    fewest = min((c["streams"] for c in cells), default=0)
    for c in cells:
        if c["data"] != "hdf" and c["streams"] == fewest:
            groups.setdefault((c["miles"], c["data"]), {})[c["features"]] = c
    rows = []
    for (miles, data), by_feature in sorted(groups.items()):
        shown = []
        for feature in FEATURES:
            cell = by_feature.get(feature)
            wire = f" ({cell['wire_ratio']:.4f})" if cell and "wire_ratio" in cell else ""
            shown.append("" if cell is None else _mbps(cell.get("mbps")) + wire)
        rows.append({"miles": f"{miles:,}", "data": data, "cells": shown})
    return rows


def _loop_figure(cells: list[dict[str, Any]], miles: int) -> Drawn:
    mine = [c for c in cells if c["miles"] == miles and c["data"] == "hdf"]
    streams = sorted({c["streams"] for c in mine})
    figure = Figure(figsize=(7, 3.6), layout="constrained")
    axes = figure.subplots()
    width = 0.8 / len(FEATURES)
    for index, feature in enumerate(FEATURES):
        by_streams = {c["streams"]: c for c in mine if c["features"] == feature}
        xs = [i + (index - 1.5) * width for i in range(len(streams))]
        measured = [by_streams.get(n, {}).get("mbps") or 0 for n in streams]
        published = [by_streams.get(n, {}).get("published_mbps") for n in streams]
        axes.bar(xs, measured, width, label=feature)
        points = [(x, p) for x, p in zip(xs, published, strict=True) if p]
        if points:
            axes.scatter([x for x, _ in points], [p for _, p in points], marker="_", s=250,
                         color="black", linewidths=2.5, zorder=3,
                         label="USN" if index == 0 else None)  # fmt: skip
    axes.set_xticks(range(len(streams)), [f"{n} stream{'s' if n > 1 else ''}" for n in streams])
    axes.set_yscale("log")
    axes.set_ylabel("Mb/s")
    axes.set_title(f"{miles:,}-mile loop, HDF files: bars measured, dashes USN")
    axes.grid(True, axis="y", alpha=0.3)
    figure.legend(loc="outside lower center", fontsize=8, ncols=5)
    caption = ("Without the accelerator a stream is one 64 KB window per round trip; flow "
               "optimization lifts one stream near the line; DRE and LZ shorten what crosses "
               "the WAN, so a file's repetitions can run at the LAN's rate.")  # fmt: skip
    return Drawn(f"accelerator-{miles}", f"{miles:,} miles", caption, figure)


def _gbps(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}"


def _encryptor_rows(rows: list[dict[str, Any]]) -> list[dict[str, str]]:
    shown = []
    for r in rows:
        spread = (
            "" if r["gbps_min"] is None else f" ({_gbps(r['gbps_min'])}-{_gbps(r['gbps_max'])})"
        )
        cost = r.get("crypto_cores_per_gbps")
        shown.append({
            "miles": f"{r['miles']:,g}", "mtu": f"{r['mtu_bytes']:,}", "oversize": r["oversize"],
            "tamper": f"{r['tamper']:g}" if r["tamper"] else "",
            "measured": _gbps(r["gbps"]) + spread, "plain": _gbps(r["plain_gbps"]),
            "ratio": "" if r["ratio_to_plain"] is None else f"{r['ratio_to_plain']:.3f}",
            "published": "" if r["published_gbps"] is None else f"{r['published_gbps']:g}",
            "cost": "" if cost is None else f"{cost:.4f}",
            "fragmented": f"{r['fragmented_segments']:,}",
            "refused": f"{r['tampered']}/{r['refused']}" if r["tamper"] else "",
        })  # fmt: skip
    return shown


def _encryptor_figure(rows: list[dict[str, Any]]) -> Drawn:
    shown = [r for r in rows if not r["tamper"]]
    labels = [f"{r['miles']:,g} mi\nMTU {r['mtu_bytes']:,}\n{r['oversize']}" for r in shown]
    figure = Figure(figsize=(7, 3.6), layout="constrained")
    axes = figure.subplots()
    xs = range(len(shown))
    axes.bar([x - 0.2 for x in xs], [r["gbps"] or 0 for r in shown], 0.4, label="encrypted")
    axes.bar([x + 0.2 for x in xs], [r["plain_gbps"] or 0 for r in shown], 0.4, label="plain")
    points = [(x, r["published_gbps"]) for x, r in zip(xs, shown, strict=True)
              if r["published_gbps"]]  # fmt: skip
    if points:
        axes.scatter([x - 0.2 for x, _ in points], [p for _, p in points], marker="_", s=250,
                     color="black", linewidths=2.5, zorder=3, label="USN")  # fmt: skip
    axes.set_xticks(list(xs), labels, fontsize=8)
    axes.set_ylabel("Gb/s")
    axes.set_title("One TCP stream through the link encryptors: bars measured, dashes USN")
    axes.grid(True, axis="y", alpha=0.3)
    figure.legend(loc="outside lower center", fontsize=8, ncols=3)
    caption = ("Encrypted and plain runs alternate on the same circuit. A 9,000-byte packet "
               "sealed is 9,048 bytes: fragmented it costs a frame's headers, dropped it "
               "moves nothing (a path-MTU black hole).")  # fmt: skip
    return Drawn("encryptor", "Link encryptor", caption, figure)


def write_middleboxes_report(report: dict[str, Any], folder: Path) -> Path:
    """`folder/index.html` (with its figures) from a `bench middleboxes` result; its path."""
    folder.mkdir(parents=True, exist_ok=True)
    cells = report["accelerator"]
    drawn = [_loop_figure(cells, miles) for miles in sorted({c["miles"] for c in cells})]
    sealed = report.get("encryptor") or []
    if sealed:
        drawn.append(_encryptor_figure(sealed))
    page = _TEMPLATES.get_template("middleboxes.html").render(
        written=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), version=__version__,
        rate=report.get("rate_gbps"), window=report.get("window_bytes"),
        repetitions=report.get("repetitions"), cpus=report.get("machine", {}).get("cpus"),
        kernel=report.get("machine", {}).get("kernel"),
        hdf=_hdf_rows(cells), others=_other_rows(cells), encryptor=_encryptor_rows(sealed),
        figures=[save_figure(d, folder) for d in drawn],
    )  # fmt: skip
    path = folder / "index.html"
    path.write_text(page, encoding="utf-8")
    return path
