"""The emulated testbed: host namespaces joined by circuits, each one `longhaul-wan`.

`Testbed` makes real what `plan` works out, records it in the state file as it goes,
and undoes it on `down`, also after the processes that made it were killed.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from longhaul.errors import InputError
from longhaul.testbed import emulator, netns, state
from longhaul.testbed.plan import (
    CIRCUITS_NET,
    CROSS_NET,
    CircuitSpec,
    circuit_addresses,
    cross_addresses,
    cross_devices,
    cross_host,
    device_names,
    host_namespace,
    loop_spec,
    prefix,
    sysctls_for,
)
from longhaul.testbed.state import CircuitRecord, CrossRecord, State
from longhaul.topology import Topology, usn


@dataclass(frozen=True)
class CircuitStatus:
    record: CircuitRecord
    alive: bool
    stats: dict[str, Any] | None
    """The emulator's counters (None if it does not answer)."""


@dataclass(frozen=True)
class Teardown:
    """What `down` removed."""

    emulators: int
    namespaces: list[str]
    restored_sysctls: dict[str, str]


class Testbed:
    def __init__(self, topology: Topology | None = None) -> None:
        self.topology = topology or usn()

    # -- building ----------------------------------------------------------------------

    def up(
        self, loops_miles: Sequence[float], rate_bps: int | None = None, owner: str = "cli"
    ) -> list[CircuitRecord]:
        """A circuit for each loop-back (between the two ORNL hosts), at the loop's own rate
        unless `rate_bps` is given. Loops that are up already are kept as they are."""
        specs = [loop_spec(self.topology, miles) for miles in loops_miles]
        if rate_bps is not None:
            specs = [replace(s, rate_bps=rate_bps) for s in specs]
        netns.require_privileges()
        made = []
        for spec in specs:
            existing = self._named(spec.name)
            made.append(existing if existing is not None else self.add_circuit(spec, owner))
        return made

    def add_circuit(self, spec: CircuitSpec, owner: str) -> CircuitRecord:
        """Build the circuit `spec`: hosts, devices, addresses, the emulator, sysctls."""
        spec.check()
        netns.require_privileges()
        with state.changing() as current:
            number = current.take_number()
            record = self._record(spec, owner, number)
            for name in (record.src_ns, record.dst_ns):
                self._ensure_namespace(current, name)
            record.pid = emulator.start(self._launch(record))
            current.circuits[number] = record
            try:
                netns.configure_tun(record.src_ns, record.src_dev, record.src_addr)
                netns.configure_tun(record.dst_ns, record.dst_dev, record.dst_addr)
                self._size_buffers(current)
            except Exception:
                self._remove(current, number)
                raise
        return record

    def ensure_circuit(self, spec: CircuitSpec, owner: str) -> CircuitRecord:
        """The circuit of `owner`, built, or changed in place to match `spec` (drivers call
        this again after a restart: it must do no harm)."""
        found = self.circuit_of(owner)
        if found is not None and emulator.alive(found.pid, Path(found.control)):
            same_ends = (found.src_host, found.dst_host) == (spec.src_host, spec.dst_host)
            if same_ends:
                return self.change_circuit(
                    found.number, rate_bps=spec.rate_bps, delay_ns=spec.delay_ns
                )
        if found is not None:
            self.remove_circuit(found.number)
        return self.add_circuit(spec, owner)

    def change_circuit(
        self,
        number: int,
        rate_bps: int | None = None,
        delay_ns: int | None = None,
        loss: float | None = None,
        queue_bytes: int | None = None,
    ) -> CircuitRecord:
        """Change a running circuit in place; what is in flight is kept."""
        with state.changing() as current:
            record = self._get(current, number)
            fields: dict[str, Any] = {}
            if rate_bps is not None:
                fields["rate_bps"] = rate_bps
            if delay_ns is not None:
                fields["delay_ns"] = delay_ns
            if queue_bytes is not None:
                fields["queue_bytes"] = queue_bytes
            if loss is not None:
                fields["loss"] = (
                    {"model": "random", "probability": loss} if loss > 0 else {"model": "none"}
                )
            if fields:
                emulator.request(Path(record.control), {"op": "set", **fields})
                record.rate_bps = rate_bps if rate_bps is not None else record.rate_bps
                record.delay_ns = delay_ns if delay_ns is not None else record.delay_ns
                record.queue_bytes = queue_bytes if queue_bytes is not None else record.queue_bytes
                record.loss = loss if loss is not None else record.loss
                self._size_buffers(current)
            return record

    def remove_circuit(self, number: int) -> None:
        """Stop the circuit's emulator; with the last one gone, the host's sysctls are
        restored (the namespaces stay until `down`)."""
        with state.changing() as current:
            self._get(current, number)
            self._remove(current, number)
            if not current.circuits:
                _restore_host_sysctls(current)

    def attach_cross_host(self, number: int) -> CrossRecord:
        """Join the cross-traffic host to circuit `number`'s source host, and route its
        traffic to the circuit's far end over the circuit."""
        with state.changing() as current:
            record = self._get(current, number)
            for existing in current.cross:
                if existing.circuit == number:
                    return existing
            cross_ns = cross_host()
            self._ensure_namespace(current, cross_ns)
            host_dev, cross_dev = cross_devices(number)
            host_addr, cross_addr = cross_addresses(number)
            netns.add_veth(record.src_ns, host_dev, cross_ns, cross_dev)
            netns.add_address(record.src_ns, host_dev, host_addr, 30)
            netns.add_address(cross_ns, cross_dev, cross_addr, 30)
            netns.add_route(cross_ns, f"{record.dst_addr}/32", host_addr)
            # Replies (ICMP, say) find their way back over the circuit.
            netns.add_route(record.dst_ns, f"{cross_addr}/32", record.src_addr)
            attached = CrossRecord(number, host_dev, cross_dev, host_addr, cross_addr)
            current.cross.append(attached)
            self._size_buffers(current)
            return attached

    # -- looking -----------------------------------------------------------------------

    def circuits(self) -> list[CircuitRecord]:
        return sorted(state.read().circuits.values(), key=lambda c: c.number)

    def circuit(self, number: int) -> CircuitRecord:
        return self._get(state.read(), number)

    def circuit_of(self, owner: str) -> CircuitRecord | None:
        return next((c for c in self.circuits() if c.owner == owner), None)

    def _named(self, name: str) -> CircuitRecord | None:
        found = next((c for c in self.circuits() if c.name == name), None)
        if found is not None and not emulator.alive(found.pid, Path(found.control)):
            self.remove_circuit(found.number)
            return None
        return found

    def status(self) -> list[CircuitStatus]:
        statuses = []
        for record in self.circuits():
            alive = emulator.alive(record.pid, Path(record.control))
            stats = None
            if alive:
                try:
                    stats = emulator.request(Path(record.control), {"op": "stats"})
                except netns.TestbedError:
                    stats = None
            statuses.append(CircuitStatus(record, alive, stats))
        return statuses

    def namespace_of(self, host: str) -> str:
        """The namespace of a topology host (or a namespace the testbed made), for exec."""
        if host.startswith(prefix()) and netns.exists(host):
            return host
        name = host_namespace(self.topology.resolve(host, "host") if host else host)
        if not netns.exists(name):
            made = ", ".join(netns.ours()) or "none: run `longhaul testbed up` first"
            raise InputError("host", f"the testbed has no host {host!r} (namespaces: {made})")
        return name

    def exec(self, host: str, argv: Sequence[str]) -> int:
        """Run `argv` inside `host`'s namespace, attached to this terminal; its exit code."""
        if not argv:
            raise InputError("command", "give the command after --, e.g. -- ping 198.18.0.6")
        return subprocess.call(netns.command(self.namespace_of(host), argv))

    # -- taking down -------------------------------------------------------------------

    def down(self, everything: bool = False) -> Teardown:
        """Stop every recorded emulator, remove every recorded namespace and restore the
        host's sysctls. With `everything`, also whatever carries the testbed's names but
        was never recorded (after a crash lost the record): emulators whose namespaces
        start with `lh-`, and every `lh-` namespace."""
        with state.changing() as current:
            stopped = 0
            for number in sorted(current.circuits):
                record = current.circuits[number]
                if emulator.alive(record.pid, Path(record.control)):
                    stopped += 1
                self._remove(current, number)
            if everything:
                stopped += _stop_stray_emulators()
            names = sorted(set(current.namespaces) | (set(netns.ours()) if everything else set()))
            for name in names:
                netns.remove(name)
            restored = _restore_host_sysctls(current)
            current.namespaces = []
            current.cross = []
            current.next_number = 1
        return Teardown(stopped, names, restored)

    # -- helpers -------------------------------------------------------------------------

    def _record(self, spec: CircuitSpec, owner: str, number: int) -> CircuitRecord:
        src_dev, dst_dev = device_names(number)
        src_addr, dst_addr = circuit_addresses(number)
        directory = state.state_dir()
        return CircuitRecord(
            number=number,
            name=spec.name,
            owner=owner,
            src_host=spec.src_host,
            dst_host=spec.dst_host,
            src_ns=host_namespace(spec.src_host),
            dst_ns=host_namespace(spec.dst_host),
            src_dev=src_dev,
            dst_dev=dst_dev,
            src_addr=src_addr,
            dst_addr=dst_addr,
            rate_bps=spec.rate_bps,
            delay_ns=spec.delay_ns,
            queue_bytes=spec.queue_bytes,
            loss=spec.loss,
            pid=0,
            control=str(directory / f"circuit-{number}.sock"),
            log=str(directory / f"circuit-{number}.log"),
            length_miles=spec.length_miles,
            links=list(spec.links),
        )

    @staticmethod
    def _launch(record: CircuitRecord) -> emulator.Launch:
        return emulator.Launch(
            a_netns=record.src_ns,
            a_dev=record.src_dev,
            b_netns=record.dst_ns,
            b_dev=record.dst_dev,
            rate_bps=record.rate_bps,
            delay_ns=record.delay_ns,
            control=Path(record.control),
            log=Path(record.log),
            queue_bytes=record.queue_bytes,
            loss=record.loss,
        )

    @staticmethod
    def _get(current: State, number: int) -> CircuitRecord:
        record = current.circuits.get(number)
        if record is None:
            have = ", ".join(str(n) for n in sorted(current.circuits)) or "none"
            raise InputError("circuit", f"no circuit {number} (circuits: {have})")
        return record

    @staticmethod
    def _ensure_namespace(current: State, name: str) -> None:
        if name not in current.namespaces:
            current.namespaces.append(name)  # recorded first: a failure is still undone
        netns.ensure(name)

    def _remove(self, current: State, number: int) -> None:
        record = current.circuits.pop(number)
        emulator.stop(record.pid, Path(record.control))
        Path(record.control).unlink(missing_ok=True)
        for attached in [x for x in current.cross if x.circuit == number]:
            netns.delete_link(record.src_ns, attached.host_dev)
            current.cross.remove(attached)

    def _size_buffers(self, current: State) -> None:
        """Socket buffers in every host namespace (and host-wide limits) for the largest
        bandwidth-delay product of any circuit up."""
        specs = [
            CircuitSpec(c.name, c.src_host, c.dst_host, c.rate_bps, c.delay_ns)
            for c in current.circuits.values()
        ]
        wanted = sysctls_for(specs, _memory_bytes())
        for name in current.namespaces:
            if netns.exists(name):
                netns.set_sysctls(name, wanted.namespace)
        _raise_host_sysctls(current, wanted.host)


def _memory_bytes() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def _raise_host_sysctls(current: State, minimums: dict[tuple[str, int], int]) -> None:
    """Raise host-wide sysctls to at least `minimums` (by key and position in the key's
    list of values), saving each one's value the first time it is changed."""
    for (key, position), minimum in minimums.items():
        values = netns.read_sysctl(key).split()
        if int(values[position]) >= minimum:
            continue
        current.saved_host_sysctls.setdefault(key, " ".join(values))
        values[position] = str(minimum)
        # Lists such as tcp_mem (min, pressure, max) must not decrease.
        numbers = [int(v) for v in values]
        for i in range(1, len(numbers)):
            numbers[i] = max(numbers[i], numbers[i - 1])
        netns.write_sysctl(key, " ".join(str(n) for n in numbers))


def _restore_host_sysctls(current: State) -> dict[str, str]:
    restored = dict(current.saved_host_sysctls)
    for key, value in restored.items():
        netns.write_sysctl(key, value)
    current.saved_host_sysctls = {}
    return restored


def _stop_stray_emulators() -> int:
    """Stop every `longhaul-wan run` whose namespaces are the testbed's (`lh-`): emulators
    a crash left without a record. Found by their command line, stopped by PID."""
    stopped = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if not argv or not argv[0].endswith(b"longhaul-wan") or b"run" not in argv[1:2]:
            continue
        namespaces = [
            argv[i + 1] for i, a in enumerate(argv[:-1]) if a in (b"--a-netns", b"--b-netns")
        ]
        ours = prefix().encode()
        if namespaces and all(n.startswith(ours) for n in namespaces):
            try:
                os.kill(int(entry.name), signal.SIGTERM)
                stopped += 1
            except ProcessLookupError:
                pass
    return stopped


__all__ = ["CIRCUITS_NET", "CROSS_NET", "CircuitStatus", "Teardown", "Testbed"]
