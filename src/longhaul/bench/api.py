"""`longhaul bench api`: the reservation service under load, over HTTP, then audited.

A real `longhaul serve` runs in a subprocess on a fresh database (a SQLite file by
default; any PostgreSQL URL, or `postgresql` for a throw-away cluster). Client threads
book random USN reservations, each also changing or cancelling some of its own:

1. saturated: back to back for a fixed time, for the most the service answers per
   second (its latency then only says how long the queue was: clients / throughput);
2. steady: at a fixed offered rate (200 requests/s by default) for a fixed time, each
   request sent at its scheduled instant and timed from it, for the latency at that load.

Afterwards every stored booking is checked by brute force for a link overbooked at any
instant (`longhaul.control.audit`).
"""

from __future__ import annotations

import gc
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from longhaul.control.audit import overbookings
from longhaul.control.drivers import LogDriver
from longhaul.control.service import Service
from longhaul.db import Database, migrate
from longhaul.db.throwaway import ThrowawayPostgres, free_port
from longhaul.topology import usn

_ENDS = ["ORNL", "CHICAGO", "SEATTLE", "SUNNYVALE", "ATLANTA", "ornl-e300:1/0", "ornl-e300:1/1",
         "ornl-e300:2/0", "chicago-e300", "sunnyvale-e300"]  # fmt: skip
_MBPS = (150, 500, 1000, 2400, 4800)


@dataclass(frozen=True)
class Plan:
    db: str = "sqlite"
    """`sqlite`, `postgresql` (a throw-away cluster) or a SQLAlchemy URL."""
    clients: int = 16
    workers: int = 1
    """Server processes (`longhaul serve --workers`)."""
    rate_per_s: float = 200.0
    """The steady load offered in the second phase, in requests per second."""
    duration_s: float = 15.0
    seed: int = 1


Progress = Callable[[str, int, int], None]


def run(plan: Plan, progress: Progress | None = None) -> dict[str, Any]:
    with (
        tempfile.TemporaryDirectory(prefix="longhaul-bench-") as folder,
        _database(plan.db, Path(folder)) as url,
    ):
        token = _user(url, Path(folder))
        with _server(url, Path(folder), plan.workers) as base:
            saturated = _load(base, token, plan, None, progress)
            steady = _load(base, token, plan, plan.rate_per_s, progress)
        db = Database(url)
        try:
            overbooked = overbookings(db, usn())
        finally:
            db.dispose()
    return {
        "db": "postgresql" if url.startswith("postgresql") else "sqlite",
        "clients": plan.clients,
        "workers": plan.workers,
        "offered_per_s": plan.rate_per_s,
        **_figures(steady),
        "saturated": _figures(saturated),
        "overbooked_link_instants": len(overbooked),
    }


def _figures(results: dict[str, Any]) -> dict[str, Any]:
    latencies = results["latencies_ms"]
    elapsed = results["elapsed_s"]
    outcome: Counter[str] = results["outcome"]
    return {
        "duration_s": round(elapsed, 2),
        "reservations_per_s": round(sum(outcome.values()) / elapsed, 1),
        "admitted_per_s": round(outcome["created"] / elapsed, 1),
        "p50_ms": round(_percentile(latencies, 50), 2),
        "p99_ms": round(_percentile(latencies, 99), 2),
        "mean_ms": round(statistics.fmean(latencies), 2) if latencies else 0.0,
        "requests": dict(sorted(outcome.items())),
    }


@contextmanager
def _database(db: str, folder: Path) -> Iterator[str]:
    if db == "sqlite":
        yield f"sqlite:///{folder}/longhaul.db"
    elif db == "postgresql":
        with ThrowawayPostgres(durable=True) as cluster:
            yield cluster.create_database("longhaul_bench")
    else:
        yield db


def _user(url: str, folder: Path) -> str:
    db = Database(url)
    try:
        migrate(db.engine)
        topology = usn()
        service = Service(db, topology, LogDriver(topology, folder / "driver.jsonl"))
        _, token = service.accounts.add(f"bench-{int(time.time())}")
        return token
    finally:
        db.dispose()


@contextmanager
def _server(url: str, folder: Path, workers: int) -> Iterator[str]:
    port = free_port()
    log = (folder / "server.log").open("wb")
    command = [sys.executable, "-m", "longhaul", "serve", "--home", str(folder), "--db", url,
               "--port", str(port), "--workers", str(workers)]  # fmt: skip
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                raise RuntimeError(
                    f"the server exited: {(folder / 'server.log').read_text()[-2000:]}"
                )
            try:
                if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("the server did not start within 60 s")
            time.sleep(0.1)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=20)
        log.close()


def _load(
    base: str, token: str, plan: Plan, rate_per_s: float | None, progress: Progress | None
) -> dict[str, Any]:
    """`plan.clients` threads for `plan.duration_s`: back to back (rate None), or together
    sending `rate_per_s`, each request at its scheduled instant. Latency is counted from
    that instant, so a server that falls behind is charged for the wait it causes."""
    load = _Load(base, token, plan, rate_per_s)
    threads = [threading.Thread(target=load.client, args=(k,)) for k in range(plan.clients)]
    what = f"{rate_per_s:g} requests/s" if rate_per_s else "as fast as it answers"
    # The clients' own garbage collection would stop every client thread at once (70-90 ms
    # here) and be charged to the server as latency; collect before and after instead.
    gc.collect()
    gc.disable()
    try:
        for thread in threads:
            thread.start()
        while any(t.is_alive() for t in threads):
            if progress and load.began:
                done = min(plan.duration_s, time.monotonic() - load.began)
                progress(f"loading the service: {what}", int(done), int(plan.duration_s))
            time.sleep(0.5)
    finally:
        gc.enable()
    # Until the last answer, not until the threads were seen to end (that is polled).
    elapsed_s = load.last_answer - load.began
    return {"latencies_ms": load.latencies, "outcome": load.outcome, "elapsed_s": elapsed_s}


class _Load:
    """One phase of load: what the client threads share."""

    def __init__(self, base: str, token: str, plan: Plan, rate_per_s: float | None) -> None:
        self.base, self.token, self.plan, self.rate_per_s = base, token, plan, rate_per_s
        self.gap_s = plan.clients / rate_per_s if rate_per_s else 0.0
        self.start_at = datetime.now(UTC).replace(microsecond=0) + timedelta(hours=1)
        self.latencies: list[float] = []
        self.outcome: Counter[str] = Counter()
        self.last_answer = 0.0
        self.began = self.stop = 0.0
        self._lock = threading.Lock()
        # The clock starts once every client has connected and been answered once: making
        # 16 clients takes a few hundred ms here, which is not the server's latency.
        self._ready = threading.Barrier(plan.clients, action=self._start_clock)

    def _start_clock(self) -> None:
        self.began = time.monotonic()
        self.stop = self.began + self.plan.duration_s

    def client(self, index: int) -> None:
        rng = random.Random(f"{self.plan.seed}-{self.rate_per_s}-{index}")
        mine: list[int] = []
        headers = {"Authorization": f"Bearer {self.token}"}
        with httpx.Client(base_url=self.base, headers=headers, timeout=60) as http:
            http.get("/healthz")
            self._ready.wait()
            due = self.began + index * self.gap_s / self.plan.clients
            while due < self.stop:
                if self.rate_per_s:
                    time.sleep(max(0.0, due - time.monotonic()))
                else:
                    due = time.monotonic()
                kind, method, path, body = _next_request(rng, mine, self.start_at)
                answer = http.request(method, path, json=body)
                answered = time.monotonic()
                if kind == "create" and answer.status_code == 201:
                    mine.append(answer.json()["id"])
                if kind == "cancel" and mine:
                    mine.remove(int(path.split("/")[-2]))
                with self._lock:
                    self.last_answer = max(self.last_answer, answered)
                    self.latencies.append((answered - due) * 1000)
                    self.outcome[_outcome(kind, answer.status_code)] += 1
                due += self.gap_s


def _next_request(
    rng: random.Random, mine: list[int], start_at: datetime
) -> tuple[str, str, str, dict[str, Any] | None]:
    roll = rng.random()
    if mine and roll < 0.15:
        rid = rng.choice(mine)
        return "cancel", "POST", f"/api/v1/reservations/{rid}/cancel", None
    if mine and roll < 0.35:
        rid = rng.choice(mine)
        return (
            "modify",
            "PATCH",
            f"/api/v1/reservations/{rid}",
            {"bandwidth_mbps": rng.choice(_MBPS)},
        )
    src, dst = rng.sample(_ENDS, 2)
    body = {
        "src": _end(src),
        "dst": _end(dst),
        "bandwidth_mbps": rng.choice(_MBPS),
        "start": (start_at + timedelta(minutes=rng.randrange(0, 24 * 60, 5))).isoformat(),
        "duration": rng.choice([900, 1800, 3600, 7200]),
    }
    return "create", "POST", "/api/v1/reservations", body


def _outcome(kind: str, status: int) -> str:
    if status >= 500:
        return "server_error"
    if kind == "create":
        return "created" if status == 201 else "refused" if status == 409 else f"create_{status}"
    if kind == "modify":
        return (
            "modified"
            if status == 200
            else "modify_refused"
            if status == 409
            else f"modify_{status}"
        )
    return "cancelled" if status == 200 else f"cancel_{status}"


def _end(text: str) -> dict[str, str]:
    node, sep, port = text.partition(":")
    return {"node": node, "port": port} if sep else {"node": node}


def _percentile(values: list[float], pct: float) -> float:
    if not values:
        return 0.0
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(pct) - 1]
