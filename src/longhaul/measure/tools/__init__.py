"""Tools by name (pScheduler's split of a test, what is measured, from the tool that
measures it): each tool says which test it runs, which parameters it takes beyond the
test's own, whether it can run here, how long a run takes, and how to run one. Campaign
files, their checks, the runner and the CLI ask this registry; none of them knows a tool.

The built-in tools load when first asked for (the simulator's lives in `longhaul.sim`,
which itself uses `measure`: loading it lazily keeps the two packages from importing each
other). A tool added later (Hurricane, RDMA) calls `register`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Protocol

from longhaul.errors import InputError
from longhaul.measure.params import Param


class ToolError(RuntimeError):
    """A tool's run failed; the message is the tool's own. The run is stored as failed."""


if TYPE_CHECKING:
    from longhaul.measure.campaign import Run
    from longhaul.measure.rows import Row
    from longhaul.testbed import CircuitRecord, Testbed


class Tool(Protocol):
    name: str
    test: str
    """The test it runs (`campaign.TESTS`)."""
    params: tuple[Param, ...]
    """Parameters it takes beyond its test's own."""
    cc: tuple[str, ...]
    """The congestion controls it can run (empty: the test has none)."""
    cc_source: str
    """Whose they are, for messages: `the kernel`, `the simulator`."""

    def missing(self) -> str | None:
        """None if it can run here; otherwise what is missing and how to get it."""

    def estimate_s(self, planned: Run) -> float:
        """How long one run takes, set-up and wind-down included."""

    def measure(
        self, planned: Run, circuit: CircuitRecord, testbed: Testbed, row: Row
    ) -> dict[str, Any]:
        """Run it on `circuit`, fill `row`, return the tool's raw output; a failed run
        raises `ToolError` with the tool's message."""


class WanTool:
    """What the tools built on longhaul-wan's own programs (its UDP sender and sink, its
    echo server and probe) share: no parameters beyond their test's, no congestion
    control, and longhaul-wan must be built."""

    params: tuple[Param, ...] = ()
    cc: tuple[str, ...] = ()
    cc_source = ""

    def missing(self) -> str | None:
        from longhaul.testbed import emulator  # noqa: PLC0415 (the registry loads light)

        return emulator.missing()


BUILT_IN = {
    "iperf3": ("tcp_throughput", "longhaul.measure.tools.iperf3"),
    "sim": ("tcp_throughput", "longhaul.sim.tool"),
    "ib_rdma": ("ib_throughput", "longhaul.sim.ib"),
    "rdma_lan": ("rdma_lan", "longhaul.sim.rdma"),
    "udp": ("udp_throughput", "longhaul.measure.tools.udp"),
    "hurricane": ("udp_channel_profile", "longhaul.measure.tools.hurricane"),
    "ping": ("rtt", "longhaul.measure.tools.ping"),
    "echo": ("echo_jitter", "longhaul.measure.tools.echo"),
}
"""name: (test, module holding `TOOL`), in the order a test's default tool is chosen."""

_added: dict[str, Tool] = {}


def register(tool: Tool) -> None:
    _added[tool.name] = tool


def names_for(test: str) -> tuple[str, ...]:
    """The tools that run `test`, its default first."""
    built = [name for name, (runs, _) in BUILT_IN.items() if runs == test]
    return (*built, *(t.name for t in _added.values() if t.test == test))


def tool(name: str) -> Tool:
    if name in _added:
        return _added[name]
    if name not in BUILT_IN:
        known = ", ".join([*BUILT_IN, *_added])
        raise InputError("tool", f"no tool named {name!r}; there are {known}")
    found: Tool = importlib.import_module(BUILT_IN[name][1]).TOOL
    return found
