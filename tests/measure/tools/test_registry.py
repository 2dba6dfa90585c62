"""Tools by name: the registry the campaign files, the runner and the CLI ask."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from longhaul.errors import InputError
from longhaul.measure import campaign, tools
from longhaul.measure.params import Param


def test_each_test_names_its_tools_default_first():
    assert tools.names_for("tcp_throughput") == ("iperf3", "sim")
    assert tools.names_for("rtt") == ("ping",)
    assert campaign.TESTS["echo_jitter"].tools == ("echo",)


def test_every_built_in_tool_says_what_it_runs():
    for name, (test, _) in tools.BUILT_IN.items():
        found = tools.tool(name)
        assert (found.name, found.test) == (name, test)


def test_an_unknown_tool_is_one_clear_error():
    with pytest.raises(InputError, match="no tool named 'netperf'; there are iperf3"):
        tools.tool("netperf")


def test_measure_does_not_load_the_simulator_until_a_campaign_asks_for_it():
    code = (
        "import sys; from longhaul.measure import campaign, runner, importers;"
        "campaign.parse(open(sys.argv[1]).read());"
        "print('longhaul.sim' in sys.modules)"
    )
    quick = "src/longhaul/data/campaigns/usn-tcp-quick.toml"
    out = subprocess.run(
        [sys.executable, "-c", code, quick], capture_output=True, text=True, check=False
    )
    assert out.stdout.strip() == "False", out.stderr


class Netperf:
    """A tool added from outside, as Hurricane or RDMA tools will be."""

    name = "netperf"
    test = "tcp_throughput"
    params = (Param("burst", int, 4, grid=False, low=1, high=64),)
    cc = ("cubic",)
    cc_source = "netperf"

    def missing(self) -> str | None:
        return "netperf is missing: apt-get install netperf"

    def estimate_s(self, planned: Any) -> float:
        return 7.0

    def measure(self, planned: Any, circuit: Any, testbed: Any, row: Any) -> dict[str, Any]:
        return {}


def test_a_registered_tool_takes_part_in_campaign_files(monkeypatch):
    monkeypatch.setattr(tools, "_added", {})
    tools.register(Netperf())
    text = (
        'name = "x"\n[connections]\nloops_miles = [1400]\n[[tests]]\n'
        'test = "tcp_throughput"\ntool = "netperf"\nburst = 8\ncc = ["cubic"]\n'
    )
    spec = campaign.parse(text)
    assert spec.tests[0].values["burst"] == 8
    run = campaign.runs(spec, [campaign.Connection("loop", 1400, 26.8)])[0]
    assert run.estimate_s() == 7.0
    with pytest.raises(InputError, match="burst: 100 is not a whole number from 1 to 64"):
        campaign.parse(text.replace("burst = 8", "burst = 100"))
    with pytest.raises(InputError, match=r"tests\[0\]\.burst: only tool = 'netperf' takes it"):
        campaign.parse(text.replace('tool = "netperf"\n', ""))
