"""The testbed's record of what it made: one JSON file, changed under a lock.

Every namespace, circuit (with its emulator's PID and control socket) and host-wide
sysctl the testbed touched is written here before or as it is made, so `down` can undo
it all, also after the processes that made it were killed.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


def state_dir() -> Path:
    """`$LONGHAUL_TESTBED_DIR`, else /run/longhaul/testbed (gone after a reboot, as the
    namespaces are)."""
    return Path(os.environ.get("LONGHAUL_TESTBED_DIR", "/run/longhaul/testbed"))


@dataclass
class CircuitRecord:
    number: int
    name: str
    owner: str
    """Who made it: `cli`, `reservation 12`, `bench`, ..."""
    src_host: str
    dst_host: str
    src_ns: str
    dst_ns: str
    src_dev: str
    dst_dev: str
    src_addr: str
    dst_addr: str
    rate_bps: int
    delay_ns: int
    queue_bytes: int | None
    loss: float
    pid: int
    control: str
    log: str
    length_miles: float = 0.0
    links: list[str] = field(default_factory=list)

    @property
    def rtt_ms(self) -> float:
        return 2 * self.delay_ns / 1e6


@dataclass
class CrossRecord:
    """The cross-traffic host's attachment to one circuit's source host."""

    circuit: int
    host_dev: str
    cross_dev: str
    host_addr: str
    cross_addr: str


@dataclass
class State:
    circuits: dict[int, CircuitRecord] = field(default_factory=dict)
    namespaces: list[str] = field(default_factory=list)
    saved_host_sysctls: dict[str, str] = field(default_factory=dict)
    """Host-wide sysctls as they were before the testbed raised them."""
    cross: list[CrossRecord] = field(default_factory=list)
    next_number: int = 1

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["circuits"] = [asdict(c) for c in self.circuits.values()]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> State:
        circuits = [CircuitRecord(**c) for c in data.get("circuits", [])]
        return cls(
            circuits={c.number: c for c in circuits},
            namespaces=list(data.get("namespaces", [])),
            saved_host_sysctls=dict(data.get("saved_host_sysctls", {})),
            cross=[CrossRecord(**x) for x in data.get("cross", [])],
            next_number=int(data.get("next_number", 1)),
        )

    def take_number(self) -> int:
        number = self.next_number
        self.next_number += 1
        return number


def _file() -> Path:
    return state_dir() / "testbed.json"


def read() -> State:
    """The state as last written (empty if there is none)."""
    path = _file()
    if not path.exists():
        return State()
    try:
        return State.from_json(json.loads(path.read_text()))
    except (ValueError, TypeError, KeyError):
        # A damaged record is no reason to refuse to clean up: `down --all` finds things
        # by their names too.
        return State()


@contextmanager
def changing() -> Iterator[State]:
    """The state, under an exclusive lock; written back (atomically) when the block ends,
    also when it fails half-way: what was made so far is recorded."""
    directory = state_dir()
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / "lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        state = read()
        try:
            yield state
        finally:
            _write(state)


def _write(state: State) -> None:
    path = _file()
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(state.to_json(), indent=2))
    temporary.replace(path)
