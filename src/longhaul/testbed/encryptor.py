"""Link encryptors on a circuit: `longhaul-wan` seals every frame entering the line with
AES-256-GCM and opens it where it leaves (ESP's format in tunnel mode, 48 bytes a
segment; `crates/wan/src/encryptor.rs`), as the 10 Gb/s encryption devices USN tested sat
in the path. Put on and taken off a running circuit over its control socket; the hosts'
interface MTU is what "MTU alignment" changes (8,950 bytes: a sealed packet then fits a
9,000-byte line).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from longhaul.testbed import emulator, netns
from longhaul.testbed.state import CircuitRecord

SEGMENT_OVERHEAD_BYTES = 48
"""What sealing adds to each IP packet on the line: outer IPv4 header 20, SPI 4, sequence
number 8, tag 16."""
LINE_MTU_BYTES = 9000
"""A jumbo-frame line, as USN's 10GigE and OC-192 path carried."""
ALIGNED_MTU_BYTES = 8950
"""The hosts' MTU USN set for the encrypted connection (its slides: 'IP segment/datagram
size set to 8950')."""
OVERSIZE = ("fragment", "drop")


class EncryptorError(Exception):
    """The emulator refused the encryptor (its message says why)."""


@dataclass(frozen=True)
class Encryptor:
    """How the encryptors at both ends are set up (the same at both)."""

    mtu_bytes: int = LINE_MTU_BYTES
    """The line's MTU: a sealed packet longer than this is fragmented or dropped."""
    oversize: str = "fragment"
    """`fragment` (a second frame for what does not fit) or `drop` (a path-MTU black hole,
    as a switch that drops frames longer than its ports take)."""
    rekey_interval_s: float = 600.0
    replay_window: int = 1024
    tamper: float = 0.0
    """Fault for tests: the probability that a frame has a bit flipped on the line."""

    def config(self, secret: bytes) -> dict[str, Any]:
        """The emulator's `encrypt` request body."""
        return {
            "secret": secret.hex(),
            "mtu_bytes": self.mtu_bytes,
            "oversize": self.oversize,
            "rekey_interval_ns": round(self.rekey_interval_s * 1e9),
            "replay_window": self.replay_window,
            "tamper": self.tamper,
        }


def new_secret() -> bytes:
    """A secret for both ends: they live in the one emulator, so it never leaves it."""
    return secrets.token_bytes(32)


def read_secret(path: Path) -> bytes:
    """A configured secret: the file's bytes (32 or more; e.g. `head -c 32 /dev/urandom`)."""
    secret = path.read_bytes()
    if len(secret) < 32:
        raise EncryptorError(f"{path} holds {len(secret)} bytes; a secret needs at least 32")
    return secret


def encrypt(record: CircuitRecord, encryptor: Encryptor, secret: bytes) -> None:
    """Put encryptors on the circuit's line (what is on the line then is dropped)."""
    _request(record, {"op": "encrypt", "config": encryptor.config(secret)})


def decrypt(record: CircuitRecord) -> None:
    """Take them off."""
    _request(record, {"op": "encrypt", "config": None})


def counters(record: CircuitRecord) -> dict[str, Any] | None:
    """What the encryptors did in each direction (None: the line is not encrypted)."""
    stats = emulator.request(Path(record.control), {"op": "stats"})
    found: dict[str, Any] | None = stats.get("encryptor")
    return found


def host_mtu(record: CircuitRecord) -> int:
    return netns.mtu_of(record.src_ns, record.src_dev)


def set_host_mtu(record: CircuitRecord, mtu_bytes: int) -> None:
    """Both hosts' interface MTU on the circuit (the alignment USN made on its switch)."""
    for name, device in ((record.src_ns, record.src_dev), (record.dst_ns, record.dst_dev)):
        netns.set_mtu(name, device, mtu_bytes)


def _request(record: CircuitRecord, body: dict[str, Any]) -> None:
    try:
        emulator.request(Path(record.control), body)
    except netns.TestbedError as exc:
        raise EncryptorError(str(exc)) from exc
