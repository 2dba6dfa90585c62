"""The `longhaul` command. Thin: each subcommand parses its options and calls the library."""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType

import typer

from longhaul import __version__
from longhaul.cli import (
    accelerate,
    analyze,
    bench,
    campaign,
    control,
    devices,
    encrypt,
    nsi,
    report,
    reservations,
    sim,
    slots,
    testbed,
    topology,
    transfer,
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
app.add_typer(devices.app, name="devices")
app.add_typer(nsi.app, name="nsi")
app.command(name="slots")(slots.slots)
app.command(name="report")(report.report)
app.command(name="demo")(report.demo)
app.command(name="serve")(control.serve)
app.command(name="transfer")(transfer.transfer)
app.command(name="accelerate")(accelerate.accelerate)
app.command(name="encrypt")(encrypt.encrypt)
app.add_typer(control.user_app, name="user")
app.command(name="audit")(control.audit)
for command in (reservations.login, reservations.reserve, reservations.reservations,
                reservations.show, reservations.modify, reservations.cancel):  # fmt: skip
    app.command()(command)


@app.command()
def version() -> None:
    """Print longhaul's version."""
    typer.echo(__version__)


_INSTALLED_BY = os.getpid()


def _stop(signum: int, _frame: FrameType | None) -> None:
    """SIGTERM ends a command as Ctrl-C does: its clean-up runs (a testbed it built is
    taken down), instead of Python dying where it stands. A process forked from this one
    without exec (pyroute2 runs netlink in namespaces so) inherits the handler, but not
    the right to clean up: unwinding the stack it copied would run the parent's clean-up
    a second time, under the parent's locks. It only exits."""
    if os.getpid() != _INSTALLED_BY:
        os._exit(128 + signum)
    raise SystemExit(128 + signum)


def main() -> None:
    """Run the command; bad input prints one line saying what to fix, and exits 2."""
    global _INSTALLED_BY  # noqa: PLW0603
    _INSTALLED_BY = os.getpid()
    signal.signal(signal.SIGTERM, _stop)
    try:
        app()
    except (InputError, TopologyError) as exc:
        say_error(str(exc))
        sys.exit(2)
