"""A topology (`data/topologies/*.toml`) as a simulated network: its hosts, switches and
links, with TCP flows between hosts, each on the path of least delay or around one of
the topology's loops (out over one circuit, back over the other, as USN's were)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from longhaul.errors import InputError
from longhaul.topology.circuits import host_link, loop_route
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


def _host_id(topology: Topology, name: str, field: str) -> str:
    node_id = topology.resolve(name, field)
    if topology.nodes[node_id].kind != NodeKind.HOST:
        hosts = sorted(n.id for n in topology.nodes.values() if n.kind == NodeKind.HOST)
        raise InputError(field, f"{name!r} is not a host (hosts: {', '.join(hosts)})")
    return node_id


def _route(topology: Topology, flow: NetFlow, source: str, destination: str) -> list[str] | None:
    if flow.loop is None:
        return None
    topology.loop_links(flow.loop)  # an unknown name is refused, listing the loops
    return list(loop_route(topology, topology.loops[flow.loop], source, destination))


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
        spec["host"] = {"nic_rate_bps": host_link(topology, node_id).capacity_mbps * 1e6}
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
        "hosts": [host(h) for h in hosts if topology.adjacency[h]],
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
