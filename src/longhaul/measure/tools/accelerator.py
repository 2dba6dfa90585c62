"""The WAN-accelerator pair (`longhaul-accel`) on a circuit, and a measured transfer
through it or around it.

`Pair` runs `longhaul-accel far` in the server's namespace (listening on its circuit
address, opening connections only to that address) and `longhaul-accel near` in the
client's, forwarding a local port to the server; it is ready once the near side has its
session. On leaving, both are stopped (SIGTERM) and their reports (bytes in and on the
wire, cache hits, compression) kept.

`transfer` moves a file as USN's hosts did: `longhaul-accel sink` in the server's
namespace with its window pinned (65,535 bytes: a host without window scaling), and
`longhaul-accel send` in the client's, each stream a slice of the file; goodput is the
sink's, from the first byte in to the last, and every stream's bytes are checked
against what was sent (BLAKE3).
"""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, NoReturn

from longhaul import binaries
from longhaul.measure.tools import ToolError
from longhaul.testbed import netns, serving

NEAR_PORT = 5300
SINK_PORT = 5301
FAR_PORT = 7900
PINNED_WINDOW_BYTES = 65535
FEATURES = ("none", "tfo", "tfo+dre", "tfo+dre+lz")
"""As USN's table has them: no accelerator, flow optimization, then redundancy
elimination and LZ compression added in turn."""


class AcceleratorError(ToolError):
    """longhaul-accel failed or is missing; the message is its own, or says how to fix it."""


def binary() -> Path:
    """`$LONGHAUL_ACCEL`, the workspace's release build, or one on PATH."""
    return binaries.cargo_built("LONGHAUL_ACCEL", "longhaul-accel", AcceleratorError)


def wan_buffer_bytes(rate_bps: float, rtt_ms: float, queue_bytes: int) -> int:
    """The session's buffers: twice what the path holds (its bandwidth-delay product and
    queue), so the window, not the buffer, is what congestion control sets."""
    return max(4 << 20, int(2 * (rate_bps / 8 * rtt_ms / 1e3 + queue_bytes)))


@dataclass
class Pair:
    """The accelerators at the two ends of a circuit, for a `with` block."""

    near_ns: str
    far_ns: str
    far_address: str
    features: str
    wan_buffer_bytes: int
    congestion: str = "cubic"
    forwards: tuple[tuple[int, int], ...] = ((NEAR_PORT, SINK_PORT),)
    """(port clients use in the near namespace, the server's port at `far_address`)."""
    reports: dict[str, dict[str, Any]] = field(default_factory=dict)
    _processes: dict[str, subprocess.Popen[str]] = field(default_factory=dict)

    @property
    def address(self) -> str:
        """Where clients in the near namespace connect (the first forward)."""
        return f"127.0.0.1:{self.forwards[0][0]}"

    def __enter__(self) -> Pair:
        if self.features not in FEATURES[1:]:
            raise AcceleratorError(f"unknown features {self.features!r}: {', '.join(FEATURES[1:])}")
        wan = ["--wan-buffer-bytes", str(self.wan_buffer_bytes), "--congestion", self.congestion]
        far = [str(binary()), "far", "--listen", f"{self.far_address}:{FAR_PORT}",
               "--allow", f"{self.far_address}/32", *wan]  # fmt: skip
        forwards = [
            arg
            for near_port, port in self.forwards
            for arg in ("--forward", f"127.0.0.1:{near_port}={self.far_address}:{port}")
        ]
        near = [str(binary()), "near", "--peer", f"{self.far_address}:{FAR_PORT}", *forwards,
                "--features", self.features, *wan]  # fmt: skip
        try:
            self._processes["far"] = self._start(self.far_ns, far, "far")
            self._processes["near"] = self._start(self.near_ns, near, "near")
            self._wait_for_session()
        except BaseException:
            self._stop()
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:  # fmt: skip
        self._stop()

    def _start(self, namespace: str, argv: list[str], side: str) -> subprocess.Popen[str]:
        process = subprocess.Popen(netns.command(namespace, argv), stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)  # fmt: skip
        serving.says("listening", f"longhaul-accel {side}", AcceleratorError)(process)
        return process

    def _wait_for_session(self) -> None:
        """The near side says `session with` once the far one accepted it."""
        near = self._processes["near"]
        assert near.stderr is not None
        for _ in range(20):
            line = near.stderr.readline()
            if "session with" in line:
                return
            if not line or "refused" in line:
                break
        raise AcceleratorError(f"the accelerators did not form a session: {line.strip()}")

    def _stop(self) -> None:
        for side, process in self._processes.items():
            serving.stop(process)
            out = process.stdout.read() if process.stdout else ""
            if out.strip():
                self.reports[side] = json.loads(out.strip().splitlines()[-1])
        self._processes.clear()


@dataclass(frozen=True)
class Transfer:
    mbps: float
    bytes: int
    seconds: float
    intact: bool
    """Every stream's bytes arrived as sent."""


def transfer(client_ns: str, server_ns: str, server_address: str, file: Path, streams: int,
             bytes_per_stream: int, connect_to: str | None = None,
             window_bytes: int = PINNED_WINDOW_BYTES,
             timeout_s: float = 120.0) -> Transfer:  # fmt: skip
    """`streams` connections from the client to the sink at once (to `connect_to`, the
    near accelerator, or straight to the server), each a slice of `file`."""
    sink = [str(binary()), "sink", "--listen", f"{server_address}:{SINK_PORT}",
            "--window-bytes", str(window_bytes), "--connections", str(streams),
            "--timeout-s", str(timeout_s)]  # fmt: skip
    send = [str(binary()), "send", "--to", connect_to or f"{server_address}:{SINK_PORT}",
            "--file", str(file), "--streams", str(streams), "--bytes", str(bytes_per_stream),
            "--timeout-s", str(timeout_s)]  # fmt: skip
    ready = serving.says("listening", "longhaul-accel sink", AcceleratorError)
    with serving.serving(server_ns, sink, ready) as receiver:
        sent = subprocess.run(netns.command(client_ns, send), capture_output=True, text=True,
                              timeout=timeout_s + 30, check=False)  # fmt: skip
        if sent.returncode != 0:
            _failed("send", sent.stderr)
        try:
            out, err = receiver.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise AcceleratorError("the sink did not finish after the sender had") from None
        if receiver.returncode != 0:
            _failed("sink", err)
    return _compare(json.loads(sent.stdout), json.loads(out))


def _failed(side: str, stderr: str) -> NoReturn:
    said = stderr.strip().removeprefix("longhaul-accel: ")[-300:] or "it said nothing"
    raise AcceleratorError(f"longhaul-accel {side}: {said}")


def _compare(sent: dict[str, Any], received: dict[str, Any]) -> Transfer:
    """The sink's figures, and whether it got each stream's bytes (in any order: it
    numbers connections as it accepts them)."""
    got = Counter(c["blake3"] for c in received["connections"])
    intact = got == Counter(sent["blake3"]) and received["bytes"] == sent["bytes"]
    return Transfer(mbps=float(received["mbps"]), bytes=int(received["bytes"]),
                    seconds=float(received["seconds"]), intact=intact)  # fmt: skip
