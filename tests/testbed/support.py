"""Fixtures and helpers for tests that build a real testbed: root, network namespaces,
longhaul-wan. Conftests import the fixtures from here.

Each test gets its own state directory and the namespace prefix `lht-` (so a testbed a
developer has up is left alone), and everything it made is removed afterwards, also when
the test fails. Outside CI, the tests skip where the machine cannot run the testbed; in
CI (`CI` set) they must run.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

import longhaul.testbed as testbed_lib
from longhaul.measure.tools import ping as ping_tool
from longhaul.measure.tools.ping import PingResult
from longhaul.testbed import TestbedUnavailableError
from longhaul.testbed import netns as netns_module

PREFIX = "lht-"


@pytest.fixture
def testbed_env(tmp_path, monkeypatch) -> dict[str, str]:
    env = {"LONGHAUL_TESTBED_PREFIX": PREFIX, "LONGHAUL_TESTBED_DIR": str(tmp_path / "testbed")}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    try:
        netns_module.require_privileges()
        from longhaul.testbed import emulator  # noqa: PLC0415

        emulator.binary()
    except TestbedUnavailableError as exc:
        if os.environ.get("CI"):
            raise
        pytest.skip(str(exc))
    return env


@pytest.fixture
def testbed(testbed_env) -> Iterator[testbed_lib.Testbed]:
    bed = testbed_lib.Testbed()
    try:
        yield bed
    finally:
        bed.down(everything=True)
        assert netns_module.ours() == [], "namespaces left behind"


def ping(namespace: str, address: str, count: int, interval_s: float = 0.05) -> PingResult:
    return ping_tool.run(namespace, address, count, interval_s)


def settled_ping(namespace: str, address: str, count: int = 20) -> PingResult:
    """A ping run undisturbed by the machine: this virtual machine stalls for some ms now
    and then (about once in 200 replies, at random), which spoils a mean. A run whose
    spread shows such a stall is repeated, up to three times."""
    result = ping(namespace, address, count)
    for _ in range(2):
        if result.received == count and (result.mdev_ms or 0.0) < 0.25:
            break
        result = ping(namespace, address, count)
    return result
