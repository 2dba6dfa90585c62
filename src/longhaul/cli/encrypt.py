"""`longhaul encrypt`: link encryptors on a reserved channel (the circuit the control
plane provisioned for a reservation on this machine's testbed), as the 10 Gb/s encryption
devices USN put in its path: on, off, or what they have done."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from longhaul.cli.common import console, err_console, fail, print_json
from longhaul.cli.transfer import reserved_circuit
from longhaul.testbed import TestbedError
from longhaul.testbed import encryptor as enc
from longhaul.testbed.state import CircuitRecord


def encrypt(
    reservation: Annotated[
        int | None, typer.Option(help="Encrypt this reservation's circuit.")
    ] = None,
    circuit: Annotated[int | None, typer.Option(help="Or this testbed circuit.")] = None,
    off: Annotated[bool, typer.Option("--off", help="Take the encryptors off.")] = False,
    status: Annotated[
        bool, typer.Option("--status", help="Only show what the encryptors have done.")
    ] = False,
    mtu: Annotated[
        int, typer.Option(help="The line's MTU: a longer sealed packet is fragmented or dropped.")
    ] = enc.LINE_MTU_BYTES,
    host_mtu: Annotated[
        int | None,
        typer.Option(
            help="Set both hosts' interface MTU (USN aligned it to 8950 so that a sealed "
            "packet fits a 9000-byte line)."
        ),
    ] = None,
    oversize: Annotated[
        str, typer.Option(help="A sealed packet longer than --mtu: fragment or drop.")
    ] = "fragment",
    rekey_s: Annotated[
        float, typer.Option(help="Seconds one key seals before the next is used.", min=0.001)
    ] = 600.0,
    replay_window: Annotated[
        int, typer.Option(help="Sequence numbers behind the newest still accepted once.")
    ] = 1024,
    secret_file: Annotated[
        Path | None,
        typer.Option(
            help="The shared secret (32+ bytes) the keys are derived from; default: a new "
            "random one (both ends live in the circuit's emulator).",
            exists=True,
            dir_okay=False,
        ),
    ] = None,
    json_output: Annotated[
        bool, typer.Option("--json", help="Print the counters as JSON.")
    ] = False,
) -> None:
    """Put AES-256-GCM link encryptors on a reserved channel, take them off (--off), or show
    their counters (--status). Every frame entering the line is sealed (48 bytes more per
    packet) and every frame leaving it opened; a frame that fails is dropped and counted.
    What is on the line at the moment they go on or off is dropped."""
    if oversize not in enc.OVERSIZE:
        fail(f"--oversize {oversize!r}: give fragment or drop")
    if off and status:
        fail("--off or --status, not both")
    record = reserved_circuit(reservation, circuit)
    try:
        if status:
            _show(record, enc.counters(record), json_output)
            return
        if off:
            last = enc.counters(record)
            enc.decrypt(record)
            console.print(f"circuit {record.number}: encryptors off")
            _show(record, last, json_output)
            return
        secret = enc.read_secret(secret_file) if secret_file else enc.new_secret()
        setup = enc.Encryptor(mtu_bytes=mtu, oversize=oversize, rekey_interval_s=rekey_s,
                              replay_window=replay_window)  # fmt: skip
        enc.encrypt(record, setup, secret)
        if host_mtu is not None:
            enc.set_host_mtu(record, host_mtu)
        hosts = enc.host_mtu(record)
    except (enc.EncryptorError, TestbedError) as exc:
        fail(str(exc), code=1)
    console.print(f"circuit {record.number} ({record.src_host} - {record.dst_host}): "
                  f"encrypted, line MTU {mtu:,}, hosts' MTU {hosts:,}")  # fmt: skip
    sealed = hosts + enc.SEGMENT_OVERHEAD_BYTES
    if sealed > mtu:
        fate = "fragmented in two" if oversize == "fragment" else "dropped (nothing large passes)"
        err_console.print(f"[yellow]a full-size packet sealed is {sealed:,} bytes, longer than "
                          f"the line's {mtu:,}: it will be {fate}; align the hosts with "
                          f"--host-mtu {mtu - enc.SEGMENT_OVERHEAD_BYTES}[/]")  # fmt: skip


def _show(record: CircuitRecord, counters: dict[str, Any] | None, json_output: bool) -> None:
    if json_output:
        print_json(counters)
        return
    if counters is None:
        console.print(f"circuit {record.number} is not encrypted")
        return
    table = Table(title=f"Encryptors on circuit {record.number}", title_justify="left")
    table.add_column("")
    directions = (("a_to_b", f"{record.src_host} → {record.dst_host}"),
                  ("b_to_a", f"{record.dst_host} → {record.src_host}"))  # fmt: skip
    for _, name in directions:
        table.add_column(name, justify="right")
    for key in ("sealed_frames", "sealed_bytes", "opened_frames", "refused_forged",
                "refused_replayed", "refused_truncated", "fragmented_segments",
                "oversize_dropped_frames", "rekeys"):  # fmt: skip
        table.add_row(key.replace("_", " "), *(f"{counters[d][key]:,}" for d, _ in directions))
    console.print(table)
