"""Running `longhaul-wan` processes: start one for a circuit, talk to it, stop it."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from longhaul import binaries
from longhaul.testbed.netns import TestbedError, TestbedUnavailableError

READY_TIMEOUT_S = 30.0
"""How long an emulator may take to come up: it faults in its whole arena first, two
1.49 GB halves for 9.6 Gb/s over 650 ms, which took 8.4 s on a two-core VM, and more than
10 s (the limit before) in three of five starts there within an hour."""
STOP_TIMEOUT_S = 5.0


def binary() -> Path:
    """The emulator: `$LONGHAUL_WAN`, the workspace's release build, or one on PATH. Its
    file must be called `longhaul-wan`: that name is how the testbed knows its emulators
    (`is_ours`), to stop them and no other process."""
    found = binaries.cargo_built("LONGHAUL_WAN", "longhaul-wan", TestbedUnavailableError)
    if found.name != "longhaul-wan":
        raise TestbedUnavailableError(
            f"LONGHAUL_WAN names {found}, which is not called longhaul-wan: the testbed "
            "would not know it as its emulator; copy it into a folder of its own as "
            "longhaul-wan (e.g. /tmp/try/longhaul-wan) and name that"
        )
    return found


def missing() -> str | None:
    """None if the emulator is built; otherwise what to run to build it."""
    try:
        binary()
    except TestbedUnavailableError as exc:
        return str(exc)
    return None


@dataclass(frozen=True)
class Launch:
    """How to start the emulator for one circuit."""

    a_netns: str
    a_dev: str
    b_netns: str
    b_dev: str
    rate_bps: int
    delay_ns: int
    control: Path
    log: Path
    queue_bytes: int | None = None
    loss: float = 0.0
    loss_seed: int = 1
    layer: str = "ip"
    jitter: str | None = None
    parent_pid: int | None = None
    """The emulator stops when this process ends (None: it stays until stopped)."""

    def argv(self) -> list[str]:
        args = [str(binary()), "run",
                "--a-netns", self.a_netns, "--a-dev", self.a_dev,
                "--b-netns", self.b_netns, "--b-dev", self.b_dev,
                "--layer", self.layer,
                "--rate", str(self.rate_bps), "--delay", f"{self.delay_ns}ns",
                "--control", str(self.control)]  # fmt: skip
        if self.queue_bytes is not None:
            args += ["--queue", str(self.queue_bytes)]
        if self.loss > 0:
            args += ["--loss", repr(self.loss), "--seed", str(self.loss_seed)]
        if self.jitter:
            args += ["--jitter", self.jitter]
        if self.parent_pid is not None:
            args += ["--parent-pid", str(self.parent_pid)]
        return args


def start(launch: Launch) -> int:
    """Start the emulator in a session of its own (a signal to this terminal's process
    group is for the testbed to handle, not for its emulators) and wait until its devices
    exist; its PID. With `parent_pid` it ends with this process."""
    launch.log.parent.mkdir(parents=True, exist_ok=True)
    launch.control.unlink(missing_ok=True)
    with launch.log.open("wb") as log:
        process = subprocess.Popen(
            launch.argv(),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise TestbedError(f"longhaul-wan exited ({process.returncode}): {_tail(launch.log)}")
        if _ready(launch.log) and launch.control.exists():
            return process.pid
        time.sleep(0.01)
    stop(process.pid, launch.control)
    raise TestbedError(
        f"longhaul-wan did not start within {READY_TIMEOUT_S:g} s: {_tail(launch.log)}"
    )


def _ready(log: Path) -> bool:
    for line in log.read_text(errors="replace").splitlines():
        if line.startswith("{") and '"ready":true' in line.replace(" ", ""):
            return True
    return False


def _tail(log: Path) -> str:
    text = log.read_text(errors="replace").strip() if log.exists() else ""
    return text[-500:] or "(no output)"


def request(control: Path, body: dict[str, Any], timeout_s: float = 5.0) -> dict[str, Any]:
    """One request to the emulator's control socket; its answer (TestbedError if refused)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout_s)
        try:
            sock.connect(str(control))
            sock.sendall(json.dumps(body).encode() + b"\n")
            data = b""
            while not data.endswith(b"\n"):
                chunk = sock.recv(65536)
                if not chunk:
                    break
                data += chunk
        except OSError as exc:
            raise TestbedError(f"no emulator answers at {control}: {exc}") from exc
    answer: dict[str, Any] = json.loads(data)
    if not answer.get("ok"):
        raise TestbedError(f"the emulator refused {body.get('op')}: {answer.get('error')}")
    return answer


def is_ours(pid: int, control: Path) -> bool:
    """Whether `pid` is the emulator started with this control socket (and not a process
    that reused its number)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return bool(argv) and argv[0].endswith(b"longhaul-wan") and str(control).encode() in argv


def alive(pid: int, control: Path) -> bool:
    return is_ours(pid, control)


def stop(pid: int, control: Path) -> None:
    """SIGTERM (then SIGKILL) the emulator `pid`, if it is still the one we started."""
    if not is_ours(pid, control):
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while time.monotonic() < deadline:
        if not is_ours(pid, control):
            _reap(pid)
            return
        _reap(pid)
        time.sleep(0.02)
    if is_ours(pid, control):
        os.kill(pid, signal.SIGKILL)
        _reap(pid)


def _reap(pid: int) -> None:
    # A child of this process lingers as a zombie (still listed in /proc) until reaped.
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time the process has used."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")
