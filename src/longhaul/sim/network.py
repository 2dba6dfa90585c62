"""A topology (`data/topologies/*.toml`) as a simulated network: its hosts, switches and
links, with TCP flows between hosts, each on the path of least delay or around one of
the topology's loops (out over one circuit, back over the other, as USN's were)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from longhaul.errors import InputError
from longhaul.topology.model import NodeKind
from longhaul.topology.network import Topology

US_PER_MS = 1000.0


@dataclass(frozen=True)
class NetFlow:
    """TCP streams from one host to another; `loop` names a loop of the topology to
    send them around (it must start at the switch both hosts hang off)."""

    source: str
    destination: str
    cc: str = "cubic"
    streams: int = 1
    loop: str | None = None


def host_link(topology: Topology, host: str) -> str:
    """The one link of `host`: its interface."""
    links = [lk.id for lk in topology.links.values() if host in lk.nodes]
    if len(links) != 1:
        raise InputError("flow", f"host {host!r} has {len(links)} links; a host has one")
    return links[0]


def _host_id(topology: Topology, name: str, field: str) -> str:
    node_id = topology.resolve(name, field)
    if topology.nodes[node_id].kind != NodeKind.HOST:
        hosts = sorted(n.id for n in topology.nodes.values() if n.kind == NodeKind.HOST)
        raise InputError(field, f"{name!r} is not a host (hosts: {', '.join(hosts)})")
    return node_id


def _route(topology: Topology, flow: NetFlow, source: str, destination: str) -> list[str] | None:
    if flow.loop is None:
        return None
    view = topology.loops.get(flow.loop)
    if view is None:
        raise InputError("loop", f"no loop {flow.loop!r} (loops: {', '.join(topology.loops)})")
    out, back = host_link(topology, source), host_link(topology, destination)
    start = view.loop.start
    for host, link in ((source, out), (destination, back)):
        if topology.links[link].other_end(host) != start:
            raise InputError(
                "loop", f"loop {flow.loop!r} starts at {start!r}, not where {host!r} hangs off"
            )
    return [out, *view.loop.links, back]


def network_scenario(
    topology: Topology,
    flows: Sequence[NetFlow],
    *,
    duration_s: float,
    omit_s: float = 0.0,
    interval_s: float = 1.0,
    host_preset: str | None = None,
    seed: int | None = None,
) -> dict[str, Any]:
    """The longhaul-sim network scenario of `flows` on `topology`. Links run at their
    layer's payload rate with their one-way delay; each host's NIC runs at its link's
    rate; queues take longhaul-sim's default (one bandwidth-delay product of the link)."""
    hosts = [n.id for n in topology.nodes.values() if n.kind == NodeKind.HOST]
    switches = [n.id for n in topology.nodes.values() if n.kind != NodeKind.HOST]

    def host(node_id: str) -> dict[str, Any]:
        spec: dict[str, Any] = {"id": node_id}
        if host_preset:
            spec["host_preset"] = host_preset
        rate_mbps = topology.links[host_link(topology, node_id)].capacity_mbps
        spec["host"] = {"nic_rate_bps": rate_mbps * 1e6}
        return spec

    def flow(f: NetFlow) -> dict[str, Any]:
        source = _host_id(topology, f.source, "flow")
        destination = _host_id(topology, f.destination, "flow")
        spec: dict[str, Any] = {
            "from": source,
            "to": destination,
            "cc": f.cc,
            "streams": f.streams,
        }
        route = _route(topology, f, source, destination)
        if route is not None:
            spec["route"] = route
        return spec

    scenario: dict[str, Any] = {
        "duration_s": duration_s,
        "omit_s": omit_s,
        "interval_s": interval_s,
        "hosts": [host(h) for h in hosts if _attached(topology, h)],
        "switches": switches,
        "links": [
            {
                "id": lk.id,
                "a": lk.a.node,
                "b": lk.b.node,
                "rate_bps": lk.capacity_mbps * 1e6,
                "delay_ms": lk.one_way_delay_us / US_PER_MS,
            }
            for lk in topology.links.values()
        ],
        "flows": [flow(f) for f in flows],
    }
    if seed is not None:
        scenario["seed"] = seed
    return scenario


def _attached(topology: Topology, node_id: str) -> bool:
    return any(node_id in lk.nodes for lk in topology.links.values())
