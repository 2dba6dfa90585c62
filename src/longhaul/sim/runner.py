"""Running `longhaul-sim`: one scenario in a subprocess, many side by side in a local
pool of processes or on a Dask cluster (`tcp://host:8786`, or a LocalCluster)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any, TypeVar

from longhaul import binaries
from longhaul.errors import InputError

T = TypeVar("T")

TIMEOUT_S = 3600.0
"""A scenario that runs longer than this (wall clock) is stopped."""


class SimUnavailableError(RuntimeError):
    """longhaul-sim is not built; the message says how to build it."""


def binary() -> Path:
    """The simulator: `$LONGHAUL_SIM`, the workspace's release build, or one on PATH."""
    return binaries.cargo_built("LONGHAUL_SIM", "longhaul-sim", SimUnavailableError)


def missing() -> str | None:
    """None when the simulator is built; otherwise how to build it (a campaign tool's
    `missing`)."""
    try:
        binary()
    except SimUnavailableError as exc:
        return str(exc)
    return None


def run_scenario(scenario: dict[str, Any], threads: int = 1) -> dict[str, Any]:
    """One scenario's results (iperf3-shaped JSON plus counters and perf). With two
    `threads` the simulator runs a long path's two sides side by side, with the same
    results: for one simulation alone on the machine, never for several side by side
    (two threads that wait on each other slow down badly when they share a core)."""
    return _simulate("run", scenario, ["--threads", str(threads)])


def run_network(scenario: dict[str, Any]) -> dict[str, Any]:
    """One network scenario's results: each flow group's goodput, counters and perf."""
    return _simulate("network", scenario)


def run_ib(args: Sequence[str]) -> dict[str, Any]:
    """One InfiniBand perftest-shaped run, `longhaul-sim ib ARGS --json`."""
    return _finish(
        subprocess.run(
            [str(binary()), "ib", *args, "--json"],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            check=False,
        ),
        "ib",
    )


def run_rdma(args: Sequence[str]) -> dict[str, Any]:
    """The RDMA LAN models, `longhaul-sim rdma ARGS`: one object per interconnect."""
    return _finish(
        subprocess.run(
            [str(binary()), "rdma", *args],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            check=False,
        ),
        "rdma",
    )


def _simulate(
    command: str, scenario: dict[str, Any], options: Sequence[str] = ()
) -> dict[str, Any]:
    done = subprocess.run(
        [str(binary()), command, "-", *options],
        input=json.dumps(scenario),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    return _finish(done, "scenario")


def _finish(done: subprocess.CompletedProcess[str], what: str) -> dict[str, Any]:
    if done.returncode == 2:
        raise InputError(what, done.stderr.strip().removeprefix("longhaul-sim: "))
    if done.returncode != 0:
        raise RuntimeError(f"longhaul-sim failed: {done.stderr.strip()[-500:]}")
    report: dict[str, Any] = json.loads(done.stdout)
    return report


Done = Callable[[int, dict[str, Any]], None]
"""Called as each scenario finishes: its index in the input and its results."""


def run_many(
    scenarios: Sequence[dict[str, Any]],
    workers: int | None = None,
    scheduler: str | None = None,
    on_done: Done | None = None,
) -> list[dict[str, Any]]:
    """Every scenario's results, in input order. Locally, `workers` simulators run side
    by side (default: one per core); with `scheduler` (`tcp://host:8786`, or `local`
    for a LocalCluster), on Dask workers that have longhaul installed."""
    results: list[dict[str, Any] | None] = [None] * len(scenarios)
    stream = _on_dask(scenarios, scheduler) if scheduler else _locally(scenarios, workers)
    for index, report in stream:
        results[index] = report
        if on_done:
            on_done(index, report)
    return [r for r in results if r is not None]


def side_by_side(
    simulate: Callable[[T], dict[str, Any]], items: Sequence[T], workers: int | None
) -> Iterator[tuple[int, dict[str, Any]]]:
    """(index, result) of `simulate` on each item as each finishes, `workers` at a time
    (default: one per core). Each simulation is its own process already; threads only
    wait on them."""
    with ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 1) as pool:
        futures = {pool.submit(simulate, item): i for i, item in enumerate(items)}
        for future in as_completed(futures):
            yield futures[future], future.result()


def _locally(
    scenarios: Sequence[dict[str, Any]], workers: int | None
) -> Iterator[tuple[int, dict[str, Any]]]:
    return side_by_side(run_scenario, scenarios, workers)


def _on_dask(
    scenarios: Sequence[dict[str, Any]], scheduler: str
) -> Iterator[tuple[int, dict[str, Any]]]:
    from dask.distributed import Client, LocalCluster, as_completed  # noqa: PLC0415

    cluster = LocalCluster(processes=True, threads_per_worker=1) if scheduler == "local" else None
    client = Client(cluster if cluster is not None else scheduler)
    try:
        futures = client.map(run_scenario, list(scenarios), pure=False)
        positions = {future.key: i for i, future in enumerate(futures)}
        for future in as_completed(futures):
            yield positions[future.key], future.result()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
