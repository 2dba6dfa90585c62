"""Reading and writing topologies as TOML, and the topologies shipped with longhaul."""

from __future__ import annotations

import importlib.resources
import tomllib
from pathlib import Path as FilePath
from typing import Any

import tomli_w
from pydantic import BaseModel, ValidationError

from longhaul.topology.model import Link, Loop, Node, Site
from longhaul.topology.network import Topology, TopologyError

_SECTIONS: dict[str, tuple[type[BaseModel], str, str]] = {
    # table name: (element type, the word for one element, its identifying key)
    "sites": (Site, "site", "id"),
    "nodes": (Node, "node", "id"),
    "links": (Link, "link", "id"),
    "loops": (Loop, "loop", "name"),
}


def shipped_topology_path(name: str) -> FilePath:
    """The file of a topology that ships with longhaul (`usn`, ...)."""
    resource = importlib.resources.files("longhaul") / "data" / "topologies" / f"{name}.toml"
    return FilePath(str(resource))


def usn() -> Topology:
    """The UltraScience Net backbone with its sites, switches, hosts and loop-backs."""
    return load_topology(shipped_topology_path("usn"))


def load_topology(path: FilePath | str) -> Topology:
    """Read and validate a topology file; `TopologyError` names every problem."""
    path = FilePath(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TopologyError([f"cannot read the file: {exc.strerror}"], str(path)) from exc
    return loads_topology(text, source=str(path))


def loads_topology(text: str, source: str = "topology") -> Topology:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TopologyError([f"not valid TOML: {exc}"], source) from exc
    return topology_from_dict(data, source)


def topology_from_dict(data: dict[str, Any], source: str = "topology") -> Topology:
    problems: list[str] = []
    unknown = sorted(set(data) - {"name", *_SECTIONS})
    if unknown:
        problems.append(
            f"unknown top-level key(s) {', '.join(unknown)}; expected name, "
            + ", ".join(f"[[{s}]]" for s in _SECTIONS)
        )
    parsed: dict[str, list[Any]] = {}
    unparsed: set[str] = set()
    for section, (model, word, key) in _SECTIONS.items():
        entries = data.get(section, [])
        if not isinstance(entries, list):
            problems.append(f"{section}: expected an array of tables ([[{section}]])")
            entries = []
        parsed[section] = []
        for index, entry in enumerate(entries):
            label = _label(word, key, section, index, entry)
            try:
                parsed[section].append(model.model_validate(entry))
            except ValidationError as exc:
                problems += [f"{label}: {_describe(err)}" for err in exc.errors()]
                if isinstance(entry, dict) and isinstance(entry.get(key), str):
                    unparsed.add(entry[key])
    name = data.get("name", FilePath(source).stem)
    if not isinstance(name, str):
        problems.append("name: expected a string")
        name = FilePath(source).stem
    try:
        topology = Topology(
            name, parsed["sites"], parsed["nodes"], parsed["links"], parsed["loops"], source
        )
    except TopologyError as exc:
        # Check what did parse too, so one pass shows every problem; but not the echoes of
        # an element that failed to parse (it is "not defined" only because of that).
        problems += [p for p in exc.problems if not any(f"{u!r}" in p for u in unparsed)]
    if problems:
        raise TopologyError(problems, source)
    return topology


def topology_to_dict(topology: Topology) -> dict[str, Any]:
    def dump(items: Any) -> list[dict[str, Any]]:
        return [item.model_dump(mode="json", exclude_none=True) for item in items]

    return {
        "name": topology.name,
        "sites": dump(topology.sites.values()),
        "nodes": dump(topology.nodes.values()),
        "links": dump(topology.links.values()),
        "loops": dump(view.loop for view in topology.loops.values()),
    }


def dumps_topology(topology: Topology) -> str:
    return tomli_w.dumps(topology_to_dict(topology))


def save_topology(topology: Topology, path: FilePath | str) -> None:
    FilePath(path).write_text(dumps_topology(topology), encoding="utf-8")


def _label(word: str, key: str, section: str, index: int, entry: Any) -> str:
    ident = entry.get(key) if isinstance(entry, dict) else None
    where = f"{section}[{index}]"
    return f"{word} {ident!r} ({where})" if isinstance(ident, str) else where


def _describe(error: Any) -> str:
    field = ".".join(str(part) for part in error["loc"] if part != "__root__")
    message = str(error["msg"]).removeprefix("Value error, ")
    if error["type"] == "missing":
        return f"{field}: is required"
    if error["type"] == "extra_forbidden":
        return f"{field}: unknown field"
    shown = f" = {error['input']!r}" if field and not isinstance(error["input"], dict) else ""
    return f"{field}{shown}: {message}" if field else message
