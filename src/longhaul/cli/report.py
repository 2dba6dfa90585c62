"""`longhaul report CAMPAIGN` and `longhaul demo`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from longhaul.cli.campaign import DbOption, _store
from longhaul.cli.common import console, err_console, fail
from longhaul.db import data_dir


def report(
    campaign: Annotated[str, typer.Argument(help="The campaign's name (see `results list`).")],
    out: Annotated[
        Path | None,
        typer.Option(help="Folder to write into. Default: reports/CAMPAIGN in the data directory."),
    ] = None,
    published: Annotated[
        bool, typer.Option(help="Show the published USN values beside the measured ones.")
    ] = True,
    against: Annotated[
        str | None,
        typer.Option(help="Another campaign to draw beside this one and compare it with."),
    ] = None,
    db: DbOption = None,
) -> None:
    """Write a self-contained HTML report of a campaign (PNG and SVG figures beside it),
    or of two campaigns side by side (`--against`)."""
    import pandas as pd  # noqa: PLC0415

    from longhaul.report import write_report  # noqa: PLC0415

    store = _store(db)
    names = [campaign] if against is None else [campaign, against]
    frames = [store.frame(name) for name in names]
    for name, frame in zip(names, frames, strict=True):
        if frame.empty:
            fail(f"campaign {name!r} has no results yet: `longhaul campaign run FILE` makes some")
    title = campaign if against is None else f"{campaign} against {against}"
    folder = out or data_dir() / "reports" / title.replace(" ", "-")
    frame = pd.concat(frames, ignore_index=True)
    path = write_report(frame, folder, title, reference=published, against=against)
    console.print(str(path))


def demo() -> None:
    """The USN TCP study end to end: reserve the four loops through the embedded control
    plane, measure them on the emulated testbed (cross-traffic on one), simulate the 2008
    study (BIC and HTCP) on the same loops, write the report with emulated, simulated and
    published side by side, release and remove everything. Needs root; about 6 minutes
    on two cores."""
    from longhaul import demo as study  # noqa: PLC0415

    try:
        study.preflight()
    except study.DemoUnavailableError as exc:
        fail(str(exc), code=1)
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=err_console,
    ) as bar:
        task = bar.add_task("starting the control plane", total=1.0)

        def progress(phase: study.Phase) -> None:
            bar.update(
                task, description=phase.what, completed=phase.done_s, total=max(phase.total_s, 1e-9)
            )

        path = study.run(progress)
    console.print(f"The report: {path}")
    rdma_lan = path.parent / study.RDMA_LAN_REPORT / "index.html"
    console.print(f"iWARP, InfiniBand and Myri-10G side by side: {rdma_lan}")
