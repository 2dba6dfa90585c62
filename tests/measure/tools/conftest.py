"""A namespace of the test's own for the tools' real runs over loopback: created with its
loopback up, removed after, also when the test fails. Outside CI the runs skip where the
machine cannot create namespaces; in CI (`CI` set) they must run."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from longhaul.testbed import TestbedUnavailableError
from longhaul.testbed import netns as netns_module


def skip_unless_ci(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture
def loopback_ns() -> Iterator[str]:
    if os.geteuid() != 0:
        skip_unless_ci("the tools' real runs need root (a network namespace)")
    name = f"lht-tools-{os.getpid()}"
    try:
        netns_module.create(name)
    except (TestbedUnavailableError, netns_module.TestbedError, OSError) as exc:
        skip_unless_ci(f"cannot create a network namespace: {exc}")
    try:
        yield name
    finally:
        netns_module.remove(name)
    assert not netns_module.exists(name), "namespace left behind"
