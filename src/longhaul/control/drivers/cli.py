"""The `cli` driver: provisions circuits by signing in to each switch on the path over
SSH and typing what an operator would, the FTOS-like CLI for an Ethernet edge switch and
TL1 for a SONET core switch (the commands are `commands.device_commands`, the same the
`log` driver records).

Every operation is idempotent, as the job runner needs: a cross-connect that already
exists (TL1 `SAAS`) is resized instead (`ED-`), and releasing what is not there (TL1
`SROF`, FTOS `No such interface Vlan`) is done. A device that cannot be reached, or does
not answer within its timeout, is tried again (`retries`, with a growing pause); a
device that refuses a command is not, and the error names the device, the command and
its words. Under it another driver may run (`cli+emulated`: the emulated testbed's
circuit follows the devices' configuration), provisioned after the devices and released
before them."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable

import asyncssh

from longhaul.control.devices.core import denial
from longhaul.control.devices.inventory import Device, Inventory
from longhaul.control.drivers.base import Circuit, CircuitStatus, Driver, DriverError
from longhaul.control.drivers.commands import device_commands
from longhaul.topology import Topology

_EDGE_PROMPT = re.compile(r"[#>] $")
_TL1_PROMPT = "<"
_BENIGN_EDGE = ("% Error: No such interface Vlan",)
"""Refusals that mean the work is already done (a release repeated)."""


class CliDriver:
    name = "cli"

    def __init__(self, topology: Topology, inventory: Inventory, inner: Driver | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:  # fmt: skip
        self.topology = topology
        self.inventory = inventory
        self.inner = inner
        self._sleep = sleep
        if inner is not None:
            self.name = f"cli+{inner.name}"

    def provision(self, circuit: Circuit) -> None:
        self._apply(circuit, "provision")
        if self.inner is not None:
            self.inner.provision(circuit)

    def modify(self, circuit: Circuit, previous: Circuit) -> None:
        if previous.path != circuit.path:
            self.release(previous)
            self.provision(circuit)
            return
        self._apply(circuit, "modify")
        if self.inner is not None:
            self.inner.modify(circuit, previous)

    def release(self, circuit: Circuit) -> None:
        if self.inner is not None:
            self.inner.release(circuit)
        self._apply(circuit, "release")

    def close(self) -> None:
        if self.inner is not None:
            self.inner.close()

    def status(self, circuit: Circuit) -> CircuitStatus:
        """Up when every switch on the path holds the circuit (and the driver under it
        says up)."""
        for step in device_commands(self.topology, circuit, "provision"):
            if step.language is None:
                continue
            device = self.inventory.device(step.node)
            if step.language == "tl1":
                query = f"RTRV-CRS-STS3C:{step.node}:ALL:1;"
                [answer] = self._session(device, [query], tl1=True)
                held = f"CKTID={circuit.name}," in answer
            else:
                [answer] = self._session(device, ["show running-config"], tl1=False)
                held = f"description {circuit.name}\n" in answer + "\n"
            if not held:
                return CircuitStatus.DOWN
        if self.inner is not None:
            return self.inner.status(circuit)
        return CircuitStatus.UP

    def _apply(self, circuit: Circuit, op: str) -> None:
        for step in device_commands(self.topology, circuit, op):
            if step.language is None or not step.lines:
                continue
            device = self.inventory.device(step.node)
            tl1 = step.language == "tl1"
            answers = self._session(device, step.lines, tl1=tl1)
            for line, answer in zip(step.lines, answers, strict=True):
                if tl1:
                    self._tl1_outcome(device, line, answer, circuit)
                else:
                    self._edge_outcome(device, line, answer)

    def _tl1_outcome(self, device: Device, line: str, answer: str, circuit: Circuit) -> None:
        code = denial(answer)
        if code is None:
            return
        if code == "SROF" and line.startswith("DLT-"):
            return  # not there: released already
        if code == "SAAS" and line.startswith("ENT-"):
            # There already (a provision repeated): make sure of its size, as a modify does.
            [resize] = next(s.lines for s in device_commands(self.topology, circuit, "modify")
                            if s.node == device.node)  # fmt: skip
            [resized] = self._session(device, [resize], tl1=True)
            if denial(resized) is None:
                return
            answer = resized
        raise DriverError(f"{device.node} refused {line!r}: {_words(answer)}")

    @staticmethod
    def _edge_outcome(device: Device, line: str, answer: str) -> None:
        error = next((a for a in answer.splitlines() if a.startswith("% Error")), None)
        if error is None or error.startswith(_BENIGN_EDGE):
            return
        raise DriverError(f"{device.node} refused {line.strip()!r}: {error}")

    def _session(self, device: Device, lines: list[str], *, tl1: bool) -> list[str]:
        """Each line's answer, over one SSH session; tried again while unreachable."""
        attempt = 0
        while True:
            try:
                return asyncio.run(_converse(device, lines, tl1))
            except (OSError, asyncssh.Error, TimeoutError) as exc:
                if isinstance(exc, asyncssh.PermissionDenied) or attempt >= device.retries:
                    raise DriverError(f"{device.node} at {device.host}:{device.port}: "
                                      f"{_reason(exc)}") from exc  # fmt: skip
                attempt += 1
                self._sleep(0.5 * attempt)


async def _converse(device: Device, lines: list[str], tl1: bool) -> list[str]:
    # Without a known_hosts file asyncssh checks ~/.ssh/known_hosts, as ssh does.
    trust = {} if device.known_hosts is None else {"known_hosts": str(device.known_hosts)}
    async with (
        asyncio.timeout(device.timeout_s + device.timeout_s * len(lines) / 10),
        asyncssh.connect(
            device.host,
            device.port,
            username=device.username,
            password=device.password,
            connect_timeout=device.timeout_s,
            **trust,
        ) as conn,  # fmt: skip
        conn.create_process(term_type=None) as process,
    ):
        await _until_prompt(process, tl1)
        answers = []
        for line in lines:
            process.stdin.write(line + "\n")
            answers.append(await _until_prompt(process, tl1))
        process.stdin.write_eof()
        return answers


async def _until_prompt(process: asyncssh.SSHClientProcess[str], tl1: bool) -> str:
    said = ""
    while True:
        chunk = await process.stdout.read(4096)
        if not chunk:
            raise asyncssh.ConnectionLost("the device closed the session")
        said += chunk
        if said.endswith(_TL1_PROMPT) if tl1 else _EDGE_PROMPT.search(said):
            # What came before the prompt: TL1's `<` ends the response; a CLI prompt is
            # the last line.
            body = said.removesuffix(_TL1_PROMPT) if tl1 else said.rpartition("\n")[0]
            return body.strip("\n")


def _words(answer: str) -> str:
    lines = [line.strip() for line in answer.splitlines()[1:] if line.strip() not in ("", ";")]
    return " ".join(lines)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "no answer in time"
    if isinstance(exc, asyncssh.PermissionDenied):
        return "the password was refused (check the devices file)"
    return str(exc) or type(exc).__name__
