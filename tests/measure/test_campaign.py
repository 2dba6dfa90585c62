"""Campaign files: read and checked as a whole, expanded into runs, estimated."""

from pathlib import Path

import pytest

from longhaul.errors import InputError
from longhaul.measure import campaign as campaigns
from longhaul.measure.campaign import Connection, parse, runs
from longhaul.measure.runner import plan_connections
from longhaul.testbed import Testbed

SHIPPED = Path(__file__).parents[2] / "data" / "campaigns"

GOOD = """
name = "t"
[connections]
loops_miles = [0.2, 1400]
[[tests]]
test = "tcp_throughput"
cc = ["cubic", "bbr"]
streams = [1, 8]
repetitions = 3
duration_s = 5
[[tests]]
test = "echo_jitter"
loops_miles = [1400]
message_bytes = [64]
"""


def connections():
    return [
        Connection("loop 0.2 mi", 0.2, 0.28, 0.2),
        Connection("loop 1,400 mi", 1400.2, 26.7, 1400),
    ]


def test_a_campaign_expands_into_its_grid_per_connection():
    spec = parse(GOOD)
    planned = runs(spec, connections())
    tcp = [r for r in planned if r.test.name == "tcp_throughput"]
    assert len(tcp) == 2 * 2 * 2 * 3  # connections x cc x streams x repetitions
    jitter = [r for r in planned if r.test.name == "echo_jitter"]
    assert {r.connection.name for r in jitter} == {"loop 1,400 mi"}
    assert {r.params["variant"] for r in jitter} == {"echo", "size"}  # the default
    assert len({r.key for r in planned}) == len(planned), "every run has its own key"
    assert planned[0].connection.name == "loop 0.2 mi"  # a connection's runs go together
    assert tcp[0].params == {"cc": "cubic", "streams": 1, "cross_traffic_gbps": 0.0}


def test_the_estimate_grows_with_length_and_streams():
    planned = runs(parse(GOOD), connections())
    by = {(r.connection.name, r.params.get("streams")): r.estimate_s() for r in planned}
    assert by[("loop 1,400 mi", 8)] > by[("loop 1,400 mi", 1)] > by[("loop 0.2 mi", 1)] >= 7
    assert campaigns.estimate_s(planned) == pytest.approx(sum(r.estimate_s() for r in planned))


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('name = "x"\n[[tests]]\ntest = "tcp_throughput"', "connections: give loops_miles"),
        (
            'name = "x"\n[connections]\nloops_miles=[1400]\n[[tests]]\ntest = "tcp_speed"',
            "'tcp_speed' is not a test; choose from tcp_throughput",
        ),
        (
            'name = "x"\n[connections]\nloops_miles=[1400]\n[[tests]]\ntest = "rtt"\ntool = "iperf3"',
            "tests[0].tool: 'iperf3' cannot run rtt; it runs with ping",
        ),
        (
            'name = "x"\n[connections]\nloops_miles=[1400]\n[[tests]]\ntest = "tcp_throughput"\ncc = ["bic"]',
            "tests[0].cc: the kernel offers only cubic, reno, bbr; bic needs tool = 'sim'",
        ),
        (
            'name = "x"\n[connections]\nloops_miles=[1400]\n[[tests]]\ntest = "tcp_throughput"\n'
            'tool = "sim"\ncc = ["bbr"]',
            "tests[0].cc: the simulator offers only reno, bic, cubic, htcp, highspeed, scalable, vegas; bbr needs tool = 'iperf3'",
        ),
        (
            'name = "x"\n[connections]\nloops_miles=[1400]\n[[tests]]\ntest = "tcp_throughput"\n'
            'host = "usn-type-3"',
            "tests[0].host: only tool = 'sim' takes it",
        ),
        (
            'name = "x"\n[connections]\nloops_miles=[1400]\n[[tests]]\ntest = "tcp_throughput"\n'
            'tool = "sim"\nhost = "cray"',
            "tests[0].host: 'cray' is not one of usn-type-1",
        ),
        (
            'name = "x"\n[connections]\nloops_miles=[1400]\n[[tests]]\ntest = "tcp_throughput"\nstreams = [0]',
            "tests[0].streams: 0 is not a whole number from 1 to 128",
        ),
        (
            'name = "x"\n[connections]\nloops_miles=[1400]\n[[tests]]\ntest = "rtt"\nstreams = [2]',
            "rtt with ping takes no 'streams'",
        ),
        (
            'name = "x"\n[connections]\nloops_miles=[1400]\n[[tests]]\ntest = "rtt"\nsamples = [2, 3]',
            "tests[0].samples: one value, not a list",
        ),
        ('name = "x"\nconnections = "loop"\n[[tests]]\ntest = "rtt"', "connections: a table"),
        (
            'name = "x"\n[connections]\nloops_miles=[1400]\nloop_miles=[2]\n[[tests]]\ntest = "rtt"',
            "connections.loop_miles: not a connections setting",
        ),
        (
            'name = "x"\n[connections]\nloops_miles=[nan]\n[[tests]]\ntest = "rtt"',
            "connections.loops_miles: nan is not a length",
        ),
        (
            'name = "x"\n[connections]\nloops_miles=[-5]\n[[tests]]\ntest = "rtt"',
            "connections.loops_miles: -5.0 is not a length",
        ),
        (
            'name = "x"\n[connections]\nloops_miles=[1400, 1400]\n[[tests]]\ntest = "rtt"',
            "connections.loops_miles: 1400.0 is listed twice",
        ),
        (
            'name = "x"\n[connections]\nloops_miles=[1400]\n[[tests]]\ntest = "tcp_throughput"\n'
            "streams = [1, 1]",
            "tests[0].streams: 1 is listed twice",
        ),
        (
            'name = "x"\n[connections]\nloops_miles=[1400]\n[[tests]]\ntest = "rtt"\n'
            "loops_miles = [inf]",
            "tests[0].loops_miles: inf is not a length",
        ),
        (
            'name = "x"\n[connections]\nloops_miles=[1400]\njitter = "lots"\n[[tests]]\ntest = "rtt"',
            "connections.jitter: hops=N,mean=DURATION",
        ),
        ("name = 1", "name: give the campaign a name"),
        ("name = [", "not TOML"),
    ],
)
def test_bad_campaigns_say_what_to_fix(text, says):
    with pytest.raises(InputError) as caught:
        parse(text)
    assert says in str(caught.value)


def test_a_length_with_no_loop_is_refused_before_anything_runs():
    spec = parse('name = "x"\n[connections]\nloops_miles=[5000]\n[[tests]]\ntest = "rtt"')
    with pytest.raises(InputError, match="no loop of 5000 miles"):
        plan_connections(spec, Testbed())


def test_a_reservation_without_a_circuit_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("LONGHAUL_TESTBED_DIR", str(tmp_path))
    spec = parse('name = "x"\n[connections]\nreservations=[7]\n[[tests]]\ntest = "rtt"')
    with pytest.raises(InputError, match="reservation 7 has no circuit"):
        plan_connections(spec, Testbed())


def test_the_shipped_campaigns_read_and_the_full_one_needs_yes():
    quick = parse((SHIPPED / "usn-tcp-quick.toml").read_text())
    full = parse((SHIPPED / "usn-tcp-full.toml").read_text())
    testbed = Testbed()
    quick_s = campaigns.estimate_s(runs(quick, plan_connections(quick, testbed)))
    full_s = campaigns.estimate_s(runs(full, plan_connections(full, testbed)))
    assert 120 < quick_s < 420
    assert full_s > campaigns.LONG_CAMPAIGN_S
    assert {c for t in full.tests for c in t.values.get("cc", [])} == {"cubic", "bbr", "reno"}


def test_the_shipped_encrypted_campaign_pairs_each_encrypted_test_with_a_plain_one():
    spec = parse((SHIPPED / "usn-tcp-encrypted.toml").read_text())
    setups = {(t.values["encryptor"], t.values["host_mtu_bytes"]) for t in spec.tests}
    assert setups == {("none", 9000), ("fragment", 9000), ("none", 8950), ("fragment", 8950)}
    estimate = campaigns.estimate_s(runs(spec, plan_connections(spec, Testbed())))
    assert 120 < estimate < 420


def test_an_encryptor_the_tool_does_not_have_is_refused_by_name():
    text = 'name = "x"\n[connections]\nloops_miles=[1400]\n[[tests]]\ntest = "tcp_throughput"\n'
    with pytest.raises(InputError, match="encryptor: 'squeeze' is not one of none, fragment, drop"):
        parse(text + 'encryptor = "squeeze"')
    with pytest.raises(InputError, match="host_mtu_bytes: 70000 is not a whole number"):
        parse(text + "host_mtu_bytes = 70000")


def test_a_campaign_can_ask_for_a_packet_switched_cores_jitter():
    text = 'name = "x"\n[connections]\nloops_miles=[1400]\njitter = "hops=4,mean=150us"\n'
    assert parse(text + '[[tests]]\ntest = "rtt"').jitter == "hops=4,mean=150us"
