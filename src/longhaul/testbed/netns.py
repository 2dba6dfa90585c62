"""Network namespaces, their devices, addresses, routes and sysctls (through pyroute2),
and running commands inside them (`ip netns exec`)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from pyroute2 import NetNS, netns
from pyroute2.netlink.exceptions import NetlinkError

from longhaul.testbed.plan import prefix

T = TypeVar("T")

NETNS_DIR = Path("/run/netns")
TXQUEUELEN = 4096
"""Frames a TUN device holds before the emulator reads them: its ring, as a NIC's transmit
ring (the qdisc in front is taken away). It is a queue outside the emulated one, but it
only fills while the emulator is not reading (it reads each device at least once a
millisecond), and a TUN device drops what does not fit instead of holding the sender
back, which TCP takes for congestion (a 512-frame ring
cut a slow start at 9.6 Gb/s and 163 ms by 30 % through a 24 ms stall). 4,096 frames hold
TCP's per-socket limit below it (`tcp_limit_output_bytes`, 4 MB) in 1,000-byte frames;
what it drops is counted (`device_counters`) and marks the run degraded."""


class TestbedUnavailableError(RuntimeError):
    """This machine cannot run the emulated testbed; the message says why and what to do."""


class TestbedError(RuntimeError):
    """Building or changing the testbed failed; the message says where."""


SIMULATED_HINT = (
    "simulated runs (the `sim` tool) need none of this and remain available once the "
    "simulator exists"
)


def require_privileges() -> None:
    """Stop at once, saying what is missing, unless this process can build the testbed."""
    if os.geteuid() != 0:
        raise TestbedUnavailableError(
            "the emulated testbed needs root: it creates network namespaces and TUN "
            f"devices and sets sysctls. Run as root (sudo); {SIMULATED_HINT}"
        )
    if not Path("/dev/net/tun").exists():
        raise TestbedUnavailableError(
            "/dev/net/tun is missing: load the tun module (modprobe tun) or run where TUN "
            f"devices are allowed; {SIMULATED_HINT}"
        )
    if shutil.which("ip") is None:
        raise TestbedUnavailableError("the `ip` command is missing: apt-get install iproute2")
    probe = f"{prefix()}probe-{os.getpid()}"
    try:
        netns.create(probe)
    except OSError as exc:
        raise TestbedUnavailableError(
            f"cannot create a network namespace ({exc}); {SIMULATED_HINT}"
        ) from exc
    netns.remove(probe)


def exists(name: str) -> bool:
    return (NETNS_DIR / name).exists()


def ours(of: str | None = None) -> list[str]:
    """Every namespace whose name says the testbed made it (the one whose prefix is `of`,
    by default this one)."""
    if not NETNS_DIR.is_dir():
        return []
    start = of or prefix()
    return sorted(p.name for p in NETNS_DIR.iterdir() if p.name.startswith(start))


def create(name: str) -> None:
    """A new namespace `name` with its loopback up (one left from before is replaced)."""
    remove(name)
    try:
        netns.create(name)
    except OSError as exc:
        raise TestbedError(f"cannot create network namespace {name}: {exc}") from exc
    with NetNS(name) as ns:
        ns.link("set", index=ns.link_lookup(ifname="lo")[0], state="up")


def remove(name: str) -> None:
    if exists(name):
        netns.remove(name)


def in_namespace(name: str, work: Callable[[], T]) -> T:
    """Run `work` with this thread in namespace `name` (on a thread of its own, as setns
    moves only the calling thread: the rest of the process stays where it is)."""
    result: list[T] = []
    failure: list[BaseException] = []

    def enter_and_work() -> None:
        try:
            netns.setns(name, flags=0)
            result.append(work())
        except BaseException as exc:  # handed to the caller's thread
            failure.append(exc)

    thread = threading.Thread(target=enter_and_work, name=f"netns-{name}")
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return result[0]


def set_sysctls(name: str, values: dict[str, str]) -> None:
    """Write sysctls inside namespace `name` (tcp_rmem and its kin are per namespace)."""

    def write_all() -> None:
        for key, value in values.items():
            write_sysctl(key, value)

    in_namespace(name, write_all)


def read_sysctl(key: str) -> str:
    return _sysctl_path(key).read_text().strip()


def write_sysctl(key: str, value: str) -> None:
    try:
        _sysctl_path(key).write_text(value)
    except OSError as exc:
        raise TestbedError(f"cannot set {key} = {value}: {exc}") from exc


def _sysctl_path(key: str) -> Path:
    return Path("/proc/sys") / key.replace(".", "/")


def configure_tun(name: str, device: str, address: str, prefix_len: int = 30) -> None:
    """Give a TUN device made by the emulator its address, a short queue and no qdisc in
    front of it, and bring it up."""
    with NetNS(name) as ns:
        found = ns.link_lookup(ifname=device)
        if not found:
            raise TestbedError(f"device {device} did not appear in {name}")
        index = found[0]
        _netlink(ns.addr, "add", index=index, address=address, prefixlen=prefix_len)
        ns.link("set", index=index, txqlen=TXQUEUELEN, state="up")
        # A qdisc would be one more queue outside the emulator's counters.
        _netlink(ns.tc, "replace", "noqueue", index)


def set_mtu(name: str, device: str, mtu_bytes: int) -> None:
    """Set a device's MTU: the largest IP packet the host in namespace `name` sends on it
    (TCP's segments follow it, less their headers)."""
    with NetNS(name) as ns:
        found = ns.link_lookup(ifname=device)
        if not found:
            raise TestbedError(f"device {device} is not in {name}")
        _netlink(ns.link, "set", index=found[0], mtu=mtu_bytes)


def mtu_of(name: str, device: str) -> int:
    with NetNS(name) as ns:
        found = ns.link_lookup(ifname=device)
        if not found:
            raise TestbedError(f"device {device} is not in {name}")
        return int(ns.link("get", index=found[0])[0].get_attr("IFLA_MTU"))


def device_counters(name: str, device: str) -> dict[str, int]:
    """A device's packet counters (`tx_dropped`: what its queue could not take)."""
    with NetNS(name) as ns:
        found = ns.link_lookup(ifname=device)
        if not found:
            return {}
        link = ns.link("get", index=found[0])[0]
    stats = link.get_attr("IFLA_STATS64") or {}
    keys = ("rx_packets", "tx_packets", "rx_dropped", "tx_dropped")
    return {k: int(stats.get(k, 0)) for k in keys}


_OPEN_FOR_WRITING = (
    "import os, socket, sys; "
    "s = socket.socket(fileno=int(sys.argv[1])); "
    "socket.send_fds(s, [b'fd'], [os.open(sys.argv[2], os.O_WRONLY)])"
)


def open_in_namespace(name: str, path: str) -> int | None:
    """A descriptor, open for writing, of the sysfs file `path` as namespace `name` sees
    it (only a sysfs mounted inside the namespace shows its devices: `ip netns exec` mounts
    one); None where there is no such file. The caller closes it."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    with ours, theirs:
        opened = subprocess.run(
            command(name, [sys.executable, "-c", _OPEN_FOR_WRITING, str(theirs.fileno()), path]),
            pass_fds=(theirs.fileno(),), capture_output=True, timeout=10, check=False,
        )  # fmt: skip
        if opened.returncode != 0:
            return None
        _, fds, _, _ = socket.recv_fds(ours, 16, 1)
    return fds[0] if fds else None


def rps_control(name: str, device: str) -> int | None:
    """A descriptor of `device`'s receive packet steering mask (`rps_cpus`), or None."""
    return open_in_namespace(name, f"/sys/class/net/{device}/queues/rx-0/rps_cpus")


def add_veth(name_a: str, dev_a: str, name_b: str, dev_b: str) -> None:
    """A veth pair with one end in each namespace (replacing any of the same name)."""
    with NetNS(name_a) as ns:
        if ns.link_lookup(ifname=dev_a):
            ns.link("del", ifname=dev_a)
        _netlink(ns.link, "add", ifname=dev_a, kind="veth", peer={"ifname": dev_b})
        peer = ns.link_lookup(ifname=dev_b)[0]
        ns.link("set", index=peer, net_ns_fd=name_b)


def add_address(name: str, device: str, address: str, prefix_len: int) -> None:
    with NetNS(name) as ns:
        index = ns.link_lookup(ifname=device)[0]
        _netlink(ns.addr, "add", index=index, address=address, prefixlen=prefix_len)
        ns.link("set", index=index, state="up")


def add_route(name: str, destination: str, gateway: str) -> None:
    """`destination` (a prefix) via `gateway`, replacing any route to it."""
    with NetNS(name) as ns:
        ns.route("replace", dst=destination, gateway=gateway)


def delete_link(name: str, device: str) -> None:
    if not exists(name):
        return
    with NetNS(name) as ns:
        if ns.link_lookup(ifname=device):
            ns.link("del", ifname=device)


def command(name: str, argv: Sequence[str]) -> list[str]:
    """The command line that runs `argv` inside namespace `name`."""
    return ["ip", "netns", "exec", name, *argv]


def run(
    name: str, argv: Sequence[str], timeout_s: float, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """Run `argv` inside namespace `name` to completion (bounded by `timeout_s`)."""
    try:
        return subprocess.run(
            command(name, argv),
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=check,
        )
    except subprocess.CalledProcessError as exc:
        raise TestbedError(
            f"{' '.join(argv)} in {name} failed ({exc.returncode}): {exc.stderr.strip()}"
        ) from exc
    except subprocess.TimeoutExpired as exc:
        raise TestbedError(f"{' '.join(argv)} in {name} ran over {timeout_s:g} s") from exc


def _netlink(call: Callable[..., object], *args: object, **kwargs: object) -> None:
    try:
        call(*args, **kwargs)
    except NetlinkError as exc:
        if exc.code != 17:  # EEXIST: already as wanted
            raise TestbedError(f"netlink {args[0]} {kwargs}: {exc}") from exc
