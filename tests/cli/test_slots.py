"""`longhaul slots`: the four answers for the sample Monday of data/bookings/usn-sample.toml."""

import json

from .conftest import SAMPLE_BOOKINGS

REQUEST = (
    "slots", "--src", "ORNL", "--dst", "SUNNYVALE", "--bandwidth", "5000",
    "--duration", "2h", "--start", "2030-01-07T09:00Z", "--bookings", str(SAMPLE_BOOKINGS),
)  # fmt: skip


def test_json_answers_for_the_sample_monday(cli):
    result = cli(*REQUEST, "--json")
    assert result.returncode == 0, result.stderr
    answers = json.loads(result.stdout)
    assert answers["request"]["src"] == "ORNL"
    assert answers["request"]["src_end"] == "ornl-cdci"
    assert answers["request"]["bookings"] == 5
    # Circuit 1 holds 9,000 Mb/s until 14:00; circuit 2 has 2,400 free from 09:00 to 11:00.
    assert answers["fixed_slot"]["path"] is None
    assert answers["earliest_start"]["start"] == "2030-01-07T14:00:00Z"
    assert answers["earliest_start"]["path"]["links"] == [
        "ornl-chicago-1",
        "chicago-seattle-1",
        "seattle-sunnyvale-1",
    ]
    assert answers["earliest_start"]["path"]["rtt_ms"] == 81.604
    assert answers["max_bandwidth"]["bandwidth_mbps"] == 2400
    assert answers["max_bandwidth"]["path"]["links"][0] == "ornl-chicago-2"
    # The 8,600-mile campaign holds both circuits 02:00-06:00 on Tuesday.
    assert answers["all_slots"]["starts"] == [
        {"first_start": "2030-01-07T14:00:00Z", "last_start": "2030-01-08T00:00:00Z"},
        {"first_start": "2030-01-08T06:00:00Z", "last_start": "2030-01-14T07:00:00Z"},
    ]


def test_readable_answers_name_each_query(cli):
    result = cli(*REQUEST)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for heading in ("1. Fixed slot", "2. Earliest start", "3. Highest bandwidth", "4. All start"):
        assert heading in out
    assert "no path has 5,000 Mb/s free throughout" in out
    assert "2030-01-07 14:00 UTC" in out
    assert "2,400 Mb/s" in out
    assert "ORNL→CHICAGO→SEATTLE→SUNNYVALE" in out


def test_without_bookings_everything_is_free_from_the_start(cli):
    result = cli("slots", "--src", "ornl-host1", "--dst", "chicago-e300", "--bandwidth", "9000",
                 "--duration", "30m", "--start", "2030-01-07T09:00+01:00", "--json")  # fmt: skip
    assert result.returncode == 0, result.stderr
    answers = json.loads(result.stdout)
    assert answers["fixed_slot"]["path"]["nodes"] == [
        "ornl-host1",
        "ornl-e300",
        "ornl-cdci",
        "chicago-cdci",
        "chicago-e300",
    ]
    assert answers["earliest_start"]["start"] == "2030-01-07T08:00:00Z"
    assert answers["max_bandwidth"]["bandwidth_mbps"] == 9290  # the WAN-PHY cross-connects


def test_bad_input_is_one_line_naming_the_option_and_exit_2(cli, tmp_path):
    cases = {
        ("--start", "2030-01-07T09:00"): "--start: '2030-01-07T09:00' has no time zone",
        ("--duration", "2 hours"): "--duration: cannot read '2 hours' as a duration",
        ("--src", "ORLN"): "src: no node or site named 'ORLN'; did you mean 'ORNL'?",
        ("--bandwidth", "0"): "bandwidth_mbps: must be greater than 0 Mb/s",
    }
    for (option, value), message in cases.items():
        args = list(REQUEST)
        args[args.index(option) + 1] = value
        result = cli(*args)
        assert result.returncode == 2, (option, result.stdout)
        assert result.stderr.startswith("error: "), result.stderr
        assert message in result.stderr, result.stderr
        assert "Traceback" not in result.stderr


def test_a_bad_bookings_file_names_the_entry(cli, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(
        SAMPLE_BOOKINGS.read_text().replace(
            "end = 2030-01-07T12:00:00Z", "end = 2030-01-07T09:00:00Z"
        )
    )
    result = cli(*REQUEST[:-1], str(bad))
    assert result.returncode == 2
    assert f"{bad}: bookings[1].end: must be after" in result.stderr


def test_a_loop_between_two_hosts(cli):
    result = cli("slots", "--src", "ornl-e300:1/0", "--dst", "ornl-e300:1/1", "--bandwidth", "4000",
                 "--duration", "1h", "--start", "2030-01-07T09:00Z", "--loop",
                 "ORNL-Chicago-Seattle-Sunnyvale x1", "--json")  # fmt: skip
    assert result.returncode == 0, result.stderr
    answers = json.loads(result.stdout)
    path = answers["fixed_slot"]["path"]
    assert path["nodes"][0] == "ornl-host1" and path["nodes"][-1] == "ornl-host2"
    assert path["length_miles"] == 8600.2
    assert answers["max_bandwidth"]["bandwidth_mbps"] == 9290  # the WAN-PHY cross-connects


def test_an_unknown_loop_lists_the_loops(cli):
    result = cli(*REQUEST, "--loop", "Moon")
    assert result.returncode == 2
    assert "--loop: no loop-back named 'Moon'; the topology has 'ORNL local'" in result.stderr
