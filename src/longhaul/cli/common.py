"""What the subcommands share: consoles, time formatting, JSON output."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path as FilePath
from typing import Any, NoReturn

import typer
from rich.console import Console
from rich.text import Text

from longhaul.topology import Topology, load_topology, usn

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)


def say_error(message: str) -> None:
    """`error: MESSAGE` on stderr, as plain text: never re-wrapped, brackets kept."""
    err_console.print(Text.assemble(("error: ", "bold red"), message), soft_wrap=True)


def note(message: str) -> None:
    """A line of guidance on stderr (stdout stays for what scripts read)."""
    err_console.print(Text(message), soft_wrap=True)


def fail(message: str, code: int = 2) -> NoReturn:
    """Say what is wrong and how to fix it, then exit (2: bad input; 1: the world failed)."""
    say_error(message)
    raise typer.Exit(code)


def load_or_usn(file: FilePath | None) -> Topology:
    return usn() if file is None else load_topology(file)


def when(value: datetime) -> str:
    """A time for people, in UTC: `2030-01-07 14:00 UTC` (seconds only when they matter)."""
    utc = value.astimezone(UTC)
    text = utc.strftime("%Y-%m-%d %H:%M")
    if utc.second or utc.microsecond:
        text += utc.strftime(":%S")
        if utc.microsecond:
            text += f".{utc.microsecond:06d}"
    return text + " UTC"


def print_json(data: Any) -> None:
    print(json.dumps(data, indent=2))
