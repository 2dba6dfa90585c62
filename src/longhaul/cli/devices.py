"""`longhaul devices`: the simulated switches the `cli` driver talks to."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Annotated

import typer

from longhaul.cli.common import console, fail
from longhaul.errors import InputError
from longhaul.topology import TopologyError, load_topology, usn

app = typer.Typer(help="Simulated network devices for the `cli` driver.", no_args_is_help=True)


@app.command()
def serve(
    inventory: Annotated[
        Path, typer.Option(help="Write the devices file here (for `longhaul serve --devices`).")
    ],
    listen: Annotated[str, typer.Option(help="HOST:PORT of the SSH server (port 0: any).")] = (
        "127.0.0.1:2222"
    ),
    topology: Annotated[
        Path | None, typer.Option(help="The topology whose switches to serve (default: USN).")
    ] = None,
) -> None:
    """Serve every switch of the topology over SSH until Ctrl-C: edge switches with an
    FTOS-like CLI (Force10 E300), core switches with TL1 (CoreDirector); each signs in
    with its node id as the user name and the password written to the devices file."""
    from longhaul.control.devices import server  # noqa: PLC0415 (asyncssh is slow to import)

    host, _, port = listen.rpartition(":")
    if not host or not port.isdigit():
        fail(f"--listen {listen!r}: give HOST:PORT, like 127.0.0.1:2222")
    try:
        network = usn() if topology is None else load_topology(topology)
    except (TopologyError, InputError, OSError) as exc:
        fail(str(exc))
    count = len(server.devices_of(network))

    async def run() -> None:
        ready = asyncio.Event()
        task = asyncio.create_task(server.serve(network, host, int(port), inventory, ready))
        await ready.wait()
        console.print(f"serving {count} devices over SSH; devices file {inventory}")
        await task

    with contextlib.suppress(KeyboardInterrupt):
        try:
            asyncio.run(run())
        except OSError as exc:
            fail(f"cannot listen on {listen}: {exc}")
