"""Where the `cli` driver finds each device and how it signs in: a TOML file.

```toml
host = "127.0.0.1"          # defaults for every device
port = 2222
username = "admin"          # or "{node}": the node's id
password = "..."
known_hosts = "known_hosts" # the devices' SSH host keys (relative to this file)
timeout_s = 10.0
retries = 2

[devices.ornl-e300]         # per device, any of the above
host = "198.51.100.7"
```

A device missing from `[devices]` uses the defaults. `longhaul devices serve` writes one
for the simulated devices it serves."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from longhaul.errors import InputError


@dataclass(frozen=True)
class Device:
    node: str
    host: str
    port: int
    username: str
    password: str
    known_hosts: Path | None
    timeout_s: float
    retries: int


@dataclass(frozen=True)
class Inventory:
    path: Path
    defaults: dict[str, Any]
    overrides: dict[str, dict[str, Any]]

    @classmethod
    def load(cls, path: Path) -> Inventory:
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise InputError("--devices", f"{path}: {exc}") from exc
        overrides = data.pop("devices", {})
        for key in ("host", "password"):
            if key not in data and not all(key in o for o in overrides.values()):
                raise InputError("--devices", f"{path}: say the devices' {key}")
        return cls(path, data, overrides)

    def device(self, node: str) -> Device:
        merged = {**self.defaults, **self.overrides.get(node, {})}
        known = merged.get("known_hosts")
        return Device(
            node=node,
            host=str(merged["host"]),
            port=int(merged.get("port", 22)),
            username=str(merged.get("username", "{node}")).replace("{node}", node),
            password=str(merged["password"]),
            known_hosts=None if known is None else (self.path.parent / str(known)),
            timeout_s=float(merged.get("timeout_s", 10.0)),
            retries=int(merged.get("retries", 2)),
        )
