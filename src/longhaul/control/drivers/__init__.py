"""Drivers set circuits up and tear them down; they are looked up by name."""

from __future__ import annotations

from collections.abc import Callable

from longhaul.control.drivers.base import Circuit, CircuitStatus, Driver, DriverError
from longhaul.control.drivers.log import LogDriver
from longhaul.control.settings import Settings
from longhaul.errors import InputError
from longhaul.topology import Topology

Factory = Callable[[Topology, Settings], Driver]


def _emulated(topology: Topology, _settings: Settings) -> Driver:
    # Imported when chosen: it brings the testbed (and netlink) along.
    from longhaul.control.drivers.emulated import EmulatedDriver  # noqa: PLC0415

    return EmulatedDriver(topology)


def _cli(under: Factory | None) -> Factory:
    def make(topology: Topology, settings: Settings) -> Driver:
        # Imported when chosen: it brings asyncssh along.
        from longhaul.control.devices.inventory import Inventory  # noqa: PLC0415
        from longhaul.control.drivers.cli import CliDriver  # noqa: PLC0415

        if settings.devices_file is None:
            raise InputError(
                "--devices",
                "the cli driver needs a devices file (`longhaul devices serve --inventory "
                "FILE` writes one for the simulated switches)",
            )
        inner = None if under is None else under(topology, settings)
        return CliDriver(topology, Inventory.load(settings.devices_file), inner)

    return make


_FACTORIES: dict[str, Factory] = {
    "log": lambda topology, settings: LogDriver(topology, settings.driver_log),
    "emulated": _emulated,
    "cli": _cli(None),
    "cli+emulated": _cli(_emulated),
}


def register(name: str, factory: Factory) -> None:
    """Make a driver available to `longhaul serve --driver NAME`."""
    _FACTORIES[name] = factory


def create(name: str, topology: Topology, settings: Settings) -> Driver:
    if name not in _FACTORIES:
        raise InputError(
            "--driver", f"no driver named {name!r}; choose from {', '.join(sorted(_FACTORIES))}"
        )
    return _FACTORIES[name](topology, settings)


def names() -> list[str]:
    return sorted(_FACTORIES)


__all__ = [
    "Circuit",
    "CircuitStatus",
    "Driver",
    "DriverError",
    "LogDriver",
    "create",
    "names",
    "register",
]
