"""The `emulated` driver: a reservation going active becomes a circuit on the emulated
testbed (a `longhaul-wan` process between the namespaces of its two ends, with the path's
delay and the reserved rate); a modify changes it in place; a release removes it."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from longhaul.control.drivers.base import Circuit, CircuitStatus, DriverError
from longhaul.testbed import emulator
from longhaul.testbed.netns import TestbedError, TestbedUnavailableError
from longhaul.testbed.state import CircuitRecord
from longhaul.testbed.testbed import Testbed
from longhaul.topology import Topology
from longhaul.topology.circuits import path_spec

log = logging.getLogger(__name__)


class EmulatedDriver:
    name = "emulated"

    def __init__(self, topology: Topology, testbed: Testbed | None = None) -> None:
        self.topology = topology
        self.testbed = testbed or Testbed(topology)

    def provision(self, circuit: Circuit) -> None:
        spec = path_spec(
            self.topology,
            circuit.path,
            f"reservation {circuit.reservation_id}",
            circuit.bandwidth_mbps,
        )
        with _driver_errors("provision"):
            self.testbed.ensure_circuit(spec, _owner(circuit))

    def modify(self, circuit: Circuit, previous: Circuit) -> None:
        found = self._found(circuit)
        if found is None or circuit.path != previous.path:
            self.provision(circuit)  # re-routed (or lost): built again on the new path
            return
        spec = path_spec(self.topology, circuit.path, found.name, circuit.bandwidth_mbps)
        with _driver_errors("modify"):
            self.testbed.change_circuit(found.number, rate_bps=spec.rate_bps)

    def release(self, circuit: Circuit) -> None:
        found = self._found(circuit)
        if found is not None:
            with _driver_errors("release"):
                self.testbed.remove_circuit(found.number)

    def status(self, circuit: Circuit) -> CircuitStatus:
        found = self._found(circuit)
        if found is not None and emulator.alive(found.pid, Path(found.control)):
            return CircuitStatus.UP
        return CircuitStatus.DOWN

    def close(self) -> None:
        """Take the testbed down if this process built it and nothing else builds on it:
        its emulators end with the process anyway, and its namespaces and raised sysctls
        would wait for the next testbed command's sweep."""
        try:
            gone = self.testbed.leave()
        except (TestbedUnavailableError, TestbedError) as exc:
            log.warning("could not take the emulated testbed down: %s", exc)
            return
        if gone is not None:
            log.info(
                "took the emulated testbed down: %d emulator(s), namespaces %s",
                gone.emulators,
                ", ".join(gone.namespaces) or "none",
            )

    def _found(self, circuit: Circuit) -> CircuitRecord | None:
        return self.testbed.circuit_of(_owner(circuit))


def _owner(circuit: Circuit) -> str:
    return f"reservation {circuit.reservation_id}"


@contextmanager
def _driver_errors(operation: str) -> Iterator[None]:
    """The testbed's failures, as the `DriverError` the job runner records."""
    try:
        yield
    except (TestbedUnavailableError, TestbedError) as exc:
        raise DriverError(f"{operation} on the emulated testbed: {exc}") from exc
