"""`longhaul transfer`: send a file or directory tree with Hurricane over a reserved
channel (the circuit the control plane provisioned for a reservation on this machine's
testbed), at the reservation's rate, checked end to end."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from longhaul.cli.campaign import DbOption, _store
from longhaul.cli.common import console, fail, print_json
from longhaul.errors import InputError
from longhaul.measure.tools import hurricane
from longhaul.testbed.netns import TestbedError, TestbedUnavailableError
from longhaul.testbed.state import CircuitRecord
from longhaul.testbed.testbed import Testbed


def reserved_circuit(reservation: int | None, circuit: int | None) -> CircuitRecord:
    """The testbed circuit a command runs over: a reservation's, or one named by number
    (`--reservation N` or `--circuit N`, exactly one)."""
    if (reservation is None) == (circuit is None):
        fail("say which channel: --reservation N (a reservation's circuit) or --circuit N")
    bed = Testbed(persistent=True)
    if circuit is not None:
        try:
            return bed.circuit(circuit)
        except InputError as exc:
            fail(f"{exc}: `longhaul testbed status` lists them")
    found = bed.circuit_of(f"reservation {reservation}")
    if found is None:
        fail(
            f"reservation {reservation} has no circuit on this testbed: is it active "
            "(`longhaul show`), and does `longhaul serve` run with the emulated driver?"
        )
    return found


def _stored_pacing(campaign: str, rtt_ms: float, db: str | None) -> dict[str, Any]:
    """W_c and T_s where the campaign's profile peaked, on its loop nearest `rtt_ms`,
    with the tuner on to go on from there."""
    from longhaul.analysis import channel  # noqa: PLC0415 (pandas is slow to import)

    frame = _store(db).frame(campaign)
    runs = channel.profile_rows(frame)
    if runs.empty:
        fail(f"campaign {campaign!r} holds no channel throughput profile (udp_channel_profile)")
    rtts = frame[frame["test"] == channel.TEST].groupby("length_miles")["rtt_ms"].median()
    nearest = min(rtts.index, key=lambda miles: abs(float(rtts[miles] or 0.0) - rtt_ms))
    top = channel.best(runs[runs["length_miles"] == nearest])
    return {"burst": top["burst_datagrams"], "idle_us": top["idle_us"], "tune": True}


def transfer(
    path: Annotated[Path, typer.Argument(help="A file or a directory tree to send.")],
    dest: Annotated[Path, typer.Option(help="Directory the files land in (on the far host).")],
    reservation: Annotated[
        int | None, typer.Option(help="Send over this reservation's circuit.")
    ] = None,
    circuit: Annotated[int | None, typer.Option(help="Or over this testbed circuit.")] = None,
    encrypt: Annotated[bool, typer.Option(help="Encrypt payloads (AES-256-GCM).")] = False,
    from_profile: Annotated[
        str | None,
        typer.Option(
            help="Start from the best W_c and T_s of this campaign's channel throughput "
            "profile (the loop nearest in RTT) and let the tuner search from there."
        ),
    ] = None,
    db: DbOption = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Send PATH over a reserved channel with Hurricane, at the reservation's rate: every
    block checked (BLAKE3), files renamed into place only when whole; run it again to
    take up an interrupted transfer where it stopped."""
    if not path.exists():
        fail(f"{path} does not exist")
    record = reserved_circuit(reservation, circuit)
    pacing = {} if from_profile is None else _stored_pacing(from_profile, record.rtt_ms, db)
    test = hurricane.HurricaneTest(
        client_ns=record.src_ns,
        server_ns=record.dst_ns,
        address=record.dst_addr,
        rate_bps=record.rate_bps,
        path=str(path.resolve()),
        dest_dir=str(dest.resolve()),
        rtt_ms=record.rtt_ms,
        encrypt=encrypt,
        **pacing,
    )
    try:
        result = hurricane.run(test, show_progress=not json_output)
    except (hurricane.HurricaneError, TestbedError, TestbedUnavailableError) as exc:
        fail(str(exc), code=1)
    if json_output:
        print_json({"bytes": result.bytes, "seconds": result.seconds,
                    "goodput_gbps": result.goodput_bps / 1e9,
                    "rate_gbps": record.rate_bps / 1e9, "resumed_bytes": result.resumed_bytes,
                    "blocks_resent": result.blocks_resent, "dest": str(dest)})  # fmt: skip
        return
    resumed = f", {result.resumed_bytes:,} bytes kept from before" if result.resumed_bytes else ""
    console.print(
        f"{result.bytes:,} bytes in {result.seconds:.2f} s: {result.goodput_bps / 1e9:.3f} Gb/s "
        f"of {record.rate_bps / 1e9:g} reserved{resumed}; checked, in {dest}"
    )
