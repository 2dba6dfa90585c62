"""The emulated testbed: host namespaces joined by circuits, each one `longhaul-wan`.

`Testbed` makes real what `plan` works out, records it in the state file as it goes,
and undoes it on `down`, also after the processes that made it were killed.

A testbed belongs to the process that made it (its emulators stop when it ends) unless it
is `persistent` (`longhaul testbed up`, which stays until `longhaul testbed down`). Each
is on the host register (`host`): what a killed owner left behind is swept by the next
testbed command of any testbed, and the host-wide sysctls are given back when the last
testbed goes.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from longhaul.errors import InputError
from longhaul.testbed import emulator, host, netns, state
from longhaul.testbed.plan import (
    CIRCUITS_NET,
    CROSS_NET,
    circuit_addresses,
    cross_addresses,
    cross_devices,
    cross_host,
    device_names,
    host_namespace,
    prefix,
    sysctls_for,
)
from longhaul.testbed.state import CircuitRecord, CrossRecord, State
from longhaul.topology import Topology, usn
from longhaul.topology.circuits import CircuitSpec, loop_spec


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


@dataclass
class Sweep:
    """What testbeds whose owners had died left behind, and was removed."""

    testbeds: list[str] = field(default_factory=list)
    """Their records' folders."""
    namespaces: list[str] = field(default_factory=list)
    emulators: int = 0
    restored_sysctls: dict[str, str] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.testbeds or self.namespaces or self.emulators)

    def describe(self) -> str:
        restored = ", ".join(f"{k} = {v}" for k, v in self.restored_sysctls.items())
        return (
            f"swept what {len(self.testbeds)} testbed(s) left when their owner died: "
            f"{self.emulators} emulator(s), namespaces {', '.join(self.namespaces) or 'none'}"
            + (f"; restored {restored}" if restored else "")
        )


class Testbed:
    def __init__(self, topology: Topology | None = None, persistent: bool = False) -> None:
        self.topology = topology or usn()
        self.persistent = persistent
        """Made to stay (`longhaul testbed up`): its emulators outlive this process."""
        self.swept: Sweep | None = None
        """What the first command of this testbed swept (None: not yet looked)."""

    # -- building ----------------------------------------------------------------------

    def up(
        self,
        loops_miles: Sequence[float],
        rate_bps: int | None = None,
        owner: str = "cli",
        jitter: str | None = None,
    ) -> list[CircuitRecord]:
        """A circuit for each loop-back (between the two ORNL hosts), at the loop's own rate
        unless `rate_bps` is given, with the queueing `jitter` of a packet-switched core if
        given (`hops=N,mean=DURATION`). Loops that are up already are kept as they are."""
        specs = [loop_spec(self.topology, miles) for miles in loops_miles]
        if rate_bps is not None:
            specs = [replace(s, rate_bps=rate_bps) for s in specs]
        if jitter is not None:
            specs = [replace(s, jitter=jitter) for s in specs]
        netns.require_privileges()
        self.sweep()
        made = []
        for spec in specs:
            existing = self._named(spec.name)
            made.append(existing if existing is not None else self.add_circuit(spec, owner))
        return made

    def add_circuit(self, spec: CircuitSpec, owner: str) -> CircuitRecord:
        """Build the circuit `spec`: hosts, devices, addresses, the emulator, sysctls."""
        spec.check()
        netns.require_privileges()
        self.sweep()
        host.register(host.me(state.state_dir(), prefix(), self.persistent))
        with state.changing() as current:
            number = current.take_number()
            record = self._record(spec, owner, number)
            for name in (record.src_ns, record.dst_ns):
                self._ensure_namespace(current, name)
            record.pid = emulator.start(self._launch(record))
            current.circuits[number] = record
            try:
                for ns, dev, address in (
                    (record.src_ns, record.src_dev, record.src_addr),
                    (record.dst_ns, record.dst_dev, record.dst_addr),
                ):
                    netns.configure_tun(ns, dev, address)
                _hand_over_steering(record)
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
                fields["loss"] = {"random": loss}
            if fields:
                emulator.request(Path(record.control), {"op": "set", **fields})
                record.rate_bps = rate_bps if rate_bps is not None else record.rate_bps
                record.delay_ns = delay_ns if delay_ns is not None else record.delay_ns
                record.queue_bytes = queue_bytes if queue_bytes is not None else record.queue_bytes
                record.loss = loss if loss is not None else record.loss
                self._size_buffers(current)
            return record

    def remove_circuit(self, number: int) -> None:
        """Stop the circuit's emulator (the namespaces stay until `down`)."""
        with state.changing() as current:
            self._get(current, number)
            self._remove(current, number)

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
        self.sweep()
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
        """Stop every recorded emulator, remove every recorded namespace and, with the last
        testbed on the host gone, restore the host's sysctls. With `everything`, also
        whatever carries this testbed's prefix but was never recorded (after a crash lost
        the record, or a damaged one): emulators whose namespaces start with it, and every
        namespace that does."""
        netns.require_privileges()
        self.sweep()
        if everything:
            try:
                state.read()
            except state.DamagedStateError:
                state.set_aside()
        with state.changing() as current:
            stopped = 0
            for number in sorted(current.circuits):
                record = current.circuits[number]
                if emulator.alive(record.pid, Path(record.control)):
                    stopped += 1
                self._remove(current, number)
            if everything:
                stopped += _stop_stray_emulators(prefix())
            names = sorted(set(current.namespaces) | (set(netns.ours()) if everything else set()))
            for name in names:
                netns.remove(name)
            current.namespaces = []
            current.cross = []
            current.next_number = 1
        restored = host.release(state.state_dir())
        return Teardown(stopped, names, restored)

    def leave(self) -> Teardown | None:
        """This process is done with the testbed (a server shutting down): if it built on
        it and no other process that did still runs, and it is not persistent, take it
        down now, as the next command's sweep would, and say what went; otherwise leave
        it to the others (None)."""
        me = host.me(state.state_dir(), prefix(), self.persistent)
        mine = me.owners[0]
        holder = host.read().testbeds.get(me.state_dir)
        if holder is None or holder.persistent or mine not in holder.owners:
            return None
        others = [(pid, at) for pid, at in holder.owners if (pid, at) != mine]
        if any(host.process_start(pid) == at for pid, at in others):
            return None
        return self.down()

    def sweep(self) -> Sweep:
        """Remove what testbeds whose owners died left behind (namespaces, emulators, the
        host's raised sysctls); once per `Testbed`, before its first change."""
        if self.swept is not None:
            return self.swept
        found = Sweep()
        live_prefixes = {h.prefix for h in host.read().testbeds.values() if host.alive(h)}
        for holder in host.stale():
            directory = Path(holder.state_dir)
            found.testbeds.append(str(directory))
            names: set[str] = set()
            try:
                old = state.read(directory)
            except state.DamagedStateError:
                state.set_aside(directory)
                old = state.State()
            for record in old.circuits.values():
                if emulator.alive(record.pid, Path(record.control)):
                    emulator.stop(record.pid, Path(record.control))
                    found.emulators += 1
            names.update(old.namespaces)
            if holder.prefix not in live_prefixes:
                found.emulators += _stop_stray_emulators(holder.prefix)
                names.update(netns.ours(holder.prefix))
            for name in sorted(names):
                if netns.exists(name):
                    netns.remove(name)
                    found.namespaces.append(name)
            if (directory / "testbed.json").exists():
                (directory / "testbed.json").unlink()
            found.restored_sysctls.update(host.release(directory))
        self.swept = found
        return found

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
            layer=spec.layer,
            jitter=spec.jitter,
            loss_seed=spec.loss_seed,
        )

    def _launch(self, record: CircuitRecord) -> emulator.Launch:
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
            loss_seed=record.loss_seed,
            layer=record.layer,
            jitter=record.jitter,
            parent_pid=None if self.persistent else os.getpid(),
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
        """The host namespace `name`: the one this testbed made, or a new one (one of the
        same name that it did not make is a leftover, and is replaced)."""
        if name in current.namespaces and netns.exists(name):
            return
        if name not in current.namespaces:
            current.namespaces.append(name)  # recorded first: a failure is still undone
        netns.create(name)

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
        host.raise_sysctls(wanted.host)


def _memory_bytes() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def hosts_cpus() -> list[int]:
    """The CPUs the hosts' kernel work is steered to: all but the last, where the
    emulators run (`longhaul-wan run --cpu auto`); none on a one-CPU machine."""
    count = os.cpu_count() or 1
    return list(range(count - 1))


def _hand_over_steering(record: CircuitRecord) -> None:
    """Give the emulator the receive-steering controls of its two devices: it steers a
    host's kernel work to `hosts_cpus()` while TCP comes into its device fast
    (`longhaul-wan`'s `steer.rs` says why only then). Nothing where there is one CPU or
    no such control."""
    cpus = hosts_cpus()
    if not cpus:
        return
    mask = f"{sum(1 << cpu for cpu in cpus):x}"
    ends = (("a", record.src_ns, record.src_dev), ("b", record.dst_ns, record.dst_dev))
    fds = [(end, netns.rps_control(ns, dev)) for end, ns, dev in ends]
    try:
        opened = [[fd, mask, end] for end, fd in fds if fd is not None]
        if opened:
            request = {"op": "steer", "pid": os.getpid(), "fds": opened}
            emulator.request(Path(record.control), request)
    finally:
        for _, fd in fds:
            if fd is not None:
                os.close(fd)


def _stop_stray_emulators(of: str) -> int:
    """Stop every `longhaul-wan run` whose namespaces start with `of`: emulators a crash
    left without a record. Found by their command line, stopped by PID."""
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
        ours = of.encode()
        if namespaces and all(n.startswith(ours) for n in namespaces):
            try:
                os.kill(int(entry.name), signal.SIGTERM)
                stopped += 1
            except ProcessLookupError:
                pass
    return stopped


__all__ = ["CIRCUITS_NET", "CROSS_NET", "CircuitStatus", "Sweep", "Teardown", "Testbed"]
