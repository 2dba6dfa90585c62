"""The testbed's record of what it made: one JSON file, changed under a lock.

Every namespace and circuit (with its emulator's PID and control socket) the testbed
made is written here before or as it is made, so `down` can undo it all, also after the
processes that made it were killed. (Host-wide sysctls are journalled in `host`, which
all testbeds share.)
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from longhaul.testbed.netns import TestbedError


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
    layer: str = "ip"
    """The line's layer (`ip` counts IP bytes; `oc192`, `wanphy`, ... frame them)."""
    jitter: str | None = None
    """Queueing jitter of a packet-switched core, `hops=N,mean=DURATION` (None: a circuit)."""
    loss_seed: int = 1
    """The seed of the emulator's loss decisions."""

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
            cross=[CrossRecord(**x) for x in data.get("cross", [])],
            next_number=int(data.get("next_number", 1)),
        )

    def take_number(self) -> int:
        number = self.next_number
        self.next_number += 1
        return number


def _file(directory: Path | None = None) -> Path:
    return (directory or state_dir()) / "testbed.json"


def read(directory: Path | None = None) -> State:
    """The state as last written (empty if there is none). A damaged record is an error:
    read as empty it would hide what the testbed made."""
    path = _file(directory)
    if not path.exists():
        return State()
    try:
        return State.from_json(json.loads(path.read_text()))
    except (ValueError, TypeError, KeyError) as exc:
        raise DamagedStateError(
            f"the testbed's record {path} is damaged ({exc}): `longhaul testbed down --all` "
            "removes what the testbed made, found by its names"
        ) from exc


class DamagedStateError(TestbedError):
    """The record cannot be read."""


def set_aside(directory: Path | None = None) -> Path | None:
    """Move a damaged record out of the way (kept for a look); where it went."""
    path = _file(directory)
    if not path.exists():
        return None
    kept = path.with_name(f"testbed.damaged-{int(time.time())}.json")
    path.replace(kept)
    return kept


@contextmanager
def changing(directory: Path | None = None) -> Iterator[State]:
    """The state (of the testbed recorded in `directory`, by default this one's), under an
    exclusive lock; written back (atomically) when the block ends, also when it fails
    half-way: what was made so far is recorded."""
    directory = directory or state_dir()
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / "lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        state = read(directory)
        try:
            yield state
        finally:
            _write(state, directory)


def _write(state: State, directory: Path) -> None:
    path = _file(directory)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(state.to_json(), indent=2))
    temporary.replace(path)
