"""UDT memory to memory through tools/udt-harness: reading its JSON lines as recorded,
and one real transfer over loopback, out of the box and tuned."""

from pathlib import Path

import pytest

from longhaul import binaries
from longhaul.measure.tools import udt
from longhaul.measure.tools.udt import UdtError, UdtTest, parse, result_from

from .conftest import skip_unless_ci

RECORDED = Path(__file__).parents[1] / "fixtures" / "udt"


def test_both_ends_make_one_result_with_the_receivers_goodput():
    received = parse((RECORDED / "recv-200mb-default.txt").read_text())
    sent = parse((RECORDED / "send-200mb-default.txt").read_text())
    result = result_from(received, sent)
    assert result.bytes == 200_000_000
    assert result.seconds == 1.054075 and result.sender_seconds == 1.053884
    assert result.goodput_bps == pytest.approx(200_000_000 * 8 / 1.054075)
    assert (result.packets_sent, result.packets_retransmitted) == (137_503, 0)
    assert result.rtt_ms == 0.096
    # Out of the box: UDT 4.11's own sizes, as it reads them back.
    assert result.raw["recv"]["udt_rcvbuf_bytes"] == 8192 * 1472
    assert result.raw["recv"]["flow_window_packets"] == 25600


def test_errors_say_what_the_harness_said():
    with pytest.raises(UdtError, match=r"connecting to 127\.0\.0\.1:9002: Connection setup"):
        parse((RECORDED / "error-no-receiver.txt").read_text())
    with pytest.raises(UdtError, match="no result from udt_harness"):
        parse('{"listening": 9001}\n')
    with pytest.raises(UdtError, match=r"\(nothing\)"):
        parse("")


def test_tuning_is_passed_to_both_ends_only_when_asked():
    assert "--buffer-bytes" not in udt.tuning(UdtTest("a", "b", "198.18.0.6", 10))
    tuned = udt.tuning(UdtTest("a", "b", "198.18.0.6", 10, buffer_bytes=4_000_000))
    assert tuned[-2:] == ["--buffer-bytes", "4000000"]


def test_a_missing_harness_says_how_to_build_it(monkeypatch, tmp_path):
    monkeypatch.setenv("LONGHAUL_UDT_HARNESS", str(tmp_path / "absent"))
    monkeypatch.setattr(binaries, "REPO", tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(UdtError, match="make setup"):
        udt.run(UdtTest("a", "b", "198.18.0.6", 1000))


@pytest.mark.timeout(60)
@pytest.mark.parametrize("buffer_bytes", [0, 4_000_000], ids=["out-of-the-box", "tuned"])
def test_a_real_transfer_over_loopback(loopback_ns, buffer_bytes):
    if problem := udt.missing():
        skip_unless_ci(problem)
    test = UdtTest(loopback_ns, loopback_ns, "127.0.0.1", 50_000_000,
                   buffer_bytes=buffer_bytes, timeout_s=20, port=9003)  # fmt: skip
    result = udt.run(test)
    assert result.bytes == 50_000_000
    assert 0 < result.seconds < 20
    assert result.goodput_bps > 50e6  # loopback: a Gb/s or more
    sizes = result.raw["send"]
    assert sizes["buffer_bytes"] == buffer_bytes
    # Tuned never below UDT's defaults (8192 packets): 4 MB asks for less.
    assert sizes["udt_sndbuf_bytes"] == 8192 * 1472
    assert sizes["udp_sndbuf_bytes"] == (8192 * 1472 if buffer_bytes else 65536)
