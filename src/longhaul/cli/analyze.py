"""`longhaul analyze`: the USN analysis of stored results, and the check of the published
tables."""

from __future__ import annotations

import itertools
import math
from typing import Annotated, Any, cast

import typer
from rich.table import Table

from longhaul.cli.campaign import DbOption, _store
from longhaul.cli.common import console, fail, note, print_json
from longhaul.topology.circuits import miles_label

app = typer.Typer(help="The USN analysis: profiles, DPM, comparisons.", no_args_is_help=True)

JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]
StreamsOption = Annotated[
    str,
    typer.Option(
        help="The stream counts T̄ averages over, LOW..HIGH (USN: 5..15). Those measured "
        "inside the range count."
    ),
]


@app.command()
def reference(as_json: JsonOption = False) -> None:
    """Recompute the derived figures of the published USN tables (DPM, averages) from
    their inputs with interval arithmetic, and say which match within rounding."""
    from longhaul.analysis.reference import compare_reference  # noqa: PLC0415

    found = compare_reference()
    if as_json:
        print_json(found)
        return
    table = Table(title="Published figures recomputed from their inputs", title_justify="left")
    for column in ("table", "subject", "figure", "miles", "published", "recomputed", "ok"):
        table.add_column(column, justify="right" if column == "miles" else "left")
    for name, entry in found["tables"].items():
        for figure in entry["figures"]:
            low, high = figure["recomputed"]
            table.add_row(
                name,
                figure["subject"],
                figure["figure"],
                figure["at_miles"] or "all",
                figure["published"],
                f"[{low:.4g}, {high:.4g}]",
                "yes" if figure["within_rounding"] else "[red]no[/red]",
            )
    console.print(table)
    console.print(found["criterion"], style="dim")
    misses = [
        figure
        for entry in found["tables"].values()
        for figure in entry["figures"]
        if not figure["within_rounding"]
    ]
    for figure in misses:
        where = f" at {figure['at_miles']} miles" if figure["at_miles"] else ""
        console.print(f"- {figure['subject']} {figure['figure']}{where}: {figure['note']}")
    verdict = "all within rounding" if not misses else f"{len(misses)} not within rounding"
    console.print(f"Published figures: {verdict}.")


@app.command()
def profile(
    campaign: Annotated[str, typer.Argument(help="The campaign's name (see `results list`).")],
    streams: StreamsOption = "5..15",
    as_json: JsonOption = False,
    db: DbOption = None,
) -> None:
    """T̄(d), its standard deviation and the Decrease Per Mile of each congestion control
    and source in a campaign's TCP runs without cross-traffic."""
    from longhaul.analysis import profiles  # noqa: PLC0415

    frame = _frame(campaign, db)
    low, high = _stream_range(streams)
    means = profiles.throughput_against_length(frame, (low, high))
    if means.empty:
        fail(f"campaign {campaign!r} has no TCP throughput runs without cross-traffic")
    found: list[dict[str, Any]] = []
    for (cc, source), rows in means.groupby(["cc", "source"]):
        dpm = profiles.decrease_per_mile(rows)
        lengths = [
            {
                "length_miles": float(row["length_miles"]),
                "mean_gbps": float(row["mean_gbps"]),
                "std_mbps": _finite(row["std_gbps"] * 1000),
                "runs": int(row["count"]),
                "dpm_mbps_per_mile": dpm.get(float(row["length_miles"])),
            }
            for _, row in rows.iterrows()
        ]
        found.append(
            {
                "cc": cc,
                "source": source,
                "lengths": lengths,
                "average_dpm_mbps_per_mile": profiles.average_dpm(dpm),
            }
        )
    if as_json:
        print_json({"campaign": campaign, "streams": [low, high], "profiles": found})
        return
    for entry in found:
        table = Table(
            title=f"{entry['cc']} ({entry['source']}), n = {low}..{high}", title_justify="left"
        )
        for column in ("miles", "T̄ (Gb/s)", "std (Mb/s)", "runs", "DPM (Mb/s per mile)"):
            table.add_column(column, justify="right")
        for line in entry["lengths"]:
            table.add_row(
                miles_label(line["length_miles"]),
                f"{line['mean_gbps']:.2f}",
                _text(line["std_mbps"], ".2f"),
                str(line["runs"]),
                _text(line["dpm_mbps_per_mile"], ".3f"),
            )
        table.add_row("average", "", "", "", _text(entry["average_dpm_mbps_per_mile"], ".3f"))
        console.print(table)


@app.command()
def variants(
    campaign: Annotated[str, typer.Argument(help="The campaign's name (see `results list`).")],
    as_json: JsonOption = False,
    db: DbOption = None,
) -> None:
    """TCP through middleboxes beside the same circuits plain: mean throughput per length,
    variant (`encrypted, MTU 8950`, `plain, MTU 9000`, ...) and stream count, from runs
    with the iperf3 tool's `encryptor` or `host_mtu_bytes` set."""
    from longhaul.analysis import profiles  # noqa: PLC0415

    table = profiles.variant_profile(_frame(campaign, db))
    if table.empty:
        fail(f"campaign {campaign!r} has no TCP runs through middleboxes (encryptor or "
             "host_mtu_bytes in a tcp_throughput test)")  # fmt: skip
    found: list[dict[str, Any]] = [
        {"cc": str(r["cc"]), "source": str(r["source"]), "length_miles": float(r["length_miles"]),
         "variant": str(r["variant"]), "streams": int(r["streams"]),
         "mean_gbps": float(r["mean_gbps"]), "std_gbps": _finite(r["std_gbps"]),
         "runs": int(r["count"])}
        for _, r in table.iterrows()
    ]  # fmt: skip
    if as_json:
        print_json({"campaign": campaign, "variants": found})
        return
    out = Table(title=f"{campaign}: TCP through middleboxes (Gb/s, mean of the runs)",
                title_justify="left")  # fmt: skip
    streams = sorted({f["streams"] for f in found})
    for column in ("cc", "source", "miles", "variant", *(f"n={n}" for n in streams)):
        out.add_column(column, justify="right")
    groups: dict[tuple[str, str, float, str], dict[int, float]] = {}
    for f in found:
        key = (f["cc"], f["source"], f["length_miles"], f["variant"])
        groups.setdefault(key, {})[f["streams"]] = f["mean_gbps"]
    for (cc, source, miles, name), by_streams in groups.items():
        cells = [_text(by_streams.get(n), ".2f") for n in streams]
        out.add_row(cc, source, miles_label(miles), name, *cells)
    console.print(out)


@app.command(name="channel-profile")
def channel_profile(
    campaign: Annotated[str, typer.Argument(help="The campaign's name (see `results list`).")],
    as_json: JsonOption = False,
    db: DbOption = None,
) -> None:
    """USN's channel throughput profile from a campaign's udp_channel_profile runs
    (Hurricane): goodput over W_c and T_s per loop, its maximum, and for each W_c the best
    T_s and whether goodput is unimodal in T_s."""
    from longhaul.analysis import channel  # noqa: PLC0415

    runs = channel.profile_rows(_frame(campaign, db))
    if runs.empty:
        fail(f"campaign {campaign!r} has no udp_channel_profile runs")
    found: list[dict[str, Any]] = []
    for length, at in runs.groupby("length_miles"):
        means = channel.surface(at)
        found.append(
            {
                "length_miles": float(cast(float, length)),
                "best": channel.best(at),
                "ridge": [vars(r) for r in channel.ridge(at)],
                "goodput_gbps": {
                    f"{idle:g}": {str(b): _finite(float(v)) for b, v in line.items()}
                    for idle, line in means.iterrows()
                },
            }
        )
    if as_json:
        print_json({"campaign": campaign, "profiles": found})
        return
    for entry in found:
        title = f"{miles_label(entry['length_miles'])} mi: goodput (Gb/s) by T_s and W_c"
        shown = Table(title=title, title_justify="left")
        bursts = sorted({b for line in entry["goodput_gbps"].values() for b in line}, key=int)
        shown.add_column("T_s µs", justify="right")
        for burst in bursts:
            shown.add_column(f"W_c {burst}", justify="right")
        for idle, line in entry["goodput_gbps"].items():
            shown.add_row(idle, *[_text(line.get(b), ".3f") for b in bursts])
        console.print(shown)
        top = entry["best"]
        console.print(f"Most: {top['goodput_gbps']:.3f} Gb/s at W_c {top['burst_datagrams']}, "
                      f"T_s {top['idle_us']:g} µs.")  # fmt: skip
        for r in entry["ridge"]:
            shape = "unimodal" if r["unimodal"] else "NOT unimodal"
            console.print(f"  W_c {r['burst_datagrams']}: best T_s {r['best_idle_us']:g} µs "
                          f"({r['goodput_gbps']:.3f} Gb/s), {shape} in T_s")  # fmt: skip


@app.command()
def compare(
    campaign: Annotated[str, typer.Argument(help="The campaign's name (see `results list`).")],
    first: Annotated[str, typer.Argument(help="A congestion control in the campaign.")],
    second: Annotated[
        str, typer.Argument(help="Another one (in the --against campaign, if given).")
    ],
    against: Annotated[
        str | None,
        typer.Option(
            help="Take SECOND from this campaign: compare two campaigns (two rounds of a "
            "schedule, two hosts) with the same method."
        ),
    ] = None,
    streams: StreamsOption = "5..15",
    as_json: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Compare two congestion controls over length, USN's objective way: each one's
    throughput fitted by a k-segmented regression (k chosen by the VC bound), the fits
    compared over the lengths both were measured at, with a bootstrap interval."""
    from longhaul.analysis import normalize  # noqa: PLC0415

    low, high = _stream_range(streams)
    sides = [(campaign, first), (against or campaign, second)]
    tables = [_tcp_table(name, cc, (low, high), db) for name, cc in sides]
    if against is not None:
        first, second = f"{first} ({campaign})", f"{second} ({against})"
    elif first == second:
        fail("give two different congestion controls, or --against another campaign")
    fits = [normalize.fit_table(table, "throughput_gbps") for table in tables]
    result = normalize.compare_fits(fits[0], fits[1], labels=(first, second), grid_points=11)
    interval = normalize.bootstrap_mean_difference(tables[0], tables[1], "throughput_gbps")
    regions = [
        {
            "start_miles": region.start_miles,
            "end_miles": region.end_miles,
            "better": region.better,
            "mean_advantage_gbps": region.mean_advantage,
        }
        for region in result.regions
    ]
    summary: dict[str, Any] = {
        "campaign": campaign,
        "against": against,
        "streams": [low, high],
        "fits": {
            label: _fit_summary(fit) for label, fit in zip((first, second), fits, strict=True)
        },
        "span_miles": list(result.span_miles),
        "mean_difference_gbps": result.mean_difference,
        "mean_difference_interval_gbps": list(interval),
        "interval_level": 0.95,
        "better_on_average": result.better_on_average,
        "regions": regions,
        "grid": result.to_frame().to_dict("records"),
    }
    if as_json:
        print_json(summary)
        return
    for label, fit in summary["fits"].items():
        _print_fit(label, fit)
    table = Table(title=f"{first} against {second}, n = {low}..{high}", title_justify="left")
    for column in ("miles", f"{first} (Gb/s)", f"{second} (Gb/s)", "difference"):
        table.add_column(column, justify="right")
    for line in summary["grid"]:
        table.add_row(
            miles_label(line["length_miles"]),
            f"{line[first]:.2f}",
            f"{line[second]:.2f}",
            f"{line['difference']:+.2f}",
        )
    console.print(table)
    for region in regions:
        console.print(
            f"{region['start_miles']:,.0f}-{region['end_miles']:,.0f} miles: "
            f"{region['better']} better by {region['mean_advantage_gbps']:.2f} Gb/s on average"
        )
    console.print(
        _verdict(first, second, result.span_miles, result.mean_difference, interval),
        soft_wrap=True,
    )


def _tcp_table(campaign: str, cc: str, streams: tuple[int, int], db: str | None) -> Any:
    """A campaign's TCP runs of one cc in the stream range: length and throughput."""
    from longhaul.analysis import profiles  # noqa: PLC0415

    tcp = profiles.in_stream_range(profiles.tcp_rows(_frame(campaign, db)), streams)
    rows = tcp[tcp["cc"] == cc]
    if rows.empty:
        known = ", ".join(sorted(tcp["cc"].dropna().unique())) or "none"
        low, high = streams
        fail(f"no {cc} runs with {low}..{high} streams in {campaign!r} (there: {known})")
    return rows.loc[:, ["length_miles", "throughput_gbps"]]


def _fit_summary(regression: Any) -> dict[str, Any]:
    """What a reader needs to judge a fit: k, its anchors and segments, and the bounds."""
    chosen = regression.chosen
    return {
        "k": regression.k,
        "anchors_miles": list(regression.anchors_miles),
        "knots_miles": list(chosen.knots_miles),
        "knot_values_gbps": list(chosen.knot_values),
        "bound": "practical VC (Cherkassky et al. 1999)"
        if regression.loss_bound is None
        else f"bounded-loss VC, B = {regression.loss_bound:g}",
        "candidates": [
            {"k": fit.k, "mean_squared_error": fit.mean_squared_error, "vc_bound": _finite(bound)}
            for fit, bound in zip(regression.fits, regression.vc_bounds, strict=True)
        ][:6],
        "measurements": regression.n_measurements,
    }


def _print_fit(label: str, fit: dict[str, Any]) -> None:
    name = "the least-squares line" if fit["k"] == -1 else f"k = {fit['k']}"
    anchors = ", ".join(f"{miles_label(a)} mi" for a in fit["anchors_miles"]) or "none"
    console.print(
        f"{label}: {name} (interior anchors: {anchors}), chosen by the {fit['bound']} "
        f"over {fit['measurements']} measurements",
        soft_wrap=True,
    )
    knots = list(zip(fit["knots_miles"], fit["knot_values_gbps"], strict=True))
    for (x0, y0), (x1, y1) in itertools.pairwise(knots):
        console.print(f"  {miles_label(x0)}-{miles_label(x1)} mi: {y0:.2f} → {y1:.2f} Gb/s")
    bounds = ", ".join(
        f"k={c['k']}: {c['vc_bound']:.4g}" if c["vc_bound"] is not None else f"k={c['k']}: ∞"
        for c in fit["candidates"]
    )
    console.print(f"  bounds: {bounds}", style="dim")


def _verdict(
    first: str,
    second: str,
    span: tuple[float, float],
    difference: float,
    interval: tuple[float, float],
) -> str:
    low, high = interval
    where = f"Over {span[0]:,.0f}-{span[1]:,.0f} miles"
    measured = (
        f"{first} − {second} = {difference:+.2f} Gb/s, 95 % interval [{low:+.2f}, {high:+.2f}]"
    )
    if low > 0:
        return f"{where}: {first} beats {second} by {difference:.2f} Gb/s on average ({measured})."
    if high < 0:
        return f"{where}: {second} beats {first} by {-difference:.2f} Gb/s on average ({measured})."
    return f"{where}: neither is better beyond chance ({measured})."


def _frame(campaign: str, db: str | None) -> Any:
    frame = _store(db).frame(campaign)
    if frame.empty:
        fail(f"campaign {campaign!r} has no results: `longhaul results list` shows those stored")
    # pandas costs every command half a second to import.
    from longhaul.analysis import quality  # noqa: PLC0415

    split = quality.usable(frame)
    if split.note():
        note(split.note() or "")
    return split.rows


def _stream_range(text: str) -> tuple[int, int]:
    low, sep, high = text.partition("..")
    try:
        bounds = (int(low), int(high if sep else low))
    except ValueError:
        fail(f"--streams {text!r}: give LOW..HIGH, e.g. 5..15")
    if bounds[0] > bounds[1] or bounds[0] < 1:
        fail(f"--streams {text!r}: give 1 ≤ LOW ≤ HIGH")
    return bounds


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _text(value: float | None, form: str) -> str:
    return "" if value is None else format(value, form)
