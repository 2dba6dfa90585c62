"""ns-3 as the yardstick of `longhaul sim validate`: `ns3/bulk.cc` (n bulk TCP flows
through one bottleneck) built on demand against Debian's libns3-dev, run per case, its
answers kept in a cache so a second validation does not pay for them again.

ns-3 runs several times slower than real time even at 1 Gb/s (37.8 s of wall time for
6 simulated seconds of one cubic flow at 1 Gb/s here), which is why longhaul has its own
simulator, and why this module stays small and out of the unit tests.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from longhaul.db import data_dir

SOURCE = Path(__file__).parent / "ns3" / "bulk.cc"
LIBRARIES = (
    "core",
    "network",
    "internet",
    "point-to-point",
    "applications",
    "traffic-control",
    "bridge",
    "stats",
)
TYPES = {
    "reno": "TcpLinuxReno",
    "bic": "TcpBic",
    "cubic": "TcpCubic",
    "htcp": "TcpHtcp",
    "highspeed": "TcpHighSpeed",
    "scalable": "TcpScalable",
    "vegas": "TcpVegas",
}
"""longhaul's congestion-control names and ns-3's TCP types."""


TIMEOUT_S = 3 * 3600
"""Wall-clock limit of one ns-3 case."""


class Ns3UnavailableError(RuntimeError):
    """ns-3 cannot be built or run here; the message says how to fix it."""


@dataclass(frozen=True)
class Case:
    """One shared scenario: n bulk flows over one bottleneck."""

    cc: str
    streams: int
    rate_bps: int
    rtt_ms: float
    loss: float
    queue_bytes: int
    window_bytes: int
    """The socket buffers, which in ns-3 cap the window."""
    mss_bytes: int
    duration_s: float
    warmup_s: float
    seed: int = 1

    def arguments(self) -> list[str]:
        return [
            f"--cc={TYPES[self.cc]}",
            f"--streams={self.streams}",
            f"--rateMbps={self.rate_bps / 1e6:g}",
            f"--rttMs={self.rtt_ms:g}",
            f"--loss={self.loss:g}",
            f"--queueBytes={self.queue_bytes}",
            f"--bufferBytes={self.window_bytes}",
            f"--mss={self.mss_bytes}",
            f"--durationS={self.duration_s:g}",
            f"--warmupS={self.warmup_s:g}",
            f"--seed={self.seed}",
        ]

    def key(self) -> str:
        text = json.dumps(asdict(self), sort_keys=True) + _source_digest()
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def binary() -> Path:
    """The built program, compiling it first if the source changed since."""
    target = data_dir() / "ns3" / f"bulk-{_source_digest()[:12]}"
    if target.is_file():
        return target
    compiler = shutil.which("g++")
    if compiler is None or not Path("/usr/include/ns3/core-module.h").is_file():
        raise Ns3UnavailableError(
            "ns-3 is not installed: apt-get install libns3-dev (make setup does, as root)"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    argv = [
        compiler,
        "-O2",
        "-std=c++17",
        "-o",
        str(target),
        str(SOURCE),
        *(f"-lns3-{name}" for name in LIBRARIES),
    ]
    built = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
    if built.returncode != 0:
        raise Ns3UnavailableError(f"building {SOURCE.name} failed: {built.stderr.strip()[-500:]}")
    return target


def run(case: Case) -> dict[str, Any]:
    """ns-3's answer for a case (from the cache when it has one): goodput_bps and wall_s,
    or `error` when ns-3 failed on it."""
    cached = data_dir() / "ns3" / "results" / f"{case.key()}.json"
    if cached.is_file():
        answer: dict[str, Any] = json.loads(cached.read_text())
        return answer
    program = binary()
    # ns-3's TcpTxBuffer::NextSeg walks the whole sent list for every segment it sends,
    # so a case costs about the square of its window: a 163 ms case runs for many minutes.
    timeout_s = TIMEOUT_S
    try:
        done = subprocess.run(
            [str(program), *case.arguments()],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        # Not cached: a faster machine may finish it.
        return {"error": f"ns-3 did not finish within {timeout_s / 60:g} minutes"}
    if done.returncode == 0:
        answer = json.loads(done.stdout.strip().splitlines()[-1])
    else:
        # ns-3.37 itself dies on some of these cases (a null dereference in
        # TcpRateLinux::SkbSent after heavy loss in slow start): the case has no yardstick.
        reason = done.stderr.strip()[-300:] or f"exit status {done.returncode}"
        answer = {"error": f"ns-3 crashed: {reason}"}
    cached.parent.mkdir(parents=True, exist_ok=True)
    cached.write_text(json.dumps(answer))
    return answer


def _source_digest() -> str:
    return hashlib.sha256(SOURCE.read_bytes()).hexdigest()
