"""The RDMA LAN validation, run whole on the real simulator (about 2 s)."""

from __future__ import annotations

from typing import Any

import pytest

from longhaul.analysis import reference
from longhaul.sim.validation import validate
from longhaul.sim.validation.against_rdma_lan import TABLE, _judge


@pytest.fixture(scope="module")
def found() -> dict[str, Any]:
    return validate(["rdma-lan"])


def test_every_published_row_has_a_case(found: dict[str, Any]):
    rows = reference.load_table(TABLE).rows
    # Rows that do not tell MX over Myrinet from MX over Ethernet are a case for each.
    shared = sum("not distinguished" in str(i) for i in rows["interconnect"])
    cases = found["rdma-lan"]["cases"]
    assert len(cases) == len(rows) + shared
    assert found["summary"] == {
        "cases": len(cases),
        "within": found["rdma-lan"]["summary"]["within"],
    }


def test_only_the_short_message_latencies_are_fitted(found: dict[str, Any]):
    cases = found["rdma-lan"]["cases"]
    fitted = {c["what"].split(": ")[1] for c in cases if c["basis"] == "fitted"}
    assert fitted == {"latency_pingpong_short_msg", "mpi_latency_pingpong_short_msg"}
    summary = found["rdma-lan"]["summary"]
    assert summary["fitted"] == 8
    assert summary["predicted"] == summary["cases"] - 8
    # The fit is published beside the cases: one time per adapter and per library.
    assert set(found["rdma-lan"]["fitted"]) == {"iwarp", "ib", "mxom", "mxoe"}


def test_the_models_reproduce_the_study(found: dict[str, Any]):
    misses = [
        (c["what"], c["sim"], c["published"]) for c in found["rdma-lan"]["cases"] if not c["within"]
    ]
    assert misses == []


def test_the_rules():
    assert _judge("eager_rendezvous_switch_point", "", 64.0, 32.0)[0]
    assert not _judge("eager_rendezvous_switch_point", "", 128.0, 32.0)[0]
    assert _judge("x", "[upper bound] text", 82.0, 75.0)[0]
    assert not _judge("x", "[upper bound] text", 83.0, 75.0)[0]
    assert _judge("x", "[upper bound] text", 10.0, 75.0)[0]
    assert not _judge("x", "", 89.0, 100.0)[0]
    assert _judge("x", "", 91.0, 100.0)[0]
