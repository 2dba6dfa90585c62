"""The `longhaul` command. Thin: each subcommand parses its options and calls the library."""

from __future__ import annotations

import sys

import typer

from longhaul import __version__
from longhaul.cli import (
    analyze,
    bench,
    campaign,
    control,
    report,
    reservations,
    sim,
    slots,
    testbed,
    topology,
)
from longhaul.cli.common import say_error
from longhaul.errors import InputError
from longhaul.topology import TopologyError

app = typer.Typer(
    name="longhaul",
    help="Reserve, emulate and profile dedicated wide-area network channels "
    "(a software UltraScience Net).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)
app.add_typer(topology.app, name="topology")
app.add_typer(testbed.app, name="testbed")
app.add_typer(campaign.app, name="campaign")
app.add_typer(campaign.results_app, name="results")
app.add_typer(bench.app, name="bench")
app.add_typer(analyze.app, name="analyze")
app.add_typer(sim.app, name="sim")
app.command(name="slots")(slots.slots)
app.command(name="report")(report.report)
app.command(name="demo")(report.demo)
app.command(name="serve")(control.serve)
app.add_typer(control.user_app, name="user")
for command in (reservations.login, reservations.reserve, reservations.reservations,
                reservations.show, reservations.modify, reservations.cancel):  # fmt: skip
    app.command()(command)


@app.command()
def version() -> None:
    """Print longhaul's version."""
    typer.echo(__version__)


def main() -> None:
    """Run the command; bad input prints one line saying what to fix, and exits 2."""
    try:
        app()
    except (InputError, TopologyError) as exc:
        say_error(str(exc))
        sys.exit(2)
