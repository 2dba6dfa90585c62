"""The accelerator tool: results read from what `longhaul-accel send` and `sink` really
printed (recorded on loopback: two streams, a sink not there, a file too short), and the
pair with every feature on a namespace's loopback, byte-exact."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from longhaul.measure import payloads
from longhaul.measure.tools import accelerator

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "accelerator"


def _read(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_a_transfer_is_the_sinks_goodput_and_each_streams_bytes_checked() -> None:
    sent, received = json.loads(_read("send_two.json")), json.loads(_read("sink_two.json"))
    result = accelerator._compare(sent, received)
    assert result.intact and result.bytes == 2_000_000
    assert result.mbps == pytest.approx(received["mbps"])
    # The sink numbers connections as it accepts them: the order does not matter...
    received["connections"].reverse()
    assert accelerator._compare(sent, received).intact
    # ...but a stream that arrived different does.
    received["connections"][0]["blake3"] = "0" * 64
    assert not accelerator._compare(sent, received).intact


def test_a_sender_that_failed_is_an_error_with_its_words() -> None:
    for fixture, words in (("send_refused.stderr", "Connection refused"),
                           ("send_short_file.stderr", "fewer than 4 streams")):  # fmt: skip
        with pytest.raises(accelerator.AcceleratorError, match=words):
            accelerator._failed("send", _read(fixture))


def test_the_session_buffers_hold_twice_the_path() -> None:
    # 1 Gb/s x 53.1 ms and a queue of one bandwidth-delay product: 2 x 13.3 MB.
    assert accelerator.wan_buffer_bytes(1e9, 53.1, 6_637_500) == pytest.approx(26.55e6, rel=1e-3)
    assert accelerator.wan_buffer_bytes(1e9, 0.1, 0) == 4 << 20


@pytest.mark.parametrize("features", ["tfo", "tfo+dre", "tfo+dre+lz"])
def test_the_pair_carries_files_byte_exact_and_counts_what_it_did(
    loopback_ns: str, tmp_path: Path, features: str
) -> None:
    source = payloads.write("hdf", tmp_path / "hdf", 8 << 20)
    with accelerator.Pair(loopback_ns, loopback_ns, "127.0.0.1", features, 8 << 20) as pair:
        for _ in range(2):
            moved = accelerator.transfer(loopback_ns, loopback_ns, "127.0.0.1", source, 2,
                                         4 << 20, connect_to=pair.address, timeout_s=30)  # fmt: skip
            assert moved.intact and moved.bytes == 8 << 20
    sent = pair.reports["near"]["sent"]
    assert sent["app_bytes"] == 2 * (8 << 20)
    assert pair.reports["far"]["received_app_bytes"] == sent["app_bytes"]
    if "dre" in features:
        # The second time every chunk is a reference to the first.
        assert sent["cache_hit_bytes"] > (8 << 20) * 0.9
        assert sent["wire_bytes"] < 0.6 * sent["app_bytes"]
    if "lz" in features:
        assert 0 < sent["lz_output_bytes"] < sent["lz_paid_input_bytes"]
    assert pair.reports["near"]["streams_reset"] == 0


def test_without_the_pair_the_sink_is_reached_directly(loopback_ns: str, tmp_path: Path) -> None:
    source = payloads.write("random", tmp_path / "random", 1 << 20)
    moved = accelerator.transfer(loopback_ns, loopback_ns, "127.0.0.1", source, 1, 1 << 20,
                                 timeout_s=30)  # fmt: skip
    assert moved.intact and moved.bytes == 1 << 20 and moved.mbps > 0


def test_unknown_features_are_refused_before_anything_starts() -> None:
    with pytest.raises(accelerator.AcceleratorError, match="unknown features"):
        accelerator.Pair("a", "b", "198.18.0.2", "tfo+zip", 1 << 20).__enter__()
