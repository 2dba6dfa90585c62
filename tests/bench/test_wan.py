"""`longhaul bench wan` (the runs themselves need root and minutes: they are the
benchmark, not a test)."""

from __future__ import annotations

import fcntl

import pytest

from longhaul.bench import wan
from longhaul.testbed.netns import TestbedError


def test_a_second_benchmark_is_refused_while_one_holds_the_testbed(monkeypatch, tmp_path):
    monkeypatch.setattr(wan, "LOCK", tmp_path / "bench.lock")
    with (tmp_path / "bench.lock").open("a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(TestbedError, match="wait for it to finish"), wan._own_testbed():
            pytest.fail("a second testbed came up")
