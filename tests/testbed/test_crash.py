"""A testbed survives crashes: what a killed owner leaves is swept by the next command,
and the host's sysctls come back exactly. Real namespaces and emulators, bounded in time."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from longhaul.testbed import host
from longhaul.testbed import netns as netns_module

from .support import PREFIX

HOST_SYSCTLS = ("net/core/rmem_max", "net/core/wmem_max", "net/ipv4/tcp_mem")

BUILD = """
import time
from longhaul.testbed import Testbed
from longhaul.topology.circuits import loop_spec
bed = Testbed()
circuit = bed.add_circuit(loop_spec(bed.topology, 1400), owner="crash test")
print(circuit.pid, flush=True)
time.sleep(120)
"""


CLEAN_UP_ON_SIGTERM = """
import signal, time
from longhaul.cli import _stop
from longhaul.testbed import Testbed
from longhaul.topology.circuits import loop_spec
signal.signal(signal.SIGTERM, _stop)
bed = Testbed()
try:
    circuit = bed.add_circuit(loop_spec(bed.topology, 1400), owner="sigterm test")
    print(circuit.pid, flush=True)
    time.sleep(120)
finally:
    bed.down()
"""


def host_sysctls() -> list[list[str]]:
    return [Path("/proc/sys", key).read_text().split() for key in HOST_SYSCTLS]


def wan_processes(prefix: str) -> list[int]:
    """Emulators running between namespaces of `prefix`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if (
            argv
            and argv[0].endswith(b"longhaul-wan")
            and any(a.startswith(prefix.encode()) for a in argv)
        ):
            found.append(int(entry.name))
    return found


def wait_until(condition, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def others_up() -> bool:
    return any(host.alive(h) for h in host.read().testbeds.values())


def test_a_killed_owner_takes_its_emulators_and_the_next_command_sweeps(testbed_env):
    env = {**os.environ, **testbed_env}
    restores = not others_up()
    before = host_sysctls()
    owner = subprocess.Popen(
        [sys.executable, "-c", BUILD], env=env, stdout=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        assert owner.stdout is not None
        emulator_pid = int(owner.stdout.readline())
        assert Path(f"/proc/{emulator_pid}").exists()
        assert host_sysctls() != before or not restores, "the testbed raised the buffers"
    finally:
        os.killpg(owner.pid, signal.SIGKILL)
        owner.wait(timeout=10)
    # The emulator follows its owner at once (it watches it through a pidfd) ...
    assert wait_until(lambda: not wan_processes(PREFIX), 3), wan_processes(PREFIX)
    # ... and the namespaces wait for the next command, which sweeps them.
    assert netns_module.ours() == [f"{PREFIX}ornl-host1", f"{PREFIX}ornl-host2"]
    status = subprocess.run(
        [sys.executable, "-m", "longhaul", "testbed", "status"],
        capture_output=True, text=True, env=env, timeout=60, check=True,
    )  # fmt: skip
    assert "swept what 1 testbed(s) left" in status.stderr, status.stderr
    assert netns_module.ours() == []
    if restores:
        assert host_sysctls() == before


def test_sigterm_ends_a_command_that_built_a_testbed_cleanly(testbed_env):
    env = {**os.environ, **testbed_env}
    owner = subprocess.Popen(
        [sys.executable, "-c", CLEAN_UP_ON_SIGTERM], env=env, stdout=subprocess.PIPE, text=True
    )
    assert owner.stdout is not None
    owner.stdout.readline()
    owner.send_signal(signal.SIGTERM)
    assert owner.wait(timeout=30) == 128 + signal.SIGTERM
    assert netns_module.ours() == [] and not wan_processes(PREFIX)


def test_down_without_root_is_one_clear_line(testbed_env):
    result = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
         sys.executable, "-m", "longhaul", "testbed", "down"],
        capture_output=True, text=True, env={**os.environ, **testbed_env}, timeout=60,
        check=False,
    )  # fmt: skip
    assert result.returncode == 1
    assert "needs root" in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_a_demo_killed_mid_run_is_swept_by_the_next_command(testbed_env, tmp_path):
    """kill -9 of the demo's whole process group while its first loop is measured."""
    env = {**os.environ, **testbed_env, "LONGHAUL_HOME": str(tmp_path / "home")}
    restores = not others_up()
    before = host_sysctls()
    demo = subprocess.Popen(
        [sys.executable, "-m", "longhaul", "demo"], env=env, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        assert wait_until(lambda: wan_processes("lhd-"), 90), "the demo built no circuit"
        time.sleep(2)
    finally:
        os.killpg(demo.pid, signal.SIGKILL)
        demo.wait(timeout=10)
    assert wait_until(lambda: not wan_processes("lhd-"), 3), "emulators outlived the demo"
    subprocess.run(
        [sys.executable, "-m", "longhaul", "testbed", "status"],
        capture_output=True, text=True, env=env, timeout=60, check=True,
    )  # fmt: skip
    assert netns_module.ours("lhd-") == []
    if restores:
        assert host_sysctls() == before
