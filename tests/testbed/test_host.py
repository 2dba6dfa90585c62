"""The host register and sysctl journal, with the machine's sysctls faked."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from longhaul.testbed import host
from longhaul.testbed.netns import TestbedError


@pytest.fixture
def sysctls(tmp_path, monkeypatch) -> dict[str, str]:
    monkeypatch.setenv("LONGHAUL_HOST_DIR", str(tmp_path / "host"))
    values = {"net.core.rmem_max": "212992", "net.ipv4.tcp_mem": "100\t200\t300"}
    monkeypatch.setattr(host, "read_sysctl", lambda key: values[key])

    def write(key: str, value: str) -> None:
        values[key] = value

    monkeypatch.setattr(host, "write_sysctl", write)
    return values


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_the_last_testbed_to_go_restores_exactly_what_was_there(sysctls, tmp_path):
    a = host.me(tmp_path / "a", "lha-", persistent=False)
    b = host.me(tmp_path / "b", "lhb-", persistent=False)
    host.register(a)
    host.raise_sysctls({("net.core.rmem_max", 0): 1_000_000, ("net.ipv4.tcp_mem", 2): 900})
    host.register(b)
    host.raise_sysctls({("net.core.rmem_max", 0): 5_000_000})
    assert sysctls == {"net.core.rmem_max": "5000000", "net.ipv4.tcp_mem": "100 200 900"}
    assert host.release(tmp_path / "a") == {}, "b still needs them"
    assert sysctls["net.core.rmem_max"] == "5000000"
    restored = host.release(tmp_path / "b")
    assert restored == {"net.core.rmem_max": "212992", "net.ipv4.tcp_mem": "100 200 300"}
    assert sysctls == {"net.core.rmem_max": "212992", "net.ipv4.tcp_mem": "100 200 300"}


def test_the_originals_are_on_disk_before_anything_changes(sysctls, tmp_path, monkeypatch):
    host.register(host.me(tmp_path / "a", "lha-", persistent=False))

    def crash(key: str, value: str) -> None:
        raise SystemExit("killed while writing")

    monkeypatch.setattr(host, "write_sysctl", crash)
    with pytest.raises(SystemExit):
        host.raise_sysctls({("net.core.rmem_max", 0): 1_000_000})
    journal = json.loads((tmp_path / "host" / "host.json").read_text())
    assert journal["originals"] == {"net.core.rmem_max": "212992"}


def test_a_testbed_whose_owner_died_is_stale_and_a_persistent_one_is_not(sysctls, tmp_path):
    gone = host.Holder(str(tmp_path / "gone"), "lhd-", [(dead_pid(), 1)], persistent=False)
    kept = host.Holder(str(tmp_path / "kept"), "lh-", [(dead_pid(), 1)], persistent=True)
    for holder in (gone, kept):
        host.register(holder)
    assert [h.state_dir for h in host.stale()] == [str(tmp_path / "gone")]


def test_two_testbeds_may_not_share_a_prefix(sysctls, tmp_path):
    host.register(host.me(tmp_path / "a", "lhx-", persistent=False))
    with pytest.raises(TestbedError, match="another testbed is up with the prefix 'lhx-'"):
        host.register(host.me(tmp_path / "b", "lhx-", persistent=False))
    # The same testbed built on by a second process keeps both owners, and stays
    # persistent if either made it so.
    host.register(host.me(tmp_path / "a", "lhx-", persistent=True))
    [holder] = host.read().testbeds.values()
    assert holder.persistent


def test_a_damaged_journal_is_an_error_that_says_what_it_holds(sysctls, tmp_path):
    (tmp_path / "host").mkdir()
    (tmp_path / "host" / "host.json").write_text("{not json")
    with pytest.raises(TestbedError, match="sysctls as they were"):
        host.read()
