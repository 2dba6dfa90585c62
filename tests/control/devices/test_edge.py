"""The simulated edge switch's command line: modes, VLANs, and what it refuses."""

from longhaul.control.devices.edge import INVALID, EdgeSwitch


def _switch() -> EdgeSwitch:
    return EdgeSwitch("ornl-e300", frozenset({"1/0", "1/1"}))


def _type(switch: EdgeSwitch, *lines: str) -> list[str]:
    return [switch.execute(line) for line in lines]


def test_a_vlan_is_built_in_configure_mode_and_shown_in_the_running_config() -> None:
    switch = _switch()
    assert switch.prompt == "ornl-e300#"
    said = _type(switch, "configure", "interface vlan 1007", " description longhaul-7",
                 " tagged TenGigabitEthernet 1/0", " tagged TenGigabitEthernet 1/1",
                 " rate police 5000 peak 5000", " no shutdown")  # fmt: skip
    assert said == [""] * 7
    assert switch.prompt == "ornl-e300(conf-if-vl-1007)#"
    switch.execute("end")
    vlan = switch.vlans[1007]
    assert vlan.tagged == {"1/0", "1/1"} and vlan.police_mbps == 5000 and not vlan.shutdown
    assert "interface Vlan 1007\n description longhaul-7" in switch.running_config()


def test_it_refuses_what_the_real_one_would() -> None:
    switch = _switch()
    assert switch.execute("interface vlan 5") == INVALID  # not in configure mode
    switch.execute("configure")
    assert "out of range" in switch.execute("interface vlan 4095")
    assert switch.execute("no interface vlan 9") == "% Error: No such interface Vlan 9."
    switch.execute("interface vlan 9")
    assert "No such interface TenGigabitEthernet 7/7" in switch.execute(
        "tagged TenGigabitEthernet 7/7"
    )
    assert "out of range" in switch.execute("rate police 20000 peak 20000")
    assert switch.execute("frobnicate") == INVALID
    switch.execute("exit")
    assert switch.prompt == "ornl-e300(conf)#"
    assert switch.execute("no interface vlan 9") == ""
    assert 9 not in switch.vlans
