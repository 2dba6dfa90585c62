import subprocess
import sys
from pathlib import Path

import pytest

from ..testbed.support import testbed, testbed_env  # noqa: F401

REPO = Path(__file__).parents[2]
SAMPLE_BOOKINGS = REPO / "data" / "bookings" / "usn-sample.toml"


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The real `longhaul` command, as a user runs it (exit code, stdout, stderr)."""
    return subprocess.run(
        [sys.executable, "-c", "from longhaul.cli import main; main()", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={"COLUMNS": "100", "PATH": "/usr/bin:/bin"},
    )


@pytest.fixture
def cli():
    return run_cli
