"""What every testbed on this machine shares: the register of testbeds that are up, and
the host-wide sysctls as they were before any of them raised one.

Testbeds with different prefixes (a developer's `lh-`, the benchmark's `lhb-`, the
demo's `lhd-`, the tests' `lht-`) may be up at once. Host-wide sysctls (socket buffer
ceilings, TCP memory) are raised by whichever needs more and given back only when the
last testbed goes: the original values are journalled, durably, before the first change,
so they come back even after everything was killed with -9. A testbed whose owner died
(a killed demo or benchmark) is found here by the next command, which sweeps what it
left (`Testbed.sweep`).

Everything is kept in one JSON file under /run/longhaul (gone after a reboot, as the
namespaces are), changed under a lock, written atomically and synced.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from longhaul.testbed.netns import TestbedError, read_sysctl, write_sysctl


def host_dir() -> Path:
    """`$LONGHAUL_HOST_DIR`, else /run/longhaul."""
    return Path(os.environ.get("LONGHAUL_HOST_DIR", "/run/longhaul"))


@dataclass
class Holder:
    """A testbed that is up: where its record is, its prefix, and who uses it."""

    state_dir: str
    prefix: str
    owners: list[tuple[int, int]]
    """The processes that built on it: (PID, start time in clock ticks since boot, so a
    reused PID is not taken for the owner)."""
    persistent: bool
    """Built by `longhaul testbed up`: it stays until `down`, owners or not."""


@dataclass
class HostState:
    testbeds: dict[str, Holder] = field(default_factory=dict)
    originals: dict[str, str] = field(default_factory=dict)
    """Host-wide sysctls as they were before the first testbed raised them."""

    def to_json(self) -> dict[str, Any]:
        return {
            "testbeds": [asdict(h) for h in self.testbeds.values()],
            "originals": self.originals,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> HostState:
        holders = [
            Holder(h["state_dir"], h["prefix"], [tuple(o) for o in h["owners"]], h["persistent"])
            for h in data.get("testbeds", [])
        ]
        return cls({h.state_dir: h for h in holders}, dict(data.get("originals", {})))


def _file() -> Path:
    return host_dir() / "host.json"


def process_start(pid: int) -> int | None:
    """When process `pid` started (clock ticks since boot), or None if there is none."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[19])


def me(state_dir: Path, prefix: str, persistent: bool) -> Holder:
    pid = os.getpid()
    return Holder(str(state_dir), prefix, [(pid, process_start(pid) or 0)], persistent)


def alive(holder: Holder) -> bool:
    """Whether the testbed is still someone's: persistent ones until `down`, the others
    while one of their owners runs."""
    return holder.persistent or any(process_start(pid) == at for pid, at in holder.owners)


def read() -> HostState:
    path = _file()
    if not path.exists():
        return HostState()
    try:
        return HostState.from_json(json.loads(path.read_text()))
    except (ValueError, TypeError, KeyError) as exc:
        raise TestbedError(
            f"the testbeds' host record {path} is damaged ({exc}); it holds the host's "
            "sysctls as they were before any testbed: check them, then remove the file"
        ) from exc


@contextmanager
def changing() -> Iterator[HostState]:
    """The host record under an exclusive lock, written back durably when the block ends
    (also when it fails: what was journalled stays journalled)."""
    directory = host_dir()
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / "host.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        state = read()
        try:
            yield state
        finally:
            _write(state)


def _write(state: HostState) -> None:
    path = _file()
    temporary = path.with_suffix(".tmp")
    with temporary.open("w") as out:
        out.write(json.dumps(state.to_json(), indent=2))
        out.flush()
        os.fsync(out.fileno())
    temporary.replace(path)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def register(holder: Holder) -> None:
    """Put `holder` on the register (or add its owner to the testbed's, when several
    processes build on one, as a server and a campaign may), or refuse if another testbed
    that is up uses its prefix: their namespaces would be each other's."""
    with changing() as state:
        for other in state.testbeds.values():
            clash = other.prefix == holder.prefix and other.state_dir != holder.state_dir
            if clash and alive(other):
                pids = ", ".join(str(pid) for pid, _ in other.owners)
                raise TestbedError(
                    f"another testbed is up with the prefix {holder.prefix!r} (its record is "
                    f"in {other.state_dir}, owners {pids}): take it down first, or set "
                    "LONGHAUL_TESTBED_PREFIX to another prefix"
                )
        known = state.testbeds.get(holder.state_dir)
        if known is not None and alive(known):
            running = [o for o in known.owners if process_start(o[0]) == o[1]]
            holder.owners = sorted({*running, *holder.owners})
            holder.persistent = holder.persistent or known.persistent
        state.testbeds[holder.state_dir] = holder


def stale() -> list[Holder]:
    """Testbeds on the register whose owner has gone."""
    return [h for h in read().testbeds.values() if not alive(h)]


def raise_sysctls(minimums: dict[tuple[str, int], int]) -> None:
    """Raise host-wide sysctls to at least `minimums` (by key and position in the key's
    list of values), journalling each one's value before its first change."""
    with changing() as state:
        wanted: dict[str, str] = {}
        for (key, position), minimum in minimums.items():
            values = (wanted.get(key) or read_sysctl(key)).split()
            if int(values[position]) >= minimum:
                continue
            values[position] = str(minimum)
            # Lists such as tcp_mem (min, pressure, max) must not decrease.
            numbers = [int(v) for v in values]
            for i in range(1, len(numbers)):
                numbers[i] = max(numbers[i], numbers[i - 1])
            wanted[key] = " ".join(str(n) for n in numbers)
        if not wanted:
            return
        for key in wanted:
            state.originals.setdefault(key, " ".join(read_sysctl(key).split()))
        _write(state)  # the originals are on disk before anything changes
        for key, value in wanted.items():
            write_sysctl(key, value)


def release(state_dir: Path) -> dict[str, str]:
    """Take a testbed off the register; with the last one gone, restore the host's
    sysctls. What was restored."""
    with changing() as state:
        state.testbeds.pop(str(state_dir), None)
        if any(alive(h) for h in state.testbeds.values()):
            return {}
        restored = dict(state.originals)
        for key, value in restored.items():
            with contextlib.suppress(TestbedError):
                write_sysctl(key, value)
        state.originals = {}
        return restored
