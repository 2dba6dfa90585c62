"""Which emulator the testbed runs: `$LONGHAUL_WAN` must name a file the testbed will
know as its own (`is_ours` looks for `longhaul-wan` on the command line)."""

from __future__ import annotations

from pathlib import Path

import pytest

from longhaul.testbed import emulator
from longhaul.testbed.netns import TestbedUnavailableError


def _executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_another_build_is_taken_when_it_is_called_longhaul_wan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    build = _executable(tmp_path / "try" / "longhaul-wan")
    monkeypatch.setenv("LONGHAUL_WAN", str(build))
    assert emulator.binary() == build


def test_another_build_under_another_name_is_refused_with_how_to_mend_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    build = _executable(tmp_path / "wan-new")
    monkeypatch.setenv("LONGHAUL_WAN", str(build))
    with pytest.raises(TestbedUnavailableError, match="not called longhaul-wan") as refused:
        emulator.binary()
    assert "/tmp/try/longhaul-wan" in str(refused.value)
    assert emulator.missing() is not None
