"""Topology validation: every problem is reported, naming the element at fault."""

import pytest

from longhaul.errors import InputError
from longhaul.topology import TopologyError, load_topology, loads_topology

GOOD = """
name = "tiny"
[[sites]]
id = "A"
gateway = "a-sw"
[[sites]]
id = "B"
gateway = "b-sw"
[[nodes]]
id = "a-sw"
site = "A"
kind = "core"
ports = ["1", "2"]
[[nodes]]
id = "b-sw"
site = "B"
kind = "core"
ports = ["1", "2"]
[[links]]
id = "ab"
a = "a-sw:1"
b = "b-sw:1"
layer = "oc192"
length_miles = 100
[[loops]]
name = "there and back"
start = "a-sw"
links = ["ab", "ab"]
"""


def problems_of(text: str) -> list[str]:
    with pytest.raises(TopologyError) as caught:
        loads_topology(text, source="test.toml")
    return list(caught.value.problems)


def test_a_good_topology_loads_with_layer_defaults():
    topology = loads_topology(GOOD)
    link = topology.links["ab"]
    assert (link.capacity_mbps, link.granularity_mbps) == (9600, 150)
    assert link.one_way_delay_us == pytest.approx(950.0)
    assert topology.loops["there and back"].rtt_ms == pytest.approx(3.8)
    assert topology.resolve("a") == "a-sw"
    assert topology.resolve("B-SW") == "b-sw"


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (
            ('b = "b-sw:1"', 'b = "c-sw:1"'),
            "link 'ab': end b = 'c-sw:1' names unknown node 'c-sw' (a link to nowhere)",
        ),
        (
            ('b = "b-sw:1"', 'b = "b-sw:9"'),
            "link 'ab': end b = 'b-sw:9': node 'b-sw' has no port '9'",
        ),
        (('b = "b-sw:1"', 'b = "a-sw:2"'), "link 'ab': connects node 'a-sw' to itself"),
        (
            ("length_miles = 100", "length_miles = -3"),
            "link 'ab' (links[0]): length_miles = -3: Input should be greater than or equal to 0",
        ),
        (('ports = ["1", "2"]', 'ports = ["1", "1"]'), "node 'a-sw': port '1' is listed twice"),
        (('site = "B"', 'site = "C"'), "node 'b-sw': site 'C' is not defined"),
        (('gateway = "b-sw"', 'gateway = "x"'), "site 'B': gateway node 'x' is not defined"),
        (
            ('layer = "oc192"', 'layer = "oc999"'),
            "link 'ab' (links[0]): layer = 'oc999': Input should be",
        ),
        (
            ("length_miles = 100", 'length_miles = 100\ncolour = "red"'),
            "link 'ab' (links[0]): colour: unknown field",
        ),
        (('a = "a-sw:1"\n', ""), "link 'ab' (links[0]): a: is required"),
        (
            ('a = "a-sw:1"', 'a = "a-sw"'),
            "link 'ab' (links[0]): a = 'a-sw': expected 'node:port', got 'a-sw'",
        ),
        (
            ('links = ["ab", "ab"]', 'links = ["ab"]'),
            "loop 'there and back': walk ends at 'b-sw', not back at its start 'a-sw'",
        ),
        (
            ('links = ["ab", "ab"]', 'links = ["ab", "zz"]'),
            "loop 'there and back': link 'zz' is not defined",
        ),
        (('name = "tiny"', 'name = "tiny"\nextra = 1'), "unknown top-level key(s) extra"),
        (
            ("length_miles = 100", "length_miles = 100\ngranularity_mbps = 20000"),
            "link 'ab': granularity_mbps 20000 exceeds capacity_mbps 9600",
        ),
    ],
)
def test_each_problem_names_the_element(edit, expected):
    old, new = edit
    assert old in GOOD
    problems = problems_of(GOOD.replace(old, new, 1))
    assert any(p.startswith(expected) for p in problems), problems


def test_duplicates_and_shared_ports_are_named():
    text = (
        GOOD
        + '\n[[links]]\nid = "ab"\na = "a-sw:1"\nb = "b-sw:2"\nlayer = "gige"\nlength_miles = 1\n'
    )
    assert "link 'ab' is defined twice" in problems_of(text)
    text = (
        GOOD
        + '\n[[links]]\nid = "ab2"\na = "a-sw:1"\nb = "b-sw:2"\nlayer = "gige"\nlength_miles = 1\n'
    )
    assert "port 'a-sw:1' is used by both link 'ab' and link 'ab2'" in problems_of(text)


def test_all_problems_are_reported_at_once():
    text = GOOD.replace('site = "B"', 'site = "C"').replace(
        "length_miles = 100", "length_miles = -1"
    )
    problems = problems_of(text)
    assert len(problems) == 2
    message = str(TopologyError(problems, "test.toml"))
    assert message.startswith("invalid test.toml (2 problem(s)):")


def test_names_clash_across_sites_and_nodes_ignoring_case():
    text = GOOD.replace('id = "a-sw"', 'id = "b"').replace('"a-sw', '"b')
    assert any("name clashes with" in p for p in problems_of(text))


def test_not_toml_and_missing_file(tmp_path):
    assert problems_of("name = ")[0].startswith("not valid TOML")
    with pytest.raises(TopologyError, match="cannot read the file"):
        load_topology(tmp_path / "absent.toml")


def test_unknown_name_is_an_input_error_with_suggestions():
    topology = loads_topology(GOOD)
    with pytest.raises(InputError) as caught:
        topology.resolve("a-sv", field="src")
    assert caught.value.field == "src"
    assert "did you mean 'a-sw'" in str(caught.value)
