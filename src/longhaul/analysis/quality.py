"""Which rows the analysis may use, and what it says about the others: a run whose tool
failed (`error`) carries no measurement; an emulated run the emulator could not honestly
produce (`degraded`) carries a wrong one. Both are left out, each with its reason. Rows
that lack what a profile needs (a length, a congestion control) stay in, but are counted
so that the reader learns why they do not appear in a profile."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd


@dataclass(frozen=True)
class Usable:
    rows: pd.DataFrame
    """The rows to analyse."""
    left_out: pd.DataFrame
    """Failed and degraded rows, each with its `error` or `health` (and so its reasons)."""

    def note(self) -> str | None:
        """What was left out or cannot be placed, in a few sentences; or None."""
        sentences = []
        failed = int(_flag(self.left_out, "error").sum())
        degraded = len(self.left_out) - failed
        if failed:
            sentences.append(f"{failed} run(s) left out: their tool failed (the reasons below).")
        if degraded:
            sentences.append(
                f"{degraded} run(s) left out: the emulator could not keep up with them (it "
                "was late beyond the thresholds of `longhaul.measure.health`, also after "
                "the campaign ran them again)."
            )
        sentences += _unplaced(self.rows)
        return " ".join(sentences) or None


def _unplaced(rows: pd.DataFrame) -> list[str]:
    """Sentences on TCP runs that no profile can place (no length, no cc)."""
    if "test" not in rows.columns:
        return []
    tcp = rows[rows["test"] == "tcp_throughput"]
    found = []
    no_length = int(tcp["length_miles"].isna().sum()) if "length_miles" in tcp else 0
    no_cc = int(tcp["cc"].isna().sum()) if "cc" in tcp else 0
    if no_length:
        found.append(
            f"{no_length} TCP run(s) have no length and are in no distance profile "
            "(import them with --length-miles)."
        )
    if no_cc:
        found.append(
            f"{no_cc} TCP run(s) have no congestion control and are in no profile "
            "(import them with --cc)."
        )
    return found


def usable(frame: pd.DataFrame) -> Usable:
    """Split `frame` into the rows to analyse and the failed or degraded ones."""
    if frame.empty:
        return Usable(frame, frame.iloc[0:0])
    out = _flag(frame, "error") | _flag(frame, "degraded")
    return Usable(frame[~out].reset_index(drop=True), frame[out].reset_index(drop=True))


def reasons(row: pd.Series) -> str:
    """Why a left-out row was left out, in a line."""
    error = row.get("error")
    if isinstance(error, str) and error:
        return f"failed: {error}"
    health = row.get("health") or {}
    return "; ".join(health.get("reasons") or []) or "degraded"


def _flag(frame: pd.DataFrame, column: str) -> pd.Series:
    """True where `column` marks a row: a true `degraded`, a present `error`."""
    if column not in frame.columns:
        return pd.Series(False, index=frame.index)
    if column == "error":
        return frame[column].notna() & (frame[column] != "")
    return frame[column].fillna(False).astype(bool)
