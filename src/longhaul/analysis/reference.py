"""The published USN tables (`data/reference/*.csv`), and the check that every derived
figure in them follows from its inputs within the rounding of those inputs.

Every published number is rounded to its last digit, so it stands for an interval of
half a unit either side (`intervals.rounded`). A derived figure (a DPM, an average) is
recomputed with interval arithmetic from the intervals of its inputs, and it is *within
rounding* when its own interval overlaps the recomputed one: some true inputs
consistent with the published inputs give a true figure consistent with the published
figure. Values stay text until then, because "0.50" and "0.5" are different claims.

Connection lengths are taken as exact: they are the nominal lengths the papers divided
by (0.2, 1,400, ...), not measurements.

What the published aggregates turned out to be (see `_NOTES` for each miss):

- tcp_profiles.csv, DPM column: D(d) from avg_gbps against 0.2 miles, as USN defined it
  §3. All within rounding except HTCP at 8,600 miles (0.87; the throughputs give
  [0.8617, 0.8640]).
- tcp_profiles.csv, average DPM per cc (header: BIC 1.34, HTCP 1.29): the mean of D(d)
  over 1,400, 6,600 and 8,600 miles. Both within rounding, recomputed from the
  throughputs (and from the published DPM column too).
- ib_rdma.csv, DPM column: as for TCP. SONET at 1,400 miles (0.012) is within rounding
  only as an interval, as the CSV says (the point values give 0.0071); WAN-PHY at 1,400
  miles (0.018) is not within rounding by any reading.
- ib_rdma.csv, published averages per connection: throughput and std are means over all
  four lengths (0.2 included), the DPM the mean over the three long lengths. WAN-PHY's
  7.43 Gb/s and both DPMs are within rounding; SONET's 7.47 Gb/s, SONET's std 11.40 and
  WAN-PHY's std 0.11 are not, and no other reading that serves both connections
  reproduces them.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable
from dataclasses import dataclass
from importlib.resources import files
from importlib.resources.abc import Traversable
from typing import Any

import pandas as pd

from longhaul.analysis import intervals
from longhaul.analysis.intervals import Interval, exact, rounded
from longhaul.analysis.profiles import dpm_mbps_per_mile

REFERENCE: Traversable = files("longhaul") / "data" / "reference"
TCP_PROFILES = "tcp_profiles.csv"
IB_RDMA = "ib_rdma.csv"

CRITERION = (
    "A published figure is within rounding when the interval it stands for (half a unit "
    "in its last digit either side) overlaps the interval recomputed, with interval "
    "arithmetic, from the rounding intervals of its published inputs."
)

_AVERAGE_DPM = re.compile(r"Average DPM:(?P<list>[^\n]*)")
_NAMED_NUMBER = re.compile(r"(?P<name>[A-Za-z][\w-]*) (?P<value>\d+(?:\.\d+)?)")
_IB_AVERAGE = re.compile(
    r"(?P<name>[A-Za-z][\w-]*) (?P<gbps>\d+\.\d+) Gb/s "
    r"\(std (?P<std>\d+\.\d+)(?: Mb/s)?, DPM (?P<dpm>\d+\.\d+)\)"
)

_NOTES: dict[tuple[str, str, str, str], str] = {
    # tcp_profiles.csv, HTCP at 8,600 miles.
    (TCP_PROFILES, "htcp", "dpm_mbps_per_mile", "8600"): (
        "(9.21 − 1.79) / 8,599.8 Mb/s per mile is [0.8617, 0.8640] over the rounding of "
        "both throughputs, which rounds to 0.86. 0.87 needs T̄(8,600) between 1.68 and "
        "1.78 Gb/s; the published 1.79 is also above the 6,600-mile 1.22. Tried: d0 = 0 "
        "(span 8,600: [0.8616, 0.8640]), against 1,400 or 6,600 miles (0.68, negative): "
        "none reaches 0.865."
    ),
    # ib_rdma.csv, the 1,400-mile DPMs the CSV warns about.
    (IB_RDMA, "sonet", "dpm_mbps_per_mile", "1400"): (
        "From the point values (7.48 − 7.47) / 1,399.8 = 0.0071, not 0.012; within "
        "rounding because the two throughputs may differ by anything in [0, 20] Mb/s."
    ),
    (IB_RDMA, "wanphy", "dpm_mbps_per_mile", "1400"): (
        "0.018 (at least 0.0175) needs a drop of at least 24.5 Mb/s over 1,399.8 miles; "
        "throughputs published as 7.50 and 7.49 Gb/s differ by at most 20 Mb/s, so the "
        "recomputed DPM is at most 0.0143. No choice of d0 helps: the span would have to "
        "be under 1,143 miles. Likely a misprint."
    ),
    # ib_rdma.csv, the header's published averages.
    (IB_RDMA, "sonet", "average_gbps", ""): (
        "The mean over all four lengths is [7.41, 7.42] (7.415 from the published "
        "values): the reading that reproduces WAN-PHY's 7.43. 7.47 is reached only by the "
        "0.2- or the 1,400-mile value alone or by the mean of those two ([7.47, 7.48]), "
        "readings under which WAN-PHY's 7.43 fails; no set of lengths serves both "
        "connections. Possibly a misprint of 7.42."
    ),
    (IB_RDMA, "sonet", "average_std_mbps", ""): (
        "The mean of the four per-length stds is [11.37, 11.38] (11.375 from the published "
        "values, 11.4 to one decimal: the likeliest origin of '11.40'). Tried: the mean "
        "over every other set of lengths (none within rounding), the root mean square "
        "(22.64), the median (0.08), the std of the four means (61.0 Mb/s population, "
        "70.5 sample), the std of all 40 runs (about 65)."
    ),
    (IB_RDMA, "wanphy", "average_std_mbps", ""): (
        "Unit not given in the header; Mb/s as in the std column is assumed (in Gb/s no "
        "statistic of the table comes near). The mean of the four stds is [0.255, 0.265]; "
        "only leaving out the 1,400-mile 0.69 ([0.1117, 0.1217]) overlaps 0.11, a reading "
        "that does not serve SONET (15.14 without 1,400 miles). Root mean square 0.36, "
        "median 0.14, std of the four means 61.0 Mb/s: none reaches 0.11."
    ),
}


@dataclass(frozen=True)
class Table:
    """A reference CSV: its header comments and its rows, every value as text ("" when
    blank)."""

    name: str
    comments: tuple[str, ...]
    rows: pd.DataFrame


@dataclass(frozen=True)
class Check:
    """One published derived figure against its recomputation from the inputs."""

    table: str
    subject: str
    """The congestion control or connection type (a value of the table's first column)."""
    figure: str
    at_miles: str
    """The length the figure is for, as published; "" for an aggregate over lengths."""
    published: str
    recomputed: Interval
    of: str
    """What the figure is computed from: the reading under which it was recomputed."""

    @property
    def published_interval(self) -> Interval:
        return rounded(self.published)

    @property
    def within_rounding(self) -> bool:
        return self.published_interval.overlaps(self.recomputed)

    @property
    def note(self) -> str:
        return _NOTES.get((self.table, self.subject, self.figure, self.at_miles), "")

    def to_json(self) -> dict[str, Any]:
        return {
            "subject": self.subject,
            "figure": self.figure,
            "at_miles": self.at_miles or None,
            "published": self.published,
            "published_interval": list(self.published_interval.as_floats()),
            "recomputed": list(self.recomputed.as_floats()),
            "within_rounding": self.within_rounding,
            "of": self.of,
            "note": self.note or None,
        }


def parse_table(name: str, text: str) -> Table:
    """A reference CSV's text as a `Table`: lines starting with '#' are its comments."""
    comments = tuple(
        line.lstrip()[1:].strip() for line in text.splitlines() if line.lstrip().startswith("#")
    )
    body = "\n".join(
        line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")
    )
    records = list(csv.reader(io.StringIO(body)))
    if not records:
        raise ValueError(f"{name}: no header line")
    header, values = records[0], records[1:]
    for number, record in enumerate(values, start=1):
        if len(record) != len(header):
            raise ValueError(
                f"{name}: data line {number} has {len(record)} fields, not {len(header)}"
            )
    return Table(name, comments, pd.DataFrame(values, columns=header, dtype=str))


def load_table(name: str) -> Table:
    """One of the shipped reference CSVs (`table_names()`)."""
    return parse_table(name, (REFERENCE / name).read_text(encoding="utf-8"))


def table_names() -> list[str]:
    return sorted(entry.name for entry in REFERENCE.iterdir() if entry.name.endswith(".csv"))


def numeric(table: Table) -> pd.DataFrame:
    """The rows with number columns as floats (blank: NaN), for plots and reports;
    columns that are not all numbers stay text."""
    return pd.DataFrame({column: _numbers(table.rows[column]) for column in table.rows.columns})


def tcp_profiles() -> pd.DataFrame:
    """tcp_profiles.csv with numbers: cc, miles, avg_gbps, std_mbps, dpm_mbps_per_mile."""
    return numeric(load_table(TCP_PROFILES))


def dpm_checks(table: Table, subject_column: str) -> list[Check]:
    """The DPM column against D(d) recomputed from avg_gbps, per subject."""
    found = []
    for subject, rows in _by_subject(table, subject_column):
        shortest = rows.iloc[0]
        for _, row in rows.iloc[1:].iterrows():
            if row["dpm_mbps_per_mile"] == "":
                continue
            found.append(
                Check(
                    table.name,
                    subject,
                    "dpm_mbps_per_mile",
                    row["miles"],
                    row["dpm_mbps_per_mile"],
                    _dpm(shortest, row),
                    f"(avg_gbps at {shortest['miles']} mi − avg_gbps at {row['miles']} mi) "
                    f"/ ({row['miles']} − {shortest['miles']}) × 1000",
                )
            )
    return found


def average_dpm(rows: pd.DataFrame) -> Interval:
    """The mean DPM over every length but the shortest, from the throughputs. The
    shortest length's throughput enters every term, but each term grows with it, so
    the interval sum is the exact range and not an over-wide enclosure."""
    shortest = rows.iloc[0]
    return intervals.mean(_dpm(shortest, row) for _, row in rows.iloc[1:].iterrows())


def tcp_profiles_checks(table: Table) -> list[Check]:
    """tcp_profiles.csv: its DPM column and the average DPM per cc in its header."""
    published = parse_average_dpm(table.comments)
    found = dpm_checks(table, "cc")
    subjects = dict(_by_subject(table, "cc"))
    _require_subjects(table.name, published, subjects)
    for subject, value in published.items():
        rows = subjects[subject]
        found.append(
            Check(
                table.name,
                subject,
                "average_dpm_mbps_per_mile",
                "",
                value,
                average_dpm(rows),
                f"mean of D(d) over {_lengths(rows.iloc[1:])} mi, from avg_gbps",
            )
        )
    return found


def ib_rdma_checks(table: Table) -> list[Check]:
    """ib_rdma.csv: its DPM column and the published averages in its header."""
    published = parse_ib_averages(table.comments)
    found = dpm_checks(table, "connection")
    subjects = dict(_by_subject(table, "connection"))
    _require_subjects(table.name, published, subjects)
    for subject, values in published.items():
        rows = subjects[subject]
        every_length = _lengths(rows)
        aggregates = [
            (
                "average_gbps",
                intervals.mean(map(rounded, rows["avg_gbps"])),
                f"mean of avg_gbps over {every_length} mi",
            ),
            (
                "average_std_mbps",
                intervals.mean(map(rounded, rows["std_mbps"])),
                f"mean of std_mbps over {every_length} mi",
            ),
            (
                "average_dpm_mbps_per_mile",
                average_dpm(rows),
                f"mean of D(d) over {_lengths(rows.iloc[1:])} mi, from avg_gbps",
            ),
        ]
        for figure, recomputed, of in aggregates:
            found.append(Check(table.name, subject, figure, "", values[figure], recomputed, of))
    return found


def checks() -> list[Check]:
    """Every derived published figure, recomputed."""
    return [
        *tcp_profiles_checks(load_table(TCP_PROFILES)),
        *ib_rdma_checks(load_table(IB_RDMA)),
    ]


def compare_reference() -> dict[str, Any]:
    """The checks as JSON-ready data: per table its figures, each with the published
    text and interval, the recomputed interval and whether they overlap; and whether
    all of them do."""
    found = checks()
    tables: dict[str, Any] = {}
    for check in found:
        entry = tables.setdefault(check.table, {"all_within_rounding": True, "figures": []})
        entry["figures"].append(check.to_json())
        entry["all_within_rounding"] = entry["all_within_rounding"] and check.within_rounding
    return {
        "criterion": CRITERION,
        "all_within_rounding": all(check.within_rounding for check in found),
        "tables": tables,
    }


def parse_average_dpm(comments: Iterable[str]) -> dict[str, str]:
    """{subject: published average DPM} from a header line like `Average DPM: BIC 1.34,
    HTCP 1.29.`"""
    for line in comments:
        match = _AVERAGE_DPM.search(line)
        if match:
            pairs = _NAMED_NUMBER.findall(match.group("list"))
            return {_subject(name): value for name, value in pairs}
    raise ValueError("no 'Average DPM:' line in the header comments")


def parse_ib_averages(comments: Iterable[str]) -> dict[str, dict[str, str]]:
    """{subject: {average_gbps, average_std_mbps, average_dpm_mbps_per_mile}} from a
    header line like `SONET 7.47 Gb/s (std 11.40 Mb/s, DPM 0.015); WAN-PHY ...`."""
    found = {
        _subject(match.group("name")): {
            "average_gbps": match.group("gbps"),
            "average_std_mbps": match.group("std"),
            "average_dpm_mbps_per_mile": match.group("dpm"),
        }
        for line in comments
        for match in _IB_AVERAGE.finditer(line)
    }
    if not found:
        raise ValueError("no published averages (NAME x Gb/s (std y, DPM z)) in the header")
    return found


def _dpm(shortest: pd.Series, row: pd.Series) -> Interval:
    return dpm_mbps_per_mile(
        rounded(shortest["avg_gbps"]),
        rounded(row["avg_gbps"]),
        exact(shortest["miles"]),
        exact(row["miles"]),
    )


def _by_subject(table: Table, subject_column: str) -> list[tuple[str, pd.DataFrame]]:
    """Each subject's rows, shortest length first (d0 is the shortest length)."""
    rows = table.rows.assign(_miles=table.rows["miles"].map(exact))
    return [
        (str(subject), group.sort_values("_miles").drop(columns="_miles"))
        for subject, group in rows.groupby(subject_column, sort=False)
    ]


def _require_subjects(name: str, published: dict[str, Any], subjects: dict[str, Any]) -> None:
    unknown = sorted(set(published) - set(subjects))
    if unknown:
        raise ValueError(f"{name}: the header names {unknown}, the rows {sorted(subjects)}")


def _subject(name: str) -> str:
    """A header's name for a row subject: `WAN-PHY` is the rows' `wanphy`."""
    return name.lower().replace("-", "")


def _lengths(rows: pd.DataFrame) -> str:
    return ", ".join(rows["miles"])


def _numbers(column: pd.Series) -> pd.Series:
    filled = column[column != ""]
    converted = pd.to_numeric(filled, errors="coerce")
    if converted.isna().any():
        return column
    return pd.to_numeric(column.replace("", None), errors="coerce").astype(float)
