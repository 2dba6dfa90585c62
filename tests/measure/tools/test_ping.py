"""Reading ping's output: every reply, and the precise summary."""

import pytest

from longhaul.measure.tools.ping import PingError, parse

OUTPUT = """PING 198.18.0.6 (198.18.0.6) 56(84) bytes of data.
64 bytes from 198.18.0.6: icmp_seq=1 ttl=64 time=163 ms
64 bytes from 198.18.0.6: icmp_seq=3 ttl=64 time=164 ms

--- 198.18.0.6 ping statistics ---
3 packets transmitted, 2 received, 33.3333% packet loss, time 2003ms
rtt min/avg/max/mdev = 163.488/163.652/163.816/0.164 ms, pipe 2
"""


def test_replies_and_summary():
    result = parse(OUTPUT)
    assert (result.sent, result.received) == (3, 2)
    assert result.times_ms == [163.0, 164.0]
    assert (result.min_ms, result.avg_ms, result.mdev_ms) == (163.488, 163.652, 0.164)
    assert result.loss == pytest.approx(1 / 3)


def test_no_reply_at_all():
    result = parse("2 packets transmitted, 0 received, 100% packet loss, time 1001ms\n")
    assert result.received == 0 and result.avg_ms is None


def test_not_ping_output():
    with pytest.raises(PingError, match="not ping"):
        parse("ping: connect: Network is unreachable")
