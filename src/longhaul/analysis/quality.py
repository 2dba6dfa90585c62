"""Which rows the analysis may use: an emulated run the emulator could not honestly
produce (`degraded`) is left out, and what was left out is said."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd


@dataclass(frozen=True)
class Usable:
    rows: pd.DataFrame
    """The rows to analyse."""
    left_out: pd.DataFrame
    """Degraded rows, each with its `health` (and so its reasons)."""

    def note(self) -> str | None:
        """One sentence on what was left out, or None."""
        if self.left_out.empty:
            return None
        count = len(self.left_out)
        return (
            f"{count} run(s) left out: the emulator could not keep up with them (it was "
            "late beyond the thresholds of `longhaul.measure.health`, also after the "
            "campaign ran them again)."
        )


def usable(frame: pd.DataFrame) -> Usable:
    """Split `frame` into the rows to analyse and the degraded ones."""
    if "degraded" not in frame.columns or frame.empty:
        return Usable(frame, frame.iloc[0:0])
    degraded = frame["degraded"].fillna(False).astype(bool)
    return Usable(frame[~degraded].reset_index(drop=True), frame[degraded].reset_index(drop=True))


def reasons(row: pd.Series) -> str:
    """Why a left-out row was degraded, in a line."""
    health = row.get("health") or {}
    return "; ".join(health.get("reasons") or []) or "degraded"
