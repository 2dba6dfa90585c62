"""GridFTP memory to memory: reading globus-url-copy's stamped debug output and the
server's transfer log as Debian 12's versions really print them, sizing the buffers, and
one real transfer over loopback."""

import gzip
import shutil
import subprocess
from pathlib import Path

import pytest

from longhaul.measure.tools import gridftp
from longhaul.measure.tools.gridftp import (
    GridftpError,
    GridftpTest,
    NoTransferError,
    Transfer,
    parse,
    parse_server_log,
    tcp_buffer_bytes,
    timeout_s,
)

from .conftest import skip_unless_ci

RECORDED = Path(__file__).parents[1] / "fixtures" / "gridftp"


def recorded(name: str) -> str:
    path = RECORDED / name
    if path.suffix == ".gz":
        return gzip.decompress(path.read_bytes()).decode()
    return path.read_text()


def test_a_transfer_under_a_second_is_timed_from_its_start_to_its_end():
    transfer = parse(recorded("p4-50mb.txt"))
    assert transfer.bytes == 50_000_000
    # "150 Beginning transfer" at 0.010207 s, "operation complete" at 0.034843 s.
    assert transfer.seconds == pytest.approx(0.034843 - 0.010207)
    assert transfer.vb_bytes is None and transfer.vb_avg_bps is None


def test_goodput_runs_from_the_first_data_as_hurricanes_and_udts_do():
    transfer = parse(recorded("p4-50mb.txt"))
    # The first data callback, 262,144 bytes, at 0.011258 s: the data channels' set-up
    # before it is left out, and so are its bytes.
    assert transfer.data_seconds == pytest.approx(0.034843 - 0.011258)
    assert transfer.first_data_bytes == 262_144
    assert transfer.goodput_bps == pytest.approx((50_000_000 - 262_144) * 8 / (0.034843 - 0.011258))
    # All in one callback: nothing after it to time, so the whole transfer's time.
    whole = Transfer(seconds=0.5, bytes=262_144, data_seconds=0.1, first_data_bytes=262_144)
    assert whole.goodput_bps == pytest.approx(262_144 * 8 / 0.5) and whole.timed_seconds == 0.5


def test_the_progress_line_is_read_in_mebibytes():
    transfer = parse(recorded("p1-tcp-bs-4096.txt.gz"))
    assert transfer.bytes == 400_000_000
    assert transfer.vb_bytes == 376_963_072
    assert transfer.vb_avg_bps == pytest.approx(89.87 * 2**20 * 8)
    # Its average, taken 0.2 s before the end, agrees with the stamped time.
    assert transfer.bytes * 8 / transfer.seconds == pytest.approx(transfer.vb_avg_bps, rel=0.05)


def test_the_server_log_gives_its_time_and_retransmits_per_stream():
    log = parse_server_log(recorded("p4-50mb-server.log"))
    assert log is not None
    assert (log.bytes, log.streams, log.retransmits) == (50_000_000, 4, [0, 0, 0, 0])
    assert log.seconds == pytest.approx(0.798776 - 0.775374)
    assert parse_server_log("") is None


def test_errors_say_what_globus_url_copy_said():
    with pytest.raises(GridftpError, match=r"Unable to connect to 127\.0\.0\.1:2812"):
        parse(recorded("error-connection-refused.txt"))
    with pytest.raises(GridftpError, match="No such file or directory"):
        parse(recorded("error-no-such-file.txt"))
    cut = "\n".join(recorded("p4-50mb.txt").splitlines()[:60])
    with pytest.raises(NoTransferError, match="no finished transfer"):
        parse(cut)


def test_the_buffer_is_the_bdp_shared_by_the_streams():
    given = GridftpTest("a", "b", "198.18.0.6", 10**9, tcp_buffer_bytes=123_456)
    assert tcp_buffer_bytes(given) == 123_456
    # 10 Gb/s and 100 ms: a BDP of 125 MB, over 8 streams.
    wide = GridftpTest("a", "b", "198.18.0.6", 10**9, rtt_ms=100, rate_bps=10e9)
    assert tcp_buffer_bytes(wide) == 15_625_000
    short = GridftpTest("a", "b", "198.18.0.6", 10**9, rtt_ms=0.1, rate_bps=1e9)
    assert tcp_buffer_bytes(short) == gridftp.MIN_TCP_BUFFER_BYTES
    unknown = GridftpTest("a", "b", "198.18.0.6", 10**9)
    assert tcp_buffer_bytes(unknown) == 0
    assert "-tcp-bs" not in gridftp.client_argv(unknown)


def test_the_timeout_grows_with_the_size_and_the_round_trip():
    small = GridftpTest("a", "b", "198.18.0.6", 10**9, rtt_ms=1, rate_bps=10e9)
    large = GridftpTest("a", "b", "198.18.0.6", 10**11, rtt_ms=600, rate_bps=10e9)
    assert timeout_s(small) == pytest.approx(3.2 + 0.02 + 15)
    assert timeout_s(large) > timeout_s(small) + 300
    assert timeout_s(GridftpTest("a", "b", "x", 1, timeout_s=7)) == 7


@pytest.mark.timeout(60)
def test_a_real_transfer_over_loopback(loopback_ns):
    if problem := gridftp.missing():
        skip_unless_ci(problem)
    test = GridftpTest(loopback_ns, loopback_ns, "127.0.0.1", 100_000_000, streams=4,
                       rtt_ms=1, rate_bps=10e9, timeout_s=20, port=2813)  # fmt: skip
    result = gridftp.run(test)
    assert result.bytes == 100_000_000 and result.streams == 4
    assert result.tcp_buffer_bytes == 312_500  # 10 Gb/s times 1 ms over 4 streams
    assert 0 < result.seconds < result.wall_seconds < 20
    assert result.goodput_bps > 100e6  # loopback: several Gb/s
    assert result.server is not None and result.server.bytes == 100_000_000
    assert result.retransmits is not None
    # The server served one connection and went.
    listening = subprocess.run(
        ["ip", "netns", "exec", loopback_ns, "ss", "-Hltn", "sport = :2813"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert listening.stdout.strip() == ""


def test_a_missing_server_is_said_plainly(monkeypatch):
    real_which = shutil.which
    monkeypatch.setattr(
        gridftp.shutil, "which", lambda name: None if name == gridftp.SERVER else real_which(name)
    )
    with pytest.raises(GridftpError, match="apt-get install globus-gridftp-server-progs"):
        gridftp.run(GridftpTest("a", "b", "198.18.0.6", 1000))
