"""The parameters a test or a tool takes in a campaign file, and what they may be."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

KERNEL_CC = ("cubic", "reno", "bbr")
"""The congestion controls this kernel offers (iperf3 -C)."""


@dataclass(frozen=True)
class Param:
    """A parameter: as a list (a grid dimension) or a single value."""

    name: str
    kind: type
    default: Any
    grid: bool
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()
