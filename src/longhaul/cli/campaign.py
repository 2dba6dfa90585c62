"""`longhaul campaign` and `longhaul results`: run measurement campaigns, keep, export and
import their results."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from longhaul.cli.common import console, err_console, fail, load_or_usn, note, print_json

app = typer.Typer(help="Measurement campaigns on the emulated testbed.", no_args_is_help=True)
results_app = typer.Typer(help="Measurement results: list, export, import.", no_args_is_help=True)

if TYPE_CHECKING:
    from longhaul.measure.campaign import Campaign, Run
    from longhaul.measure.store import ResultsStore
    from longhaul.topology import Topology

DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        help="SQLite file or postgresql+psycopg:// URL. Default: $LONGHAUL_DB, "
        "else longhaul.db in the data directory.",
        show_default=False,
    ),
]


def _store(db: str | None):  # type: ignore[no-untyped-def]
    from longhaul.db import Database, database_url, migrate  # noqa: PLC0415
    from longhaul.measure.store import ResultsStore  # noqa: PLC0415

    database = Database(database_url(db))
    migrate(database.engine)
    return ResultsStore(database)


@app.command()
def run(
    file: Annotated[
        Path, typer.Argument(help="The campaign's TOML file.", exists=True, dir_okay=False)
    ],
    resume: Annotated[
        bool,
        typer.Option(
            "--resume", help="Continue a campaign that stopped: runs already stored are skipped."
        ),
    ] = False,
    fresh: Annotated[
        bool,
        typer.Option("--fresh", help="Forget the campaign's stored results and run it all again."),
    ] = False,
    yes: Annotated[
        bool, typer.Option("--yes", help="Run even if it will take over an hour.")
    ] = False,
    db: DbOption = None,
    topology: Annotated[Path | None, typer.Option(help="Topology TOML file. Default: USN.")] = None,
    workers: Annotated[
        int | None,
        typer.Option(
            help="Simulated campaigns: simulators side by side (default: one per core).", min=1
        ),
    ] = None,
    scheduler: Annotated[
        str | None,
        typer.Option(
            help="Simulated campaigns: run on a Dask cluster (tcp://host:8786), or "
            "'local' for a LocalCluster."
        ),
    ] = None,
) -> None:
    """Run a campaign on the emulated testbed (needs root), or on the simulator when its
    tests use tool = "sim" (no root), storing each run as it ends."""
    from longhaul.db import data_dir  # noqa: PLC0415
    from longhaul.measure import campaign as campaigns  # noqa: PLC0415
    from longhaul.measure import runner  # noqa: PLC0415
    from longhaul.sim import campaign as simulated  # noqa: PLC0415
    from longhaul.testbed import Testbed, TestbedError, TestbedUnavailableError  # noqa: PLC0415

    if resume and fresh:
        fail("--resume and --fresh contradict each other: choose one")
    spec = campaigns.parse(file.read_text(), source=str(file))
    testbed = Testbed(load_or_usn(topology))
    connections = runner.plan_connections(spec, testbed)
    planned = campaigns.runs(spec, connections)
    if simulated.is_simulated(spec):
        _simulate(spec, planned, testbed.topology, db, resume, fresh, yes, workers, scheduler)
        return
    estimate = campaigns.estimate_s(planned)
    note(
        f"{spec.name}: {len(planned)} runs on {len(connections)} connection(s), "
        f"about {_minutes(estimate)}."
    )
    if estimate > campaigns.LONG_CAMPAIGN_S and not yes:
        fail(f"this campaign would run for about {_minutes(estimate)}: give --yes to run it")
    runner.check_tools(spec)
    store = _store(db)
    if fresh:
        store.forget(spec.name)
    try:
        prepared = runner.prepare(spec, testbed)
        with _progress() as bar:
            task = bar.add_task("building the connections", total=max(estimate, 1.0))

            def progress(what: str, done_s: float, total_s: float) -> None:
                bar.update(task, description=what, completed=done_s, total=total_s)

            ran_by = runner.Runner(store, testbed, data_dir() / "results")
            ran = ran_by.run(prepared, resume=resume, progress=progress)
    except (TestbedError, TestbedUnavailableError) as exc:
        fail(str(exc), code=1)
    console.print(f"{spec.name}: {ran} run(s) stored. `longhaul report {spec.name}` draws them.")
    if ran_by.failed:
        _say_failures(store, spec.name, ran_by.failed)


def _say_failures(store: ResultsStore, campaign: str, count: int) -> NoReturn:
    """Each failed run with its tool's message, then exit 2: a campaign with failures is
    not a clean result, even though the rest of it is stored."""
    for row in store.rows(campaign):
        if row.failed:
            where = f"{row.test} on {row.connection}, repetition {row.repetition}"
            note(f"  failed: {where}: {row.error}")
    fail(
        f"{count} run(s) failed and are stored without a measurement (the analysis leaves "
        f"them out); `longhaul campaign run FILE --resume` runs them again"
    )


def _simulate(
    spec: Campaign,
    planned: list[Run],
    topology: Topology,
    db: str | None,
    resume: bool,
    fresh: bool,
    yes: bool,
    workers: int | None,
    scheduler: str | None,
) -> None:
    import os  # noqa: PLC0415

    from longhaul.db import data_dir  # noqa: PLC0415
    from longhaul.measure import campaign as campaigns  # noqa: PLC0415
    from longhaul.sim import campaign as simulated  # noqa: PLC0415
    from longhaul.sim import runner as sim_runner  # noqa: PLC0415

    try:
        sim_runner.binary()
    except sim_runner.SimUnavailableError as exc:
        fail(str(exc), code=1)
    parallel = 1 if scheduler else workers or os.cpu_count() or 1
    estimate = campaigns.estimate_s(planned) / parallel
    note(f"{spec.name}: {len(planned)} simulated runs, about {_minutes(estimate)} of simulation.")
    if estimate > campaigns.LONG_CAMPAIGN_S and not yes:
        fail(f"this campaign would run for about {_minutes(estimate)}: give --yes to run it")
    store = _store(db)
    if fresh:
        store.forget(spec.name)
    with _progress() as bar:
        task = bar.add_task("simulating", total=len(planned))

        def progress(what: str, done: int, total: int) -> None:
            bar.update(task, description=what, completed=done, total=total)

        ran = simulated.run_campaign(
            spec, planned, topology, store, data_dir() / "results", resume=resume,
            workers=workers, scheduler=scheduler, progress=progress,
        )  # fmt: skip
    console.print(f"{spec.name}: {ran} run(s) stored. `longhaul report {spec.name}` draws them.")


def _progress() -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=err_console,
        transient=True,
    )


def _minutes(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} minutes"
    return f"{seconds / 3600:.1f} hours"


@app.command()
def check(
    file: Annotated[
        Path, typer.Argument(help="The campaign's TOML file.", exists=True, dir_okay=False)
    ],
    topology: Annotated[Path | None, typer.Option(help="Topology TOML file. Default: USN.")] = None,
) -> None:
    """Read a campaign and say what it would run and for how long (needs no root)."""
    from longhaul.measure import campaign as campaigns  # noqa: PLC0415
    from longhaul.measure import runner  # noqa: PLC0415
    from longhaul.testbed import Testbed  # noqa: PLC0415

    spec = campaigns.parse(file.read_text(), source=str(file))
    connections = runner.plan_connections(spec, Testbed(load_or_usn(topology)))
    planned = campaigns.runs(spec, connections)
    for test in spec.tests:
        count = sum(1 for r in planned if r.test is test)
        console.print(f"  {test.name} with {test.tool}: {count} runs")
    console.print(
        f"{spec.name}: {len(planned)} runs on {', '.join(c.name for c in connections)}; "
        f"about {_minutes(campaigns.estimate_s(planned))}."
    )


def _schedules(db: str | None):  # type: ignore[no-untyped-def]
    from longhaul.db import Database, database_url, migrate  # noqa: PLC0415
    from longhaul.measure.schedules import Schedules  # noqa: PLC0415

    database = Database(database_url(db))
    migrate(database.engine)
    return Schedules(database)


@app.command()
def schedule(
    file: Annotated[
        Path, typer.Argument(help="The campaign's TOML file.", exists=True, dir_okay=False)
    ],
    every: Annotated[str, typer.Option(help="How often: 6h, 1d, 90m, PT6H.")],
    start: Annotated[
        str | None,
        typer.Option(help="The first round, with a zone (2030-01-07T09:00Z). Default: now."),
    ] = None,
    db: DbOption = None,
    topology: Annotated[Path | None, typer.Option(help="Topology TOML file. Default: USN.")] = None,
) -> None:
    """Run a campaign every so often, each round on circuits it books through the
    reservation API (`longhaul campaign scheduler` runs the rounds)."""
    from datetime import UTC, datetime  # noqa: PLC0415

    from longhaul.measure import campaign as campaigns  # noqa: PLC0415
    from longhaul.measure import runner  # noqa: PLC0415
    from longhaul.parsing import parse_duration, parse_instant  # noqa: PLC0415
    from longhaul.testbed import Testbed  # noqa: PLC0415

    spec = campaigns.parse(file.read_text(), source=str(file))
    if spec.jitter is not None:
        fail("a scheduled campaign runs on booked circuits, which have no jitter setting")
    from longhaul.sim.campaign import SIMULATED_TOOLS  # noqa: PLC0415

    if spec.reservations or any(t.tool in SIMULATED_TOOLS for t in spec.tests):
        fail(
            "a scheduled campaign books its own loops: give loops_miles and no reservations, "
            "and no tool = 'sim', 'ib_rdma' or 'rdma_lan' (simulated campaigns need no "
            "circuits: run them directly)"
        )
    runner.plan_connections(spec, Testbed(load_or_usn(topology)))  # every loop exists
    first = datetime.now(UTC) if start is None else parse_instant(start, "start")
    made = _schedules(db).add(spec.name, spec.text, parse_duration(every, "every"), first)
    console.print(
        f"schedule {made.id}: {made.name} every {made.every}, first round at "
        f"{made.next_at:%Y-%m-%d %H:%M} UTC (stored as {made.next_campaign!r}). "
        "`longhaul campaign scheduler` runs the rounds."
    )


@app.command("schedules")
def list_schedules(
    db: DbOption = None, json_output: Annotated[bool, typer.Option("--json")] = False
) -> None:
    """The recurring campaigns, with their next round and the last round's note."""
    found = _schedules(db).all()
    if json_output:
        print_json(
            [
                {
                    "id": s.id,
                    "name": s.name,
                    "every_s": s.every.total_seconds(),
                    "next_at": s.next_at.isoformat(),
                    "rounds": s.rounds,
                    "state": s.state,
                    "last_note": s.last_note,
                }
                for s in found
            ]
        )
        return
    table = Table(box=None, header_style="bold", padding=(0, 2, 0, 0))
    for column in ("id", "campaign", "every", "next round (UTC)", "rounds", "state", "last"):
        table.add_column(column)
    for s in found:
        table.add_row(
            str(s.id), s.name, str(s.every), f"{s.next_at:%Y-%m-%d %H:%M}", str(s.rounds),
            s.state, s.last_note,
        )  # fmt: skip
    console.print(table)


@app.command()
def unschedule(
    number: Annotated[int, typer.Argument(help="The schedule's id (see `campaign schedules`).")],
    db: DbOption = None,
) -> None:
    """Stop a recurring campaign (its rounds so far stay)."""
    gone = _schedules(db).cancel(number)
    console.print(f"schedule {gone.id} ({gone.name}) cancelled after {gone.rounds} round(s).")


@app.command()
def scheduler(
    once: Annotated[
        bool, typer.Option("--once", help="Run the rounds due now, then stop.")
    ] = False,
    server: Annotated[
        str | None,
        typer.Option(help="The reservation service (default: $LONGHAUL_SERVER or the config)."),
    ] = None,
    poll_s: Annotated[float, typer.Option(help="How often to look for due rounds.", min=1)] = 30,
    db: DbOption = None,
) -> None:
    """Run the rounds of recurring campaigns as they fall due (needs root, and a
    `longhaul serve --driver emulated` to book circuits from; sign in with
    `longhaul login` first)."""
    import time  # noqa: PLC0415
    from dataclasses import replace  # noqa: PLC0415

    from longhaul.control.client import Client, load_config  # noqa: PLC0415
    from longhaul.db import data_dir  # noqa: PLC0415
    from longhaul.measure import scheduler as rounds  # noqa: PLC0415
    from longhaul.testbed import Testbed, netns  # noqa: PLC0415

    try:
        netns.require_privileges()
    except netns.TestbedUnavailableError as exc:
        fail(str(exc), code=1)
    config = load_config()
    if server:
        config = replace(config, server=server)
    if not config.token and not config.cert:
        fail("no token; sign in with `longhaul login --token TOKEN` or set $LONGHAUL_TOKEN")
    schedules, store = _schedules(db), _store(db)
    with Client(config) as client:
        while True:
            rounds.run_due(schedules, client, Testbed(), store, data_dir() / "schedules", note)
            if once:
                return
            time.sleep(poll_s)


@results_app.command("list")
def list_(
    db: DbOption = None, json_output: Annotated[bool, typer.Option("--json")] = False
) -> None:
    """Campaigns in the results store, with their number of rows."""
    found = _store(db).campaigns()
    if json_output:
        print_json(
            [
                {**c, "created_at": str(c["created_at"]), "finished_at": str(c["finished_at"])}
                for c in found
            ]
        )
        return
    table = Table(box=None, header_style="bold", padding=(0, 2, 0, 0))
    for column in ("campaign", "rows", "finished", "description"):
        table.add_column(column)
    for c in found:
        finished = "" if c["finished_at"] is None else c["finished_at"].strftime("%Y-%m-%d %H:%M")
        table.add_row(c["name"], str(c["rows"]), finished, c["description"])
    console.print(table)


@results_app.command()
def export(
    campaign: Annotated[str, typer.Argument(help="The campaign's name.")],
    path: Annotated[Path, typer.Argument(help="A .csv or a .parquet file to write.")],
    db: DbOption = None,
) -> None:
    """Write a campaign's rows to CSV or Parquet."""
    count = _store(db).export(path, campaign)
    console.print(f"{count} row(s) written to {path}")


@results_app.command("import")
def import_(
    files: Annotated[
        list[Path],
        typer.Argument(
            help="iperf3 JSON files (iperf3 -J, TCP or UDP) or perfSONAR/pScheduler "
            "throughput results.",
            exists=True,
            dir_okay=False,
        ),
    ],
    campaign: Annotated[str, typer.Option(help="A new campaign to hold them.")],
    connection: Annotated[str, typer.Option(help="What was measured, for people.")] = "imported",
    length_miles: Annotated[
        float | None,
        typer.Option(
            help="The connection's length: without it the runs cannot enter the distance analysis.",
            min=0,
        ),
    ] = None,
    cc: Annotated[
        str | None,
        typer.Option(help="The congestion control, where the files do not say (pScheduler)."),
    ] = None,
    db: DbOption = None,
) -> None:
    """Import measurements you already have (source: measured). All or nothing: a file
    that holds a failed run, or is cut short, is named and nothing is stored."""
    import math  # noqa: PLC0415

    from longhaul.measure import importers  # noqa: PLC0415

    if length_miles is not None and not math.isfinite(length_miles):
        fail("--length-miles: give a length in miles, e.g. 1400")
    rows = importers.read_files(files, campaign, connection, length_miles, cc)
    count = _store(db).import_rows(
        campaign, "imported", f"imported from {len(files)} file(s)", rows
    )
    console.print(f"{count} row(s) imported into {campaign!r}.")
    if length_miles is None:
        note("They have no length: give --length-miles to use them in `analyze profile`.")
    if any(row.cc is None and row.test == "tcp_throughput" for _, row in rows):
        note("Some have no congestion control: give --cc to name it (pScheduler omits it).")


@results_app.command()
def forget(
    campaign: Annotated[str, typer.Argument(help="The campaign's name.")],
    db: DbOption = None,
) -> None:
    """Remove a campaign and its rows from the store."""
    store = _store(db)
    store.spec(campaign)  # an unknown name is an error that lists the known ones
    count = store.forget(campaign)
    console.print(f"{campaign!r} forgotten: {count} row(s) removed.")
