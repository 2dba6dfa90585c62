"""Campaigns, declared in TOML: which connections, which tests (what to measure), which
tool runs each (how), over which grid of parameters, how often.

```toml
name = "usn-tcp-quick"
description = "..."

[connections]
loops_miles = [0.2, 1400, 6600, 8600]   # loop-backs the testbed builds for the campaign
# reservations = [12, 13]               # or circuits of reservations (emulated driver)
# rate_gbps = 9.6                       # the loops' rate, if not their own
# jitter = "hops=4,mean=150us"          # a VLAN/MPLS core's queueing (none: a circuit)

[[tests]]
test = "tcp_throughput"                 # what: see TESTS
tool = "iperf3"                         # how: one of the test's tools
cc = ["cubic", "bbr"]
streams = [1, 5, 10]
repetitions = 2
duration_s = 10
warmup_s = 2
# loops_miles = [1400]                  # only on these connections
# cross_traffic_gbps = [0, 2]
```

Everything here is pure: a campaign is parsed and checked as a whole (every problem named
with its place in the file), expanded into runs, and its duration estimated before
anything runs.
"""

from __future__ import annotations

import itertools
import math
import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from longhaul.errors import InputError
from longhaul.measure import tools
from longhaul.measure.params import Param
from longhaul.measure.tools import hurricane


@dataclass(frozen=True)
class TestKind:
    name: str
    params: tuple[Param, ...]
    """What every tool of the test takes (a tool may take more: `Tool.params`)."""
    description: str

    @property
    def tools(self) -> tuple[str, ...]:
        """The tools that run it, its default first."""
        return tools.names_for(self.name)


_COMMON = (Param("repetitions", int, 1, grid=False, low=1, high=1000),)

TESTS: dict[str, TestKind] = {
    t.name: t
    for t in (
        TestKind(
            "tcp_throughput",
            (
                Param("cc", str, ["cubic"], grid=True),
                Param("streams", int, [1], grid=True, low=1, high=128),
                Param("cross_traffic_gbps", float, [0.0], grid=True, low=0, high=40),
                Param("duration_s", float, 10.0, grid=False, low=1, high=3600),
                Param("warmup_s", float, 2.0, grid=False, low=0, high=600),
                *_COMMON,
            ),
            "TCP goodput (iperf3 -C cc -P streams, or the simulator), warm-up left out",
        ),
        TestKind(
            "udp_throughput",
            (
                Param("rate_gbps", float, [1.0], grid=True, low=0.001, high=40),
                Param("duration_s", float, 5.0, grid=False, low=1, high=3600),
                *_COMMON,
            ),
            "UDP receiving rate against sending rate (the channel throughput profile)",
        ),
        TestKind(
            "udp_channel_profile",
            (
                Param("burst_datagrams", int, [64], grid=True, low=1, high=100_000),
                Param("idle_us", float, [0.0], grid=True, low=0, high=1_000_000),
                Param(
                    "nack_group",
                    int,
                    [hurricane.DEFAULT_NACK_GROUP],
                    grid=True,
                    low=1,
                    high=1_000_000,
                ),
                Param("megabytes", float, 512.0, grid=False, low=1, high=1_000_000),
                *_COMMON,
            ),
            "Hurricane's goodput and resent share by W_c datagrams per burst and T_s idle "
            "after it, memory to memory at the reservation's rate (USN's channel "
            "throughput profile, for choosing T_s)",
        ),
        TestKind(
            "rtt",
            (
                Param("samples", int, 50, grid=False, low=1, high=100_000),
                Param("interval_s", float, 0.05, grid=False, low=0.002, high=60),
                *_COMMON,
            ),
            "ping round-trip times",
        ),
        TestKind(
            "ib_throughput",
            (
                Param("message_bytes", int, [8 << 20], grid=True, low=1, high=1 << 23),
                Param("cross_traffic_gbps", float, [0.0], grid=True, low=0, high=10),
                *_COMMON,
            ),
            "InfiniBand throughput by message size across range extenders (the T_B(d, s) "
            "profile), perftest-shaped, on the simulator",
        ),
        TestKind(
            "rdma_lan",
            (
                Param(
                    "interconnect",
                    str,
                    ["iwarp", "ib", "mxom", "mxoe"],
                    grid=True,
                    choices=("iwarp", "ib", "mxom", "mxoe"),
                ),
                Param("message_bytes", int, [1], grid=True, low=1, high=1 << 22),
                Param("connections", int, [1], grid=True, low=1, high=4096),
                Param("reuse_pct", int, [100], grid=True, low=0, high=100),
                Param("queue_entries", int, [0], grid=True, low=0, high=100_000),
                Param("unexpected_entries", int, [0], grid=True, low=0, high=100_000),
                *_COMMON,
            ),
            "iWARP, InfiniBand and Myri-10G ping-pong latency and bandwidth on a LAN (or a "
            "loop, what-if), at the user level or under MPI, on the simulator",
        ),
        TestKind(
            "echo_jitter",
            (
                Param("variant", str, ["echo", "size"], grid=True, choices=("echo", "size")),
                Param("message_bytes", int, [64], grid=True, low=1, high=16 * 2**20),
                Param("samples", int, 100, grid=False, low=2, high=100_000),
                Param("interval_s", float, 0.01, grid=False, low=0, high=60),
                *_COMMON,
            ),
            "TCP request/response RTTs: the message echoed back, or a size asked for",
        ),
    )
}
"""Every test longhaul runs, with the parameters all its tools take."""

LONG_CAMPAIGN_S = 3600.0
"""A campaign estimated longer than this needs `--yes`."""


@dataclass(frozen=True)
class TestSpec:
    index: int
    kind: TestKind
    tool: str
    values: dict[str, Any]
    """Every parameter's value: lists for grid parameters."""
    loops_miles: tuple[float, ...] | None
    """Only on these connections (None: on all)."""

    @property
    def name(self) -> str:
        return self.kind.name

    def grid(self) -> list[dict[str, Any]]:
        """Every combination of the grid parameters."""
        names = [p.name for p in self.kind.params if p.grid]
        combos = itertools.product(*(self.values[n] for n in names))
        return [dict(zip(names, combo, strict=True)) for combo in combos]


@dataclass(frozen=True)
class Campaign:
    name: str
    description: str
    loops_miles: tuple[float, ...]
    reservations: tuple[int, ...]
    rate_gbps: float | None
    tests: tuple[TestSpec, ...]
    jitter: str | None = None
    """The loops' queueing jitter (`hops=N,mean=DURATION`), as a packet-switched core has;
    None: circuits (SONET has none beyond serialization)."""
    text: str = field(default="", repr=False)
    """The file as read (kept with the results)."""


@dataclass(frozen=True)
class Connection:
    """Where runs go: a loop-back (by length) or a reservation's circuit."""

    name: str
    length_miles: float
    rtt_ms: float
    loop_miles: float | None = None
    reservation: int | None = None


@dataclass(frozen=True)
class Run:
    test: TestSpec
    connection: Connection
    params: dict[str, Any]
    repetition: int

    @property
    def key(self) -> str:
        """Names the run within its campaign (what `--resume` recognizes)."""
        parts = [f"t{self.test.index}", self.test.name, self.test.tool, self.connection.name]
        parts += [
            f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
            for k, v in sorted(self.params.items())
        ]
        parts.append(f"rep={self.repetition}")
        return "|".join(parts)

    def estimate_s(self) -> float:
        """How long the run takes, set-up and wind-down included (its tool says)."""
        return tools.tool(self.test.tool).estimate_s(self)


def parse(text: str, source: str = "campaign") -> Campaign:
    """A campaign from TOML, or `InputError` naming every problem at once."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(source, f"not TOML: {exc}") from exc
    problems: list[str] = []
    name = data.get("name")
    if not isinstance(name, str) or not name.strip() or len(name) > 128:
        problems.append("name: give the campaign a name (1-128 characters)")
    connections = data.get("connections", {})
    if not isinstance(connections, dict):
        problems.append("connections: a table, e.g. [connections] with loops_miles = [0.2, 1400]")
        connections = {}
    loops = _lengths(connections.get("loops_miles", []), "connections.loops_miles", problems)
    reservations = tuple(
        int(r)
        for r in _numbers(connections.get("reservations", []), "connections.reservations", problems)
    )
    _no_repeats(reservations, "connections.reservations", problems)
    if not loops and not reservations:
        problems.append("connections: give loops_miles (e.g. [0.2, 1400]) or reservations")
    rate = connections.get("rate_gbps")
    if rate is not None and not (
        isinstance(rate, int | float) and not isinstance(rate, bool) and 0 < rate <= 100
    ):
        problems.append("connections.rate_gbps: a rate in Gb/s above 0, at most 100")
    jitter = connections.get("jitter")
    if jitter is not None and not (isinstance(jitter, str) and _JITTER.fullmatch(jitter)):
        problems.append(
            "connections.jitter: hops=N,mean=DURATION (e.g. hops=4,mean=150us), the queueing "
            "of a VLAN or MPLS core; leave it out for a circuit"
        )
    problems += [
        f"connections.{key}: not a connections setting; they are {', '.join(_CONNECTION_KEYS)}"
        for key in sorted(set(connections) - set(_CONNECTION_KEYS))
    ]
    raw_tests = data.get("tests", [])
    if not isinstance(raw_tests, list) or not raw_tests:
        problems.append("tests: give at least one [[tests]] table")
        raw_tests = []
    tests = []
    for index, raw in enumerate(raw_tests):
        spec = _test(index, raw, f"tests[{index}]", problems)
        if spec is not None:
            tests.append(spec)
    unknown = set(data) - {"name", "description", "connections", "tests"}
    problems += [f"{key}: not a campaign setting" for key in sorted(unknown)]
    if problems:
        raise InputError(source, "; ".join(problems))
    return Campaign(
        name=str(name).strip(),
        description=str(data.get("description", "")),
        loops_miles=tuple(loops),
        reservations=reservations,
        rate_gbps=None if rate is None else float(rate),
        jitter=jitter,
        tests=tuple(tests),
        text=text,
    )


_CONNECTION_KEYS = ("loops_miles", "reservations", "rate_gbps", "jitter")
_JITTER = re.compile(r"hops=\d+,mean=\d+(\.\d+)?(ns|us|ms|s)")
"""A packet-switched core's queueing jitter, as `longhaul-wan --jitter` takes it."""


def _lengths(value: Any, where: str, problems: list[str]) -> list[float]:
    """Loop lengths: finite, not negative, each once."""
    lengths = _numbers(value, where, problems)
    bad = [v for v in lengths if not math.isfinite(v) or v < 0]
    if bad:
        problems.append(f"{where}: {bad[0]!r} is not a length; give miles, 0 or more")
        return []
    _no_repeats(lengths, where, problems)
    return lengths


def _no_repeats(values: Iterable[Any], where: str, problems: list[str]) -> None:
    seen: set[Any] = set()
    for value in values:
        if value in seen:
            problems.append(f"{where}: {value!r} is listed twice (each value runs once)")
            return
        seen.add(value)


def _numbers(value: Any, where: str, problems: list[str]) -> list[float]:
    if not isinstance(value, list) or not all(
        isinstance(v, int | float) and not isinstance(v, bool) for v in value
    ):
        problems.append(f"{where}: a list of numbers")
        return []
    return [float(v) for v in value]


def _test(index: int, raw: Any, where: str, problems: list[str]) -> TestSpec | None:
    if not isinstance(raw, dict):
        problems.append(f"{where}: a table")
        return None
    kind = TESTS.get(str(raw.get("test")))
    if kind is None:
        problems.append(
            f"{where}.test: {raw.get('test')!r} is not a test; choose from {', '.join(TESTS)}"
        )
        return None
    name = str(raw.get("tool", kind.tools[0]))
    if name not in kind.tools:
        problems.append(
            f"{where}.tool: {name!r} cannot run {kind.name}; it runs with {', '.join(kind.tools)}"
        )
        return None
    tool = tools.tool(name)
    params = (*kind.params, *tool.params)
    values = {p.name: _value(p, raw.get(p.name, p.default), where, problems) for p in params}
    loops = raw.get("loops_miles")
    only = None if loops is None else tuple(_lengths(loops, f"{where}.loops_miles", problems))
    if "cc" in values:
        _check_cc(tool, kind, values["cc"], where, problems)
    known = {p.name for p in params} | {"test", "tool", "loops_miles"}
    for key in sorted(set(raw) - known):
        problems.append(_unknown_key(kind, tool, key, where, params))
    return TestSpec(index, kind, name, values, only)


def _unknown_key(
    kind: TestKind, tool: tools.Tool, key: str, where: str, params: tuple[Param, ...]
) -> str:
    """Why `key` is refused: another tool of the test takes it, or none does."""
    for other in kind.tools:
        if other != tool.name and any(p.name == key for p in tools.tool(other).params):
            return f"{where}.{key}: only tool = {other!r} takes it"
    return (
        f"{where}.{key}: {kind.name} with {tool.name} takes no {key!r}; it takes "
        f"{', '.join(p.name for p in params)}"
    )


def _check_cc(
    tool: tools.Tool, kind: TestKind, chosen: list[Any], where: str, problems: list[str]
) -> None:
    for cc in chosen:
        if cc in tool.cc or not isinstance(cc, str):
            continue
        others = [o for o in kind.tools if o != tool.name and cc in tools.tool(o).cc]
        fix = f"{cc} needs tool = {others[0]!r}" if others else f"no tool of {kind.name} has {cc}"
        problems.append(f"{where}.cc: {tool.cc_source} offers only {', '.join(tool.cc)}; {fix}")


def _value(param: Param, value: Any, where: str, problems: list[str]) -> Any:
    place = f"{where}.{param.name}"
    items = value if isinstance(value, list) else [value]
    if param.grid and not items:
        problems.append(f"{place}: give at least one value")
        return items
    checked = []
    for item in items:
        ok = _is(param.kind, item)
        if ok and param.choices and item not in param.choices:
            ok = False
        if ok and param.low is not None and not param.low <= item <= (param.high or item):
            ok = False
        if not ok:
            problems.append(f"{place}: {item!r} is not {_describe(param)}")
        checked.append(param.kind(item) if ok else item)
    if not param.grid:
        if isinstance(value, list):
            problems.append(f"{place}: one value, not a list")
        return checked[0] if checked else value
    _no_repeats(checked, place, problems)
    return checked


def _is(kind: type, item: Any) -> bool:
    if isinstance(item, bool):
        return False
    if kind is float:
        return isinstance(item, int | float)
    return isinstance(item, kind)


def _describe(param: Param) -> str:
    if param.choices:
        return "one of " + ", ".join(param.choices)
    kind = "a whole number" if param.kind is int else "a number" if param.kind is float else "text"
    if param.low is not None:
        return f"{kind} from {param.low:g} to {param.high:g}"
    return kind


def runs(campaign: Campaign, connections: list[Connection]) -> list[Run]:
    """Every run, connection by connection (a connection's runs go together), then test by
    test, repetition by repetition, parameters varying fastest."""
    planned = []
    for connection in connections:
        for test in campaign.tests:
            if test.loops_miles is not None and not _on(connection, test.loops_miles):
                continue
            for repetition in range(1, test.values["repetitions"] + 1):
                for params in test.grid():
                    planned.append(Run(test, connection, params, repetition))
    return planned


def _on(connection: Connection, loops_miles: tuple[float, ...]) -> bool:
    return any(
        abs(connection.length_miles - miles) <= max(1.0, 0.02 * miles) for miles in loops_miles
    )


def estimate_s(planned: list[Run]) -> float:
    return sum(run.estimate_s() for run in planned)
