"""`longhaul accelerate`: the WAN accelerator pair on a reserved channel (the circuit the
control plane provisioned for a reservation on this machine's testbed), until Ctrl-C."""

from __future__ import annotations

import contextlib
import signal
import threading
from typing import Annotated

import typer

from longhaul.cli.common import console, fail, print_json
from longhaul.cli.transfer import reserved_circuit
from longhaul.measure.tools import accelerator


def _forward(text: str) -> tuple[int, int]:
    near, _, far = text.partition("=")
    try:
        ports = int(near), int(far or near)
    except ValueError:
        fail(f"--forward {text!r}: give PORT or NEAR_PORT=SERVER_PORT, like 5201 or 8080=80")
    if not all(0 < p < 65536 for p in ports):
        fail(f"--forward {text!r}: ports are 1-65535")
    return ports


def accelerate(
    forward: Annotated[
        list[str],
        typer.Option(
            help="PORT or NEAR_PORT=SERVER_PORT: clients on the near host connect to "
            "127.0.0.1:NEAR_PORT and reach the far host's SERVER_PORT (repeatable)."
        ),
    ],
    reservation: Annotated[
        int | None, typer.Option(help="Accelerate this reservation's circuit.")
    ] = None,
    circuit: Annotated[int | None, typer.Option(help="Or this testbed circuit.")] = None,
    features: Annotated[
        str, typer.Option(help="tfo, tfo+dre, tfo+lz or tfo+dre+lz.")
    ] = "tfo+dre+lz",
    congestion: Annotated[
        str, typer.Option(help="Congestion control of the accelerators' own connection.")
    ] = "cubic",
    json_output: Annotated[
        bool, typer.Option("--json", help="Print the counters as JSON at the end.")
    ] = False,
) -> None:
    """Run the accelerator pair on a reserved channel until Ctrl-C: the near one on the
    channel's first host, the far one on its second; then print what they did (bytes
    from the applications and on the wire, cache hits, compression)."""
    forwards = tuple(_forward(f) for f in forward)
    record = reserved_circuit(reservation, circuit)
    buffers = accelerator.wan_buffer_bytes(record.rate_bps, record.rtt_ms,
                                           record.queue_bytes or 0)  # fmt: skip
    stop = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        with accelerator.Pair(record.src_ns, record.dst_ns, record.dst_addr, features, buffers,
                              congestion=congestion, forwards=forwards) as pair:  # fmt: skip
            if not json_output:
                for near_port, port in forwards:
                    console.print(
                        f"{record.src_host}: connect to 127.0.0.1:{near_port} to reach "
                        f"{record.dst_addr}:{port} ({features}); Ctrl-C ends it"
                    )
            with contextlib.suppress(KeyboardInterrupt):
                stop.wait()
    except accelerator.AcceleratorError as exc:
        fail(str(exc), code=1)
    finally:
        signal.signal(signal.SIGTERM, previous)
    if json_output:
        print_json(pair.reports)
        return
    sent = pair.reports.get("near", {}).get("sent", {})
    if sent.get("app_bytes"):
        console.print(f"carried {sent['app_bytes']:,} bytes in {sent['wire_bytes']:,} on the "
                      f"wire ({sent['wire_bytes'] / sent['app_bytes']:.3f}); "
                      f"{sent['cache_hit_bytes']:,} bytes as cache references")  # fmt: skip
