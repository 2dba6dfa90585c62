"""The USN comparison on a small profile, and the command that runs the parts."""

from __future__ import annotations

import dataclasses

from longhaul.sim.validation import against_usn
from tests.cli.conftest import run_cli


def test_the_usn_comparison_checks_every_published_figure_and_finding():
    small = dataclasses.replace(
        against_usn.USN_MODEL, streams=(5, 6), repetitions=1, duration_s=2.0, warmup_s=1.0
    )
    found = against_usn.validate_usn(small)
    assert [c["what"] for c in found["profile"]][:2] == [
        "bic T̄ at 0.2 mi (Gb/s)",
        "bic T̄ at 1400 mi (Gb/s)",
    ]
    assert len(found["profile"]) == 8 and len(found["average_dpm"]) == 2
    assert len(found["findings"]) == 3
    for check in found["profile"]:
        assert check["within"] == (abs(check["error"]) <= 0.25)
    # The 0.2-mile loop is what the hosts can do: both variants near the WAN-PHY rate.
    assert found["profile"][0]["sim"] > 8.5
    assert isinstance(found["all_within"], bool)


def test_validate_refuses_an_unknown_part():
    result = run_cli("sim", "validate", "--parts", "ns3,gpu")
    assert result.returncode == 2 and "choose among ns3, kernel, usn" in result.stderr
