"""What a driver is: the one place the control plane touches the network."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from longhaul.topology import Link, Path


class DriverError(RuntimeError):
    """The network refused or failed an operation; the message says what happened."""


class CircuitStatus(StrEnum):
    UP = "up"
    DOWN = "down"


@dataclass(frozen=True)
class Circuit:
    """What a driver sets up for a reservation: a path carrying a bandwidth."""

    reservation_id: int
    bandwidth_mbps: int
    path: Path
    src_port: str | None
    """The port named at the first node of the path, when the path starts at a switch."""
    dst_port: str | None

    @property
    def name(self) -> str:
        return f"longhaul-{self.reservation_id}"

    def ports_at(self, index: int) -> tuple[str | None, str | None]:
        """The ports by which the circuit enters and leaves the `index`-th node of its path."""
        hops = self.path.hops
        node = self.path.nodes[index]
        arriving = hops[index - 1].link if index > 0 else None
        leaving = hops[index].link if index < len(hops) else None
        in_port = _port_of(arriving, node) if arriving else self.src_port
        out_port = _port_of(leaving, node) if leaving else self.dst_port
        return in_port, out_port


def _port_of(link: Link, node: str) -> str:
    return link.a.port if link.a.node == node else link.b.port


class Driver(Protocol):
    """Provision, change and release circuits. Every call is idempotent: provisioning an
    up circuit or releasing a down one does no harm, so a restarted service may repeat
    what it was doing when it stopped."""

    name: str

    def provision(self, circuit: Circuit) -> None: ...

    def modify(self, circuit: Circuit, previous: Circuit) -> None: ...

    def release(self, circuit: Circuit) -> None: ...

    def status(self, circuit: Circuit) -> CircuitStatus: ...

    def close(self) -> None:
        """The service is stopping: give back what the driver holds on this machine (the
        emulated driver's testbed, when nothing else builds on it)."""
