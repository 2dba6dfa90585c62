"""ns-3 as the yardstick of `longhaul sim validate`: `ns3/bulk.cc` (n bulk TCP flows
through one bottleneck) built on demand against Debian's libns3-dev, run per case, its
answers kept in a cache so a second validation does not pay for them again.

ns-3 runs several times slower than real time even at 1 Gb/s (37.8 s of wall time for
6 simulated seconds of one cubic flow at 1 Gb/s here), which is why longhaul has its own
simulator, and why this module stays small and out of the unit tests. ns-3's answers as
measured on the project's machine ship in `data/ns3/answers.json` (`python -m
longhaul.sim.validation` writes it from the cache): a fresh machine compares against them
without ns-3, and `longhaul sim validate --rerun-ns3` measures them again.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import date
from importlib.resources import files
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

RECORDED = files("longhaul") / "data" / "ns3" / "answers.json"
"""ns-3's answers as measured on the project's machine, keyed like the cache: a change to
bulk.cc or to a case changes its key, and that case runs ns-3 again."""


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
            "ns-3 is not installed: apt-get install libns3-dev "
            "(scripts/setup.sh --ns3 does, as root)"
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


def known(case: Case, recorded: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """ns-3's answer for a case without running ns-3: this machine's cache, else the
    recorded answers (read here unless given); `from` says which."""
    cached = _cached(case)
    if cached.is_file():
        return {**json.loads(cached.read_text()), "from": "cache"}
    recorded = recorded_answers() if recorded is None else recorded
    if case.key() in recorded["answers"]:
        entry = recorded["answers"][case.key()]
        answer: dict[str, Any] = entry["answer"]
        measured = entry.get("measured", recorded["measured"])
        return {**answer, "from": f"recorded {measured} ({recorded['ns3']})"}
    return None


def run(case: Case) -> dict[str, Any]:
    """Run ns-3 on a case and cache its answer: goodput_bps and wall_s, or `error` when
    ns-3 failed on it."""
    answer = _execute(case)
    if not answer.pop("timed_out", False):  # a faster machine may finish it: not cached
        cached = _cached(case)
        cached.parent.mkdir(parents=True, exist_ok=True)
        cached.write_text(json.dumps(answer))
    return {**answer, "from": "run"}


def timed(case: Case) -> dict[str, Any]:
    """Run ns-3 on a case now, cache or no cache: its answer with the wall-clock seconds
    its event loop took (`wall_s`), for timing ns-3 beside longhaul-sim."""
    answer = _execute(case)
    if "error" in answer:
        raise Ns3UnavailableError(f"ns-3 failed on the timed case: {answer['error']}")
    return answer


def _execute(case: Case) -> dict[str, Any]:
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
        return {
            "error": f"ns-3 did not finish within {timeout_s / 60:g} minutes",
            "timed_out": True,
        }
    answer: dict[str, Any]
    if done.returncode == 0:
        answer = json.loads(done.stdout.strip().splitlines()[-1])
    else:
        # Should ns-3 die on a case (ns-3.37 did, in TcpRateLinux::SkbSent, until bulk.cc
        # wrote whole segments), the case has no yardstick, and says so.
        reason = done.stderr.strip()[-300:] or f"exit status {done.returncode}"
        answer = {"error": f"ns-3 crashed: {reason}"}
    return answer


def recorded_answers() -> dict[str, Any]:
    if not RECORDED.is_file():
        return {"answers": {}}
    found: dict[str, Any] = json.loads(RECORDED.read_text())
    return found


def record(cases: Iterable[Case], target: Path) -> int:
    """Write the answers of the cases to `target` (the shipped answers file): this
    machine's cached ones, measured today, else those `target` holds already, each with
    the day it was measured; returns how many cases had neither."""
    before = json.loads(target.read_text()) if target.is_file() else {"answers": {}}
    answers, missing = {}, 0
    for case in cases:
        cached = _cached(case)
        if cached.is_file():
            answers[case.key()] = {
                "case": asdict(case),
                "answer": json.loads(cached.read_text()),
                "measured": date.today().isoformat(),
            }
        elif case.key() in before["answers"]:
            kept = before["answers"][case.key()]
            answers[case.key()] = {"measured": before.get("measured"), **kept}
        else:
            missing += 1
    days = sorted({entry["measured"] for entry in answers.values() if entry.get("measured")})
    document = {
        "ns3": version(),
        "measured": days[-1] if days else date.today().isoformat(),
        "program": SOURCE.name,
        "answers": answers,
    }
    target.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n")
    return missing


def version() -> str:
    """The installed ns-3 (Debian's libns3-dev), as in `ns-3.37`."""
    shown = subprocess.run(
        ["dpkg-query", "-W", "-f=${Version}", "libns3-dev"],
        capture_output=True,
        text=True,
        check=False,
    )
    return f"ns-{shown.stdout.split('-')[0]}" if shown.returncode == 0 else "ns-3 (unknown)"


def _cached(case: Case) -> Path:
    return data_dir() / "ns3" / "results" / f"{case.key()}.json"


def _source_digest() -> str:
    return hashlib.sha256(SOURCE.read_bytes()).hexdigest()
