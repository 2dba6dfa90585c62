"""The network longhaul reserves and emulates: sites, switches, ports, links and loops."""

from longhaul.topology.io import (
    dumps_topology,
    load_topology,
    loads_topology,
    save_topology,
    shipped_topology_path,
    topology_from_dict,
    topology_to_dict,
    usn,
)
from longhaul.topology.model import (
    DEFAULT_DELAY_US_PER_MILE,
    Endpoint,
    Hop,
    Layer,
    Link,
    Loop,
    Node,
    NodeKind,
    Path,
    Site,
)
from longhaul.topology.network import LoopView, Topology, TopologyError, UnknownNameError

__all__ = [
    "DEFAULT_DELAY_US_PER_MILE",
    "Endpoint",
    "Hop",
    "Layer",
    "Link",
    "Loop",
    "LoopView",
    "Node",
    "NodeKind",
    "Path",
    "Site",
    "Topology",
    "TopologyError",
    "UnknownNameError",
    "dumps_topology",
    "load_topology",
    "loads_topology",
    "save_topology",
    "shipped_topology_path",
    "topology_from_dict",
    "topology_to_dict",
    "usn",
]
