"""`longhaul topology show`."""

import json


def test_show_lists_sites_links_and_loops_with_rtts(cli):
    result = cli("topology", "show")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "usn: 5 sites, 11 nodes, 16 links, 15 loop-backs" in out
    assert "chicago-seattle-1" in out and "2,600" in out
    assert "ORNL-Chicago-Seattle-Sunnyvale x4" in out and "653.11" in out
    assert "150 Mb/s on oc192" in out


def test_show_json_has_computed_delays_and_rtts(cli):
    result = cli("topology", "show", "--json")
    data = json.loads(result.stdout)
    loops = {loop["name"]: loop for loop in data["loops"]}
    assert loops["ORNL-Chicago x1"]["rtt_ms"] == 26.708
    assert loops["ORNL local"]["length_miles"] == 0.2
    links = {link["id"]: link for link in data["links"]}
    assert links["ornl-atlanta"]["one_way_delay_us"] == 2375.0
    assert links["ornl-chicago-1"]["a"] == "ornl-cdci:1/1"


def test_a_broken_file_lists_every_problem_and_exits_2(cli, tmp_path):
    broken = tmp_path / "broken.toml"
    broken.write_text(
        '[[sites]]\nid = "A"\n[[nodes]]\nid = "a"\nsite = "B"\nkind = "core"\nports = ["1"]\n'
        '[[links]]\nid = "l"\na = "a:1"\nb = "z:1"\nlayer = "gige"\nlength_miles = -1\n'
    )
    result = cli("topology", "show", str(broken))
    assert result.returncode == 2
    assert f"invalid {broken} (2 problem(s))" in result.stderr
    assert "length_miles = -1" in result.stderr
    assert "node 'a': site 'B' is not defined" in result.stderr
