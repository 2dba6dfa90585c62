"""Running the rounds of recurring campaigns that are due (`measure.schedules`): each on
circuits it books through the reservation API, stored as a campaign of its own, with its
report written beside the others."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from longhaul.control.client import Client
from longhaul.measure import booked
from longhaul.measure import campaign as campaigns
from longhaul.measure.runner import Runner, check_tools
from longhaul.measure.schedules import Schedule, Schedules
from longhaul.measure.store import ResultsStore
from longhaul.testbed import Testbed

Say = Callable[[str], None]


def run_due(
    schedules: Schedules,
    client: Client,
    testbed: Testbed,
    store: ResultsStore,
    folder: Path,
    say: Say,
) -> list[str]:
    """Run every round due now, one after the other; a note on each."""
    notes = []
    for schedule in schedules.due(datetime.now(UTC)):
        try:
            note = run_round(schedule, client, testbed, store, folder, say)
        except Exception as exc:  # a failed round is noted; the schedule goes on
            note = f"round {schedule.rounds + 1} failed: {exc}"
        schedules.finished_round(schedule.id, note, datetime.now(UTC))
        say(f"schedule {schedule.id}: {note}")
        notes.append(note)
    return notes


def run_round(
    schedule: Schedule,
    client: Client,
    testbed: Testbed,
    store: ResultsStore,
    folder: Path,
    say: Say,
) -> str:
    """One round: the campaign under its round's name, then its report."""
    spec = replace(
        campaigns.parse(schedule.spec, source=f"schedule {schedule.id}"),
        name=schedule.next_campaign,
    )
    check_tools(spec)
    runner = Runner(store, testbed, folder / "results")
    purpose = f"longhaul schedule {schedule.id}: {spec.name}"
    booked.run(spec, client, testbed, runner, lambda what, _at: say(what), purpose)
    from longhaul.report import write_report  # noqa: PLC0415 - matplotlib loads slowly

    frame = store.frame(spec.name)
    report = write_report(frame, folder / "reports" / spec.name, spec.name)
    return (
        f"round {schedule.rounds + 1}: {len(frame)} run(s) stored as {spec.name!r}; report {report}"
    )
