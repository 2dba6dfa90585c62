"""The testbed on this machine: namespaces, circuits through longhaul-wan, real traffic.
Bounded in time; everything made is removed, also when a test fails."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from longhaul.testbed import crosstraffic, emulator, host, state, watch
from longhaul.testbed import netns as netns_module
from longhaul.testbed.testbed import Testbed, hosts_cpus
from longhaul.topology.circuits import loop_spec

from .support import PREFIX, ping, settled_ping


@pytest.mark.parametrize("miles", [0.2, 1400, 8600])
def test_a_loop_has_its_round_trip_time(testbed, miles):
    [circuit] = testbed.up([miles])
    result = settled_ping(circuit.src_ns, circuit.dst_addr)
    assert result.received == result.sent
    # Configured 0.28, 26.708 and 163.488 ms: within 0.3 ms.
    assert abs(result.avg_ms - circuit.rtt_ms) <= 0.3, (result, circuit.rtt_ms)
    assert result.min_ms >= circuit.rtt_ms - 0.01, "never faster than light"


def test_iperf3_gets_the_configured_rate(testbed):
    """1 Gb/s over the 1,400-mile loop: cubic moves most of it and never exceeds it. The
    loop is WAN-PHY: every 1,500-byte packet costs 1,538 bytes of the line. How close to
    the rate it comes depends on the machine's load (938 Mb/s with a compiler running
    beside it, against 950 asked here once): `longhaul bench wan` measures that; here the
    lower bound only catches an emulator that stalls."""
    [circuit] = testbed.up([1400], rate_bps=1_000_000_000)
    server = subprocess.Popen(
        netns_module.command(circuit.dst_ns, ["iperf3", "-s", "-1", "-p", "5299"]),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        time.sleep(0.3)
        out = netns_module.run(
            circuit.src_ns,
            ["iperf3", "-c", circuit.dst_addr, "-p", "5299", "-t", "6", "-O", "2",
             "-C", "cubic", "-J"],
            timeout_s=30,
        ).stdout  # fmt: skip
    finally:
        server.wait(timeout=10)
    goodput = json.loads(out)["end"]["sum_received"]["bits_per_second"]
    on_the_wire = goodput * 1538 / 1448  # 1,448 bytes of data take 1,538 of the line
    assert on_the_wire >= 0.5e9, goodput
    assert on_the_wire <= 1.01e9, on_the_wire


def _steering_while(circuit, client: list[str], server: list[str]) -> set[tuple[bool, bool]]:
    """Run `server` in B and `client` in A, and what the emulator's steering of devices
    A and B was, read every 50 ms while the client ran."""
    control = Path(circuit.control)
    seen: set[tuple[bool, bool]] = set()
    srv = subprocess.Popen(netns_module.command(circuit.dst_ns, server),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        time.sleep(0.3)
        cli = subprocess.Popen(netns_module.command(circuit.src_ns, client),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        try:
            while cli.poll() is None:
                seen.add(tuple(emulator.request(control, {"op": "stats"})["steering"]["on"]))
                time.sleep(0.05)
        finally:
            cli.wait(timeout=30)
    finally:
        srv.kill()
        srv.wait(timeout=10)
    return seen


@pytest.mark.skipif(not hosts_cpus(), reason="one CPU: nothing to steer to")
def test_only_tcp_coming_fast_into_a_device_steers_it(testbed):
    """A host's receive work goes to the other CPUs while TCP comes into its device fast:
    the data into B (one stream's acknowledgements into A, about one per 64 KB
    super-packet, stay under the threshold at 1 Gb/s); UDP's stays in the emulator's
    writes."""
    [circuit] = testbed.up([1400], rate_bps=1_000_000_000)
    server = ["iperf3", "-s", "-1", "-p", "5298"]
    client = ["iperf3", "-c", circuit.dst_addr, "-p", "5298", "-t", "3"]
    udp = _steering_while(circuit, [*client, "-u", "-b", "600M"], server)
    assert udp == {(False, False)}, udp
    tcp = _steering_while(circuit, [*client, "-C", "cubic"], server)
    assert (False, True) in tcp, tcp
    time.sleep(0.3)
    stats = emulator.request(Path(circuit.control), {"op": "stats"})
    assert stats["steering"]["on"] == [False, False], "quiet again"
    acks, data = stats["engine"]["tcp_packets_written"]
    assert data > 10 * acks > 0, (data, acks)


def test_random_loss_holds_its_rate(testbed):
    spec = loop_spec(testbed.topology, 0.2)
    circuit = testbed.add_circuit(spec, owner="test")
    testbed.change_circuit(circuit.number, loss=0.01)
    count = 2000
    result = ping(circuit.src_ns, circuit.dst_addr, count, interval_s=0.002)
    # Each ping crosses the link twice: it comes back with probability 0.99².
    lost_p = 1 - 0.99**2
    expected, sigma = count * lost_p, (count * lost_p * (1 - lost_p)) ** 0.5
    lost = result.sent - result.received
    assert abs(lost - expected) <= 5 * sigma, (lost, expected)
    stats = next(s for s in testbed.status() if s.record.number == circuit.number).stats
    assert stats["a_to_b"]["lost_random_segments"] + stats["b_to_a"]["lost_random_segments"] > 0


_UDP_GSO_SENDER = """
import socket, sys, time
address, batches, per_batch, size = sys.argv[1], *map(int, sys.argv[2:5])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_UDP, 103, size)  # UDP_SEGMENT: one send, `per_batch` datagrams
for batch in range(batches):
    first = batch * per_batch
    s.sendto(b"".join(bytes([(first + k) % 251]) * size for k in range(per_batch)),
             (address, 5296))
    time.sleep(0.002)  # four times a batch's time at 1 Gb/s: the queue never fills
"""

_UDP_PLAIN_RECEIVER = """
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
s.bind(("0.0.0.0", 5296))
s.settimeout(float(sys.argv[1]))
size = int(sys.argv[2])
print("ready", flush=True)
good = bad = 0
try:
    while True:
        d = s.recv(65536)
        if len(d) == size and d == d[:1] * size:
            good += 1
        else:
            bad += 1
except TimeoutError:
    pass
print(good, bad, flush=True)
"""


def _udp_snmp(ns: str) -> dict[str, int]:
    lines = [line.split() for line in netns_module.run(ns, ["cat", "/proc/net/snmp"], timeout_s=10).stdout
             .splitlines() if line.startswith("Udp:")]  # fmt: skip
    return dict(zip(lines[0][1:], map(int, lines[1][1:]), strict=True))


def test_udp_super_packets_a_loss_cuts_arrive_as_whole_datagrams(testbed):
    """UDP super-packets (a sender's `UDP_SEGMENT`) that random loss cuts go on as runs of
    neighbouring segments, one frame each, and a receiving socket without `UDP_GRO` gets
    each run cut back into the very datagrams that were sent: whole, each its own bytes."""
    [circuit] = testbed.up([0.2], rate_bps=1_000_000_000)
    testbed.change_circuit(circuit.number, loss=0.01)
    before = emulator.request(Path(circuit.control), {"op": "stats"})
    snmp_before = _udp_snmp(circuit.dst_ns)
    batches, per_batch, size = 400, 40, 1400
    receiver = subprocess.Popen(
        netns_module.command(circuit.dst_ns,
                             [sys.executable, "-c", _UDP_PLAIN_RECEIVER, "1.5", str(size)]),
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert receiver.stdout is not None
        assert receiver.stdout.readline().strip() == "ready"
        netns_module.run(circuit.src_ns, [sys.executable, "-c", _UDP_GSO_SENDER,
                                          circuit.dst_addr, str(batches), str(per_batch),
                                          str(size)], timeout_s=30)  # fmt: skip
        out, _ = receiver.communicate(timeout=30)
    finally:
        if receiver.poll() is None:
            receiver.kill()
            receiver.wait(timeout=10)
    good, bad = map(int, out.split())
    after = emulator.request(Path(circuit.control), {"op": "stats"})
    sent = batches * per_batch
    lost = sum(after["a_to_b"][k] - before["a_to_b"][k]
               for k in ("lost_random_segments", "dropped_queue_segments"))  # fmt: skip
    cuts = after["engine"]["cuts"] - before["engine"]["cuts"]
    frames = after["a_to_b"]["tx_frames"] - before["a_to_b"]["tx_frames"]
    assert bad == 0, (good, bad)
    assert good == sent - lost, (good, sent, lost)
    assert cuts > 50, cuts
    # Cut into single datagrams, each cut would make up to 39 frames; in runs, about two.
    assert frames <= batches + 2 * cuts, (frames, batches, cuts)
    assert after["engine"]["write_errors"] == before["engine"]["write_errors"]
    snmp_after = _udp_snmp(circuit.dst_ns)
    assert snmp_after["InCsumErrors"] == snmp_before["InCsumErrors"]
    assert snmp_after["RcvbufErrors"] == snmp_before["RcvbufErrors"]


def test_a_circuits_loss_seed_reaches_its_emulator(testbed):
    spec = replace(loop_spec(testbed.topology, 0.2), loss=0.001, loss_seed=7)
    circuit = testbed.add_circuit(spec, owner="test")
    assert circuit.loss_seed == 7
    argv = Path(f"/proc/{circuit.pid}/cmdline").read_bytes().split(b"\0")
    assert argv[argv.index(b"--seed") + 1] == b"7", argv


def test_delay_changes_at_runtime_without_losing_what_is_in_flight(testbed):
    [circuit] = testbed.up([1400])
    pinger = subprocess.Popen(
        netns_module.command(circuit.src_ns, ["ping", "-n", "-c", "200", "-i", "0.01",
                                              circuit.dst_addr]),
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    time.sleep(1.0)
    testbed.change_circuit(circuit.number, delay_ns=40_000_000)
    out, _ = pinger.communicate(timeout=30)
    assert "200 received" in out, out[-300:]
    times = [
        float(line.split("time=")[1].split()[0]) for line in out.splitlines() if "time=" in line
    ]
    # The fastest of twenty replies, and none faster: a busy machine can stall the
    # emulator for a few hundred milliseconds (seen in CI: fourteen replies released at
    # once), which adds to a round trip but never takes from it.
    for window, rtt_ms in ((times[:20], circuit.rtt_ms), (times[-20:], 80.0)):
        assert abs(min(window) - rtt_ms) < 1.0, window
    assert testbed.circuit(circuit.number).delay_ns == 40_000_000


def test_leaving_takes_down_a_testbed_only_when_nobody_else_builds_on_it(testbed):
    testbed.up([0.2])
    # Another process that built on the same testbed (as a campaign beside a server).
    other = subprocess.Popen(["sleep", "60"])
    try:
        start = host.process_start(other.pid)
        assert start is not None
        host.register(host.Holder(str(state.state_dir()), PREFIX, [(other.pid, start)], False))
        assert testbed.leave() is None, "the other still builds on it"
        assert netns_module.ours() != []
    finally:
        other.kill()
        other.wait(timeout=10)
    gone = testbed.leave()
    assert gone is not None and gone.emulators == 1
    assert netns_module.ours() == []
    assert str(state.state_dir()) not in host.read().testbeds


def test_leaving_keeps_a_persistent_testbed(testbed, testbed_env):
    lasting = Testbed(persistent=True)
    lasting.up([0.2])
    assert lasting.leave() is None
    assert len(netns_module.ours()) == 2, "`longhaul testbed up` stays until `down`"


def test_down_all_cleans_up_after_kill_9(testbed_env, tmp_path):
    env = {**os.environ, **testbed_env}
    up = subprocess.run(
        [sys.executable, "-m", "longhaul", "testbed", "up", "--loops", "0.2,1400", "--json"],
        capture_output=True, text=True, env=env, timeout=60, check=True,
    )  # fmt: skip
    circuits = json.loads(up.stdout)
    assert len(circuits) == 2 and netns_module.ours() == [
        f"{PREFIX}ornl-host1",
        f"{PREFIX}ornl-host2",
    ]
    assert _alive(circuits[1]["pid"]), "a persistent testbed outlives the command"
    # Kill one emulator with -9; lose the record of the other: both must still go.
    os.kill(circuits[0]["pid"], signal.SIGKILL)
    (Path(testbed_env["LONGHAUL_TESTBED_DIR"]) / "testbed.json").rename(tmp_path / "saved.json")
    down = subprocess.run(
        [sys.executable, "-m", "longhaul", "testbed", "down", "--all"],
        capture_output=True, text=True, env=env, timeout=60, check=True,
    )  # fmt: skip
    assert "removed 2 namespace(s)" in down.stdout, down.stdout
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _alive(circuits[1]["pid"]):
        time.sleep(0.05)
    assert not _alive(circuits[1]["pid"]), "a stray emulator survived"
    assert netns_module.ours() == []


def test_a_damaged_record_is_an_error_and_down_all_still_cleans_up(testbed, testbed_env):
    testbed.up([0.2])
    record = Path(testbed_env["LONGHAUL_TESTBED_DIR"]) / "testbed.json"
    record.write_text('{"circuits": [{"number": ')
    env = {**os.environ, **testbed_env}
    status = subprocess.run(
        [sys.executable, "-m", "longhaul", "testbed", "status"],
        capture_output=True, text=True, env=env, timeout=60, check=False,
    )  # fmt: skip
    assert status.returncode == 1
    assert "is damaged" in status.stderr and "down --all" in status.stderr, status.stderr
    assert "Traceback" not in status.stderr
    subprocess.run([sys.executable, "-m", "longhaul", "testbed", "down", "--all"], env=env,
                   check=True, capture_output=True, timeout=60)  # fmt: skip
    assert netns_module.ours() == []
    assert list(record.parent.glob("testbed.damaged-*.json")), "the damaged record is kept"


def _alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists() and "longhaul-wan" in Path(
        f"/proc/{pid}/cmdline"
    ).read_text(errors="replace")


def test_without_root_it_says_what_is_missing(testbed_env):
    result = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
         sys.executable, "-m", "longhaul", "testbed", "up"],
        capture_output=True, text=True, env={**os.environ, **testbed_env}, timeout=60,
        check=False,
    )  # fmt: skip
    assert result.returncode == 1
    assert "needs root" in result.stderr and "simulated runs" in result.stderr
    assert netns_module.ours() == []


def test_exec_runs_a_command_inside_a_host(testbed, testbed_env):
    [circuit] = testbed.up([0.2])
    shown = subprocess.run(
        [sys.executable, "-m", "longhaul", "testbed", "exec", "ornl-host1", "--",
         "ip", "-o", "-4", "addr", "show"],
        capture_output=True, text=True, env={**os.environ, **testbed_env}, timeout=30,
        check=True,
    )  # fmt: skip
    assert circuit.src_addr in shown.stdout
    missing = subprocess.run(
        [sys.executable, "-m", "longhaul", "testbed", "exec", "ornl-host3", "--", "true"],
        capture_output=True, text=True, env={**os.environ, **testbed_env}, timeout=30,
        check=False,
    )  # fmt: skip
    assert missing.returncode == 2 and "has no host 'ornl-host3'" in missing.stderr


UDP_SEGMENTS_PER_FRAME = 65_507 // crosstraffic.DATAGRAM_BYTES
"""The most datagrams one GSO frame of udp-send carries (its sends hold at most 65,507
bytes of payload, `traffic::MAX_SEND_BYTES`)."""


def test_cross_traffic_from_a_third_host_holds_its_rate(testbed):
    """Real UDP at 2 Gb/s from the cross-traffic host, over the 1,400-mile loop: what the
    sender sent arrives, and whatever does not is counted where it was dropped. The
    sender's own rate is the machine's to keep (on two cores 1.65 Gb/s arrived once, none lost),
    so it is compared with what arrived, not with 2 Gb/s."""
    [circuit] = testbed.up([1400])
    attached = testbed.attach_cross_host(circuit.number)
    assert f"{PREFIX}cross" in netns_module.ours()
    watching = watch.Watch.start(testbed.circuit(circuit.number))
    result = crosstraffic.run(testbed.circuit(circuit.number), attached, 2_000_000_000, 3)
    health = watching.finish()
    forward = health["a_to_b"]
    counted = (
        result.received["socket_drops"]
        + forward["dropped_queue_segments"]
        + forward["lost_segments"]
        + UDP_SEGMENTS_PER_FRAME * (health["tun_tx_dropped"] + health["arena_full_frames"])
    )
    assert result.lost <= counted, (result.received, health)
    assert result.sent["rate_bps"] > 1e9, result.sent
    assert abs(result.received_rate_bps - result.sent["rate_bps"]) <= 0.05 * 2e9, result
    stats = next(s for s in testbed.status() if s.record.number == circuit.number).stats
    carried = stats["a_to_b"]
    assert carried["rx_segments"] > 10 * carried["rx_frames"], "UDP GSO batches crossed whole"


def test_a_run_starts_once_the_frames_before_it_have_left(testbed):
    """`Watch.start` waits for a quiet circuit: a burst of UDP queued in the emulator is
    gone before the run is timed."""
    [circuit] = testbed.up([1400], rate_bps=100_000_000)
    netns_module.run(
        circuit.src_ns,
        [str(emulator.binary()), "udp-send", "--to", f"{circuit.dst_addr}:9",
         "--rate", "1g", "--duration", "20ms"],
        timeout_s=10,
    )  # fmt: skip

    def held_bytes() -> int:
        stats = emulator.request(Path(circuit.control), {"op": "stats"})
        return max(stats[d]["in_flight_bytes"] for d in ("a_to_b", "b_to_a"))

    assert held_bytes() > watch.QUIET_BYTES, "the burst is still in the emulator"
    started = time.monotonic()
    recorded = watch.Watch.start(circuit)
    assert held_bytes() < watch.QUIET_BYTES
    assert 2 * watch.SETTLE_POLL_S <= recorded.settled_s <= time.monotonic() - started
    finished = recorded.finish()
    assert finished["settled_s"] == round(recorded.settled_s, 3)
    assert finished["host_steal_s"] >= 0.0
