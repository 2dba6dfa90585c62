"""Where longhaul finds the programs it builds (the emulator, the simulator, Hurricane,
the UDT harness): an environment variable naming the binary, the workspace's build, or
one on PATH, in that order."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def find(env_var: str, built: str, name: str) -> Path | None:
    """`$env_var`, `built` (relative to the repository), or `name` on PATH: the first
    that is an executable file."""
    candidates = [os.environ.get(env_var), str(REPO / built), shutil.which(name)]
    for candidate in candidates:
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return Path(candidate)
    return None


def cargo_built(env_var: str, package: str, error: type[Exception]) -> Path:
    """The binary of the workspace's Cargo `package`, found as `find` does (`$env_var`,
    `target/release/<package>`, PATH); otherwise `error`, saying how to build it."""
    found = find(env_var, f"target/release/{package}", package)
    if found is None:
        raise error(
            f"{package} is not built: run `make setup` (it runs `cargo build --release -p "
            f"{package}`), or set {env_var} to the binary"
        )
    return found
