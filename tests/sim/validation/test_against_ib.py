"""The InfiniBand validation, run whole on the real simulator (about 20 s on two cores)."""

from __future__ import annotations

from typing import Any

import pytest

from longhaul.sim.validation import validate
from longhaul.sim.validation.against_ib import DPM_RANGE, RDMA_TOLERANCE


@pytest.fixture(scope="module")
def found() -> dict[str, Any]:
    return validate(["ib"])


def test_every_published_row_has_a_case(found: dict[str, Any]):
    cases = found["ib"]["cases"]
    rdma = [c for c in cases if c["table"] == "ib_rdma.csv"]
    # 8 rows of throughput and an average DPM per connection.
    assert len(rdma) == 10
    assert all(c["tolerance"] == RDMA_TOLERANCE for c in rdma if c["unit"] == "Gb/s")
    assert [c["published"] for c in rdma if c["unit"] == "Mb/s per mile"] == [list(DPM_RANGE)] * 2
    assert found["summary"] == found["ib"]["summary"]
    assert found["summary"]["cases"] == len(cases)


def test_the_model_reproduces_the_published_results(found: dict[str, Any]):
    misses = [c["what"] for c in found["ib"]["cases"] if not c["within"]]
    assert misses == []


def test_throughput_falls_with_length_as_one_round_trip_per_run(found: dict[str, Any]):
    sonet = {
        c["what"]: c["sim"]
        for c in found["ib"]["cases"]
        if c["what"].startswith("RDMA write sonet") and c["unit"] == "Gb/s"
    }
    ordered = [sonet[f"RDMA write sonet {m} mi (Gb/s)"] for m in ("0.2", "1400", "6600", "8600")]
    assert ordered == sorted(ordered, reverse=True)
