"""`longhaul devices serve`: every switch of a topology as a simulated device behind one
SSH server (asyncssh). A session signs in with the device's node id as its user name and
the served password, and gets that device's command line: the FTOS-like CLI of an edge
switch (a prompt after each answer) or TL1 for a core switch (`<` after each response).
Each device keeps its configuration for as long as the server runs."""

from __future__ import annotations

import asyncio
import secrets
from pathlib import Path

import asyncssh
import tomli_w

from longhaul.control.devices.core import CoreSwitch
from longhaul.control.devices.edge import EdgeSwitch
from longhaul.topology import NodeKind, Topology

TL1_PROMPT = "<"


def devices_of(topology: Topology) -> dict[str, EdgeSwitch | CoreSwitch]:
    found: dict[str, EdgeSwitch | CoreSwitch] = {}
    for node in topology.nodes.values():
        if node.kind is NodeKind.CORE:
            found[node.id] = CoreSwitch(node.id, frozenset(node.ports))
        elif node.kind is not NodeKind.HOST:
            found[node.id] = EdgeSwitch(node.id, frozenset(node.ports))
    return found


class _Server(asyncssh.SSHServer):
    def __init__(self, password: str, devices: dict[str, EdgeSwitch | CoreSwitch]) -> None:
        self._password = password
        self._devices = devices

    def begin_auth(self, username: str) -> bool:
        return True

    def password_auth_supported(self) -> bool:
        return True

    def validate_password(self, username: str, password: str) -> bool:
        return username in self._devices and secrets.compare_digest(password, self._password)


async def _session(process: asyncssh.SSHServerProcess[str],
                   devices: dict[str, EdgeSwitch | CoreSwitch]) -> None:  # fmt: skip
    device = devices[process.get_extra_info("username")]
    process.stdout.write(_prompt(device))
    try:
        async for line in process.stdin:
            answer = device.execute(line.strip())
            process.stdout.write((answer + "\n" if answer else "") + _prompt(device))
    except asyncssh.BreakReceived:
        pass
    process.exit(0)


def _prompt(device: EdgeSwitch | CoreSwitch) -> str:
    return TL1_PROMPT if isinstance(device, CoreSwitch) else f"{device.prompt} "


def write_inventory(path: Path, host: str, port: int, password: str, host_key: asyncssh.SSHKey,
                    ) -> None:  # fmt: skip
    """The inventory the `cli` driver reads, and the host key it is to trust beside it."""
    known = path.with_name(path.stem + ".known_hosts")
    entry = host if port == 22 else f"[{host}]:{port}"
    known.write_text(f"{entry} {host_key.export_public_key().decode().strip()}\n")
    inventory = {"host": host, "port": port, "username": "{node}", "password": password,
                 "known_hosts": known.name, "timeout_s": 10.0, "retries": 2}  # fmt: skip
    path.touch(mode=0o600)  # the password is never readable by others, not even at first
    path.chmod(0o600)
    path.write_text("# Written by `longhaul devices serve`: its simulated devices.\n"
                    + tomli_w.dumps(inventory), encoding="utf-8")  # fmt: skip


async def serve(topology: Topology, host: str, port: int, inventory: Path,
                ready: asyncio.Event | None = None,
                devices: dict[str, EdgeSwitch | CoreSwitch] | None = None) -> None:  # fmt: skip
    """Serve until cancelled; write `inventory` once listening. `devices` (the
    topology's switches by default) lets a caller look at their configuration."""
    devices = devices_of(topology) if devices is None else devices
    password = secrets.token_urlsafe(18)
    host_key = asyncssh.generate_private_key("ssh-ed25519")
    server = await asyncssh.create_server(
        lambda: _Server(password, devices), host, port, server_host_keys=[host_key],
        process_factory=lambda process: _session(process, devices),
    )  # fmt: skip
    bound = server.sockets[0].getsockname()[1]
    write_inventory(inventory, host, bound, password, host_key)
    if ready is not None:
        ready.set()
    try:
        await asyncio.Future()  # until cancelled
    finally:
        server.close()
