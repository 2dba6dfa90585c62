"""How a run was made, recorded beside its measurement (perfSONAR and Flent keep the
same): the host, its kernel and CPU, the tool and its version, the settings inside the
sending host's namespace that decide TCP's figures (MTU, socket-buffer sysctls), and
the emulated line (rate, delay, queue, loss, layer) with the emulator's version.

What cannot be read is left out (None), never guessed.
"""

from __future__ import annotations

import functools
import json
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

from longhaul import __version__
from longhaul.testbed import CircuitRecord, netns
from longhaul.testbed.emulator import binary

SYSCTLS = (
    "net.core.rmem_max",
    "net.core.wmem_max",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
    "net.ipv4.tcp_congestion_control",
)
"""The sysctls that bound a TCP flow's window (and its default congestion control)."""

_VERSION_ARGV = {"iperf3": ["iperf3", "--version"], "ping": ["ping", "-V"]}


@functools.cache
def host() -> dict[str, Any]:
    """This machine: name, kernel, CPU model and count, longhaul's version."""
    return {
        "host": platform.node(),
        "kernel": platform.release(),
        "cpu": _cpu_model(),
        "cpus": os.cpu_count(),
        "longhaul": __version__,
    }


@functools.cache
def tool_version(tool: str) -> str | None:
    """The first line a tool prints about its version (None: unknown or missing)."""
    argv = _VERSION_ARGV.get(tool)
    if argv is None:
        return __version__ if tool in ("echo", "udp") else None
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = (out.stdout or out.stderr).strip().splitlines()
    return lines[0] if lines else None


def circuit(record: CircuitRecord) -> dict[str, Any]:
    """The emulated line and the sending host's settings."""
    return {
        "emulator": {
            "version": _emulator_version(),
            "rate_bps": record.rate_bps,
            "delay_ns": record.delay_ns,
            "queue_bytes": record.queue_bytes,
            "loss": record.loss,
            "layer": record.layer,
            "jitter": record.jitter,
        },
        "mtu_bytes": _mtu(record.src_ns, record.src_dev),
        "sysctls": {name: _sysctl(record.src_ns, name) for name in SYSCTLS},
    }


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        return None
    return None


@functools.cache
def _emulator_version() -> str | None:
    try:
        out = subprocess.run(
            [str(binary()), "--version"], capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, RuntimeError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None


def _mtu(namespace: str, device: str) -> int | None:
    found = _in(namespace, ["ip", "-j", "link", "show", "dev", device])
    try:
        return int(json.loads(found)[0]["mtu"]) if found else None
    except (ValueError, KeyError, IndexError, TypeError):
        return None


def _sysctl(namespace: str, name: str) -> str | None:
    path = "/proc/sys/" + name.replace(".", "/")
    found = _in(namespace, ["cat", path])
    return " ".join(found.split()) if found else None


def _in(namespace: str, argv: list[str]) -> str | None:
    try:
        out = subprocess.run(
            netns.command(namespace, argv), capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout if out.returncode == 0 else None
