"""The simulated core switch's TL1: cross-connects entered, edited, deleted and listed,
and the error codes of what it refuses."""

from longhaul.control.devices.core import LINE_STS3C, CoreSwitch, denial


def _switch() -> CoreSwitch:
    return CoreSwitch("ornl-cdci", frozenset({"1/1", "1/2", "2/1"}))


def test_a_cross_connect_lives_from_ent_to_dlt() -> None:
    switch = _switch()
    done = switch.execute("ENT-CRS-STS3C:ornl-cdci:1-1,2-1:7::CKTID=longhaul-7,NUMSTS=34,CCT=2WAY;")
    assert denial(done) is None and "M  7 COMPLD" in done and done.endswith(";")
    assert switch.crossconnects[("1/1", "2/1")].sts3c == 34
    assert (
        denial(switch.execute("ED-CRS-STS3C:ornl-cdci:1-1,2-1:7::CKTID=longhaul-7,NUMSTS=10;"))
        is None
    )
    assert switch.crossconnects[("1/1", "2/1")].sts3c == 10
    listing = switch.execute("RTRV-CRS-STS3C:ornl-cdci:ALL:8;")
    assert '"1-1,2-1:CKTID=longhaul-7,NUMSTS=10"' in listing
    assert denial(switch.execute("DLT-CRS-STS3C:ornl-cdci:1-1,2-1:7::CKTID=longhaul-7;")) is None
    assert switch.crossconnects == {}


def test_it_denies_with_the_codes_of_gr_833() -> None:
    switch = _switch()
    ent = "ENT-CRS-STS3C:ornl-cdci:1-1,2-1:7::CKTID=a,NUMSTS=40,CCT=2WAY;"
    assert denial(switch.execute(ent)) is None
    assert denial(switch.execute(ent)) == "SAAS"  # exists
    assert denial(switch.execute(ent.replace("ornl-cdci", "chicago-cdci", 1))) == "IITA"
    assert denial(switch.execute(ent.replace("2-1", "9-9"))) == "IIAC"
    # 1/1 already carries 40 of its 64 STS-3c: 30 more do not fit.
    more = "ENT-CRS-STS3C:ornl-cdci:1-1,1-2:8::CKTID=b,NUMSTS=30,CCT=2WAY;"
    assert denial(switch.execute(more)) == "IDNV"
    assert denial(switch.execute(more.replace("=30", f"={LINE_STS3C - 40}"))) is None
    assert denial(switch.execute("DLT-CRS-STS3C:ornl-cdci:1-2,2-1:9::CKTID=c;")) == "SROF"
    assert denial(switch.execute("RMV-EQPT:ornl-cdci:ALL:1;")) == "ICNV"
    assert denial(switch.execute("garbage")) == "ICNV"
