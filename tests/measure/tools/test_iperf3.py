"""Reading iperf3's JSON as 3.12 really prints it."""

import json

import pytest

from longhaul.measure.tools.iperf3 import (
    Iperf3Error,
    Iperf3Test,
    client_argv,
    parse,
    run,
    timeout_s,
)


def document(omitted_rtts=(50_000,), measured_rtts=(30_000, 32_000), received=9.2e9):
    intervals = [
        {"sum": {"omitted": True}, "streams": [{"rtt": r} for r in omitted_rtts]},
        {"sum": {"omitted": False}, "streams": [{"rtt": r} for r in measured_rtts]},
    ]
    return {
        "intervals": intervals,
        "end": {
            "sum_sent": {"bits_per_second": 9.3e9, "retransmits": 12},
            "sum_received": {"bits_per_second": received},
        },
    }


def test_totals_and_rtts_leave_the_warm_up_out():
    result = parse(json.dumps(document()))
    assert result.goodput_bps == 9.2e9 and result.retransmits == 12
    assert result.rtt_ms == [30.0, 32.0]
    assert result.rtt_mean_ms == 31.0 and result.rtt_std_ms == 1.0


def test_nan_and_a_document_printed_twice_are_read():
    text = json.dumps(document(received=1e9)).replace(
        '"retransmits": 12', '"retransmits": 12, "x": -nan'
    )
    twice = '{"error": "interrupt"}\n' + text + "\n" + text.replace("1000000000.0", "nan")
    result = parse(twice)
    assert result.goodput_bps == 0.0  # the last document's figure, nan read as nothing
    assert parse(text).goodput_bps == 1e9


def test_an_error_says_what_iperf3_said():
    with pytest.raises(Iperf3Error, match="unable to connect"):
        parse('{"start": {}, "error": "unable to connect to server: Connection refused"}')
    with pytest.raises(Iperf3Error, match="no iperf3 JSON result"):
        parse("iperf3: error - the server is busy")
    # iperf3 3.12 leaves `end` empty beside its error: a failure, not 0 b/s.
    with pytest.raises(Iperf3Error, match="server is busy"):
        parse('{"start": {}, "intervals": [], "end": {}, "error": "the server is busy"}')
    with pytest.raises(Iperf3Error, match="no totals"):
        parse('{"start": {"test_start": {"protocol": "TCP"}}, "intervals": [], "end": {}}')


def test_the_timeout_grows_with_round_trips_and_streams():
    short = Iperf3Test("a", "b", "198.18.0.6", duration_s=10, omit_s=2, streams=1, rtt_ms=0.3)
    long = Iperf3Test("a", "b", "198.18.0.6", duration_s=10, omit_s=2, streams=8, rtt_ms=653)
    assert timeout_s(short) == pytest.approx(27, abs=0.1)
    assert timeout_s(long) > timeout_s(short) + 25


def test_pinned_socket_buffers_reach_both_ends(loopback_ns):
    """`socket_buffer_bytes` (hosts as USN had them) is iperf3 -w: both ends' buffers."""
    test = Iperf3Test(loopback_ns, loopback_ns, "127.0.0.1", duration_s=1, omit_s=0,
                      socket_buffer_bytes=65536)  # fmt: skip
    assert client_argv(test)[-2:] == ["-w", "65536"]
    assert "-w" not in client_argv(Iperf3Test("a", "b", "127.0.0.1"))
    result = run(test)
    assert result.raw["start"]["sock_bufsize"] == 65536
    # The kernel doubles what it is given, for its own accounting (socket(7)).
    assert result.raw["start"]["rcvbuf_actual"] == 2 * 65536


def test_campaigns_may_pin_the_hosts_buffers():
    from longhaul.measure.tools import tool  # noqa: PLC0415

    params = {p.name: p for p in tool("iperf3").params}
    param = params["socket_buffer_bytes"]
    assert (param.name, param.default, param.grid) == ("socket_buffer_bytes", 0, False)


def test_campaigns_may_put_the_hosts_behind_link_encryptors():
    from longhaul.measure.tools import tool  # noqa: PLC0415
    from longhaul.measure.tools.iperf3 import variant  # noqa: PLC0415

    params = {p.name: p for p in tool("iperf3").params}
    assert params["encryptor"].choices == ("none", "fragment", "drop")
    assert (params["host_mtu_bytes"].default, params["host_mtu_bytes"].grid) == (0, False)
    # Plain at the circuit's MTU is what every other run is: no variant.
    assert variant({"encryptor": "none", "host_mtu_bytes": 0}) is None
    assert variant({}) is None
    assert variant({"encryptor": "fragment", "host_mtu_bytes": 8950}) == "encrypted, MTU 8950"
    assert variant({"encryptor": "none", "host_mtu_bytes": 9000}) == "plain, MTU 9000"
    assert variant({"encryptor": "drop", "host_mtu_bytes": 9000}) == "encrypted (drop), MTU 9000"
    assert variant({"encryptor": "fragment", "host_mtu_bytes": 0}) == "encrypted"
