"""What the subcommands share: consoles, time formatting, JSON output."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path as FilePath
from typing import Any

from rich.console import Console

from longhaul.topology import Topology, load_topology, usn

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)


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


def iso(value: datetime) -> str:
    """RFC 3339 in UTC with a `Z`."""
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def print_json(data: Any) -> None:
    print(json.dumps(data, indent=2))
