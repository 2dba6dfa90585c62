"""Saving and loading topologies as TOML."""

from longhaul.topology import dumps_topology, load_topology, loads_topology, save_topology, usn


def test_usn_round_trips_through_toml(tmp_path):
    original = usn()
    save_topology(original, tmp_path / "copy.toml")
    copy = load_topology(tmp_path / "copy.toml")
    assert dumps_topology(copy) == dumps_topology(original)
    assert copy.links == original.links
    assert copy.nodes == original.nodes
    assert {name: view.rtt_ms for name, view in copy.loops.items()} == {
        name: view.rtt_ms for name, view in original.loops.items()
    }


def test_saved_endpoints_are_node_colon_port():
    text = dumps_topology(usn())
    assert 'a = "ornl-cdci:1/1"' in text
    assert loads_topology(text).links["ornl-chicago-1"].a.port == "1/1"
