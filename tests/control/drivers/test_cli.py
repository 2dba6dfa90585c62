"""The `cli` driver against the simulated devices over real SSH: a circuit provisioned,
read back, resized and released on every switch of its path, each step safe to repeat;
a refusal named; an unreachable device tried again; a wrong password not."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from longhaul.control import drivers
from longhaul.control.devices import server
from longhaul.control.devices.core import CoreSwitch
from longhaul.control.devices.edge import EdgeSwitch
from longhaul.control.devices.inventory import Inventory
from longhaul.control.drivers import Circuit, CircuitStatus, DriverError
from longhaul.control.drivers.cli import CliDriver
from longhaul.control.settings import Settings
from longhaul.errors import InputError
from longhaul.topology import usn

from .test_log import circuit

Devices = dict[str, EdgeSwitch | CoreSwitch]


@pytest.fixture
def devices(tmp_path: Path) -> Iterator[tuple[Devices, Path]]:
    """The USN switches behind a real SSH server on loopback, for the test."""
    topology = usn()
    found = server.devices_of(topology)
    inventory = tmp_path / "devices.toml"
    loop = asyncio.new_event_loop()
    listening = threading.Event()
    task: list[asyncio.Task[None]] = []

    async def main() -> None:
        ready = asyncio.Event()
        task.append(asyncio.create_task(server.serve(topology, "127.0.0.1", 0, inventory,
                                                     ready, found)))  # fmt: skip
        await ready.wait()
        listening.set()
        with contextlib.suppress(asyncio.CancelledError):
            await task[0]

    thread = threading.Thread(target=loop.run_until_complete, args=(main(),), daemon=True)
    thread.start()
    assert listening.wait(20), "the device server did not start"
    try:
        yield found, inventory
    finally:
        loop.call_soon_threadsafe(task[0].cancel)
        thread.join(10)
        loop.close()


def test_a_circuit_is_provisioned_resized_and_released_on_every_switch(devices) -> None:
    found, inventory = devices
    topology = usn()
    driver = CliDriver(topology, Inventory.load(inventory))
    made = circuit(topology, "ornl-e300:1/0", "sunnyvale-e300:1/0", 5000)
    assert driver.status(made) is CircuitStatus.DOWN
    driver.provision(made)
    driver.provision(made)  # repeated (a restarted job): harmless
    switches = [n for n in made.path.nodes if n in found]
    for node in switches:
        device = found[node]
        if isinstance(device, CoreSwitch):
            [held] = device.crossconnects.values()
            assert (held.circuit, held.sts3c) == ("longhaul-7", 34)  # 5,000 / 150, up
        else:
            vlan = device.vlans[1007]
            assert vlan.description == "longhaul-7" and vlan.police_mbps == 5000
            assert not vlan.shutdown and len(vlan.tagged) == 2
    assert driver.status(made) is CircuitStatus.UP
    smaller = circuit(topology, "ornl-e300:1/0", "sunnyvale-e300:1/0", 1000)
    assert smaller.path == made.path
    driver.modify(smaller, made)
    cores = [found[n] for n in switches if isinstance(found[n], CoreSwitch)]
    assert cores and all(c.crossconnects[next(iter(c.crossconnects))].sts3c == 7 for c in cores)  # type: ignore[union-attr]
    driver.release(smaller)
    driver.release(smaller)  # released twice: harmless
    assert all(not getattr(found[n], "crossconnects", None) and not getattr(found[n], "vlans", None)
               for n in switches)  # fmt: skip
    assert driver.status(made) is CircuitStatus.DOWN


def test_a_refused_command_names_the_switch_and_its_words(devices) -> None:
    found, inventory = devices
    topology = usn()
    driver = CliDriver(topology, Inventory.load(inventory))
    # Fill a core switch's line port by hand, so the circuit's cross-connect cannot fit.
    made = circuit(topology, "ornl-e300:1/0", "sunnyvale-e300:1/0", 5000)
    core = next(n for n in made.path.nodes if isinstance(found.get(n), CoreSwitch))
    in_port, out_port = made.ports_at(made.path.nodes.index(core))
    other = next(p for p in found[core].ports if p not in (in_port, out_port))
    found[core].execute(f"ENT-CRS-STS3C:{core}:{other.replace('/', '-')},"  # type: ignore[union-attr]
                        f"{out_port.replace('/', '-')}:1::CKTID=x,NUMSTS=60,CCT=2WAY;")  # fmt: skip
    with pytest.raises(DriverError, match=f"{core} refused 'ENT-CRS-STS3C.*IDNV"):
        driver.provision(made)


def test_an_unreachable_device_is_tried_again_and_a_wrong_password_is_not(tmp_path) -> None:
    inventory = tmp_path / "devices.toml"
    inventory.write_text(
        'host = "127.0.0.1"\nport = 9\npassword = "x"\ntimeout_s = 2\nretries = 2\n'
    )
    pauses: list[float] = []
    driver = CliDriver(usn(), Inventory.load(inventory), sleep=pauses.append)
    made = circuit(usn(), "ornl-e300:1/0", "sunnyvale-e300:1/0", 1000)
    with pytest.raises(DriverError, match=r"ornl-e300 at 127\.0\.0\.1:9"):
        driver.provision(made)
    assert pauses == [0.5, 1.0]


def test_a_wrong_password_is_refused_at_once(devices) -> None:
    _, inventory = devices
    text = inventory.read_text()
    wrong = inventory.with_name("wrong.toml")
    wrong.write_text("\n".join('password = "nope"' if line.startswith("password") else line
                               for line in text.splitlines()))  # fmt: skip
    pauses: list[float] = []
    driver = CliDriver(usn(), Inventory.load(wrong), sleep=pauses.append)
    made = circuit(usn(), "ornl-e300:1/0", "sunnyvale-e300:1/0", 1000)
    with pytest.raises(DriverError, match="password was refused"):
        driver.provision(made)
    assert pauses == []


class _Recorder:
    name = "emulated"

    def __init__(self, found: Devices, calls: list[str]) -> None:
        self.found, self.calls = found, calls

    def _vlans(self) -> int:
        return sum(len(d.vlans) for d in self.found.values() if isinstance(d, EdgeSwitch))

    def provision(self, circuit: Circuit) -> None:
        self.calls.append(f"provision with {self._vlans()} vlans configured")

    def modify(self, circuit: Circuit, previous: Circuit) -> None:
        self.calls.append("modify")

    def release(self, circuit: Circuit) -> None:
        self.calls.append(f"release with {self._vlans()} vlans configured")

    def status(self, circuit: Circuit) -> CircuitStatus:
        return CircuitStatus.DOWN

    def close(self) -> None:
        self.calls.append("close")


def test_a_driver_under_it_follows_the_devices(devices) -> None:
    """`cli+emulated`: the circuit under is built once the switches carry it, and taken
    down before they stop; its status counts."""
    found, inventory = devices
    calls: list[str] = []
    driver = CliDriver(usn(), Inventory.load(inventory), _Recorder(found, calls))
    assert driver.name == "cli+emulated"
    made = circuit(usn(), "ornl-e300:1/0", "sunnyvale-e300:1/0", 1000)
    driver.provision(made)
    assert driver.status(made) is CircuitStatus.DOWN  # the switches hold it; the one under not
    driver.release(made)
    assert calls == ["provision with 2 vlans configured", "release with 2 vlans configured"]


def test_the_cli_driver_needs_a_devices_file() -> None:
    with pytest.raises(InputError, match="longhaul devices serve"):
        drivers.create("cli", usn(), Settings())
