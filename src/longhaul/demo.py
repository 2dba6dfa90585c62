"""`longhaul demo`: the USN TCP study end to end, as a network engineer would run it.

The embedded control plane starts in this process (SQLite, the USN topology, the emulated
driver) behind its HTTP API. For each of the four USN loop-backs in turn, the demo asks
the API for the highest bandwidth the loop has free and books it as soon as possible
(earliest start: the loops share the ORNL cross-connects, so only one fits at a time);
the job runner provisions it, the emulated driver builds the circuit, the quick campaign
runs on it (with UDP cross-traffic on the 1,400-mile loop), and the reservation is
cancelled, which tears the circuit down. Then the simulator runs the 2008 study (BIC and
HTCP, which this kernel lacks, on the USN type I host preset) on the same four loops,
after the emulated part so that it never shares the cores with the emulator, and USN's
InfiniBand RDMA profile; beside the report, the RDMA LAN models' own (iWARP, InfiniBand
and Myri-10G side by side, `longhaul sim rdma`). The report
shows emulated, simulated and published side by side, on one figure and in one table,
with each simulated profile compared with the published one (k-segmented fits, the
difference and its bootstrap interval). The testbed is removed and the report's path
printed.

Everything lives under the data directory's `demo/` (database, results, report, testbed
record) with the namespace prefix `lhd-`, so a testbed or a server that is up is left
alone.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import uvicorn

from longhaul.control.client import Client, ClientConfig
from longhaul.control.server import build
from longhaul.control.settings import Settings
from longhaul.db import Database, data_dir, migrate
from longhaul.db.throwaway import free_port
from longhaul.measure import booked
from longhaul.measure import campaign as campaigns
from longhaul.measure.runner import Runner, check_tools
from longhaul.measure.store import ResultsStore
from longhaul.testbed import Testbed, netns

QUICK = Path(__file__).parent / "data" / "campaigns" / "usn-tcp-quick.toml"
SIMULATED = Path(__file__).parent / "data" / "campaigns" / "usn-tcp-sim-quick.toml"
SIMULATED_IB = Path(__file__).parent / "data" / "campaigns" / "usn-ib-rdma-sim.toml"
RDMA_LAN_REPORT = "rdma-lan"
"""Beside the report: the RDMA LAN models' report (`longhaul sim rdma`)."""
SIMULATED_ESTIMATES_S = (20.0, 6.0)
"""What the simulated parts take, for the progress bar: the TCP study's 96 runs took
17 s on a 2-core VM (`longhaul campaign run usn-tcp-sim-quick.toml`), the InfiniBand
profile's 92 runs 6 s."""
SIMULATED_ESTIMATE_S = sum(SIMULATED_ESTIMATES_S)


class DemoUnavailableError(RuntimeError):
    """This machine cannot run the demo; the message says what is missing."""


@dataclass(frozen=True)
class Phase:
    """What a progress display shows: the phase, and how far the demo is in all."""

    what: str
    done_s: float
    total_s: float


Progress = Callable[[Phase], None]


def home() -> Path:
    return data_dir() / "demo"


def preflight() -> None:
    """Stop at once, saying what cannot run and why, unless the testbed can run here."""
    try:
        netns.require_privileges()
        from longhaul.sim import runner as sim_runner  # noqa: PLC0415
        from longhaul.testbed import emulator  # noqa: PLC0415

        emulator.binary()
        sim_runner.binary()
        check_tools(campaigns.parse(QUICK.read_text(), source=str(QUICK)))
    except Exception as exc:
        raise DemoUnavailableError(
            f"the demo measures real TCP through the emulated testbed, and cannot here: "
            f"{exc}. What needs no root still runs: `longhaul analyze reference`, "
            "`longhaul slots`, `longhaul serve`."
        ) from exc


def run(progress: Progress | None = None) -> Path:
    """The whole study; the report's path."""
    preflight()
    # What a demo (or any testbed) killed earlier left goes first: its record is here.
    Testbed().sweep()
    folder = home()
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    os.environ["LONGHAUL_TESTBED_PREFIX"] = "lhd-"
    os.environ["LONGHAUL_TESTBED_DIR"] = str(folder / "testbed")
    spec = campaigns.parse(QUICK.read_text(), source=str(QUICK))
    simulated = campaigns.parse(SIMULATED.read_text(), source=str(SIMULATED))
    infiniband = campaigns.parse(SIMULATED_IB.read_text(), source=str(SIMULATED_IB))
    testbed = Testbed()
    say = progress or (lambda _phase: None)
    try:
        with _control_plane(folder) as client:
            store = ResultsStore(_database(folder))
            runner = Runner(store, testbed, folder / "results")
            measured_s = _study(spec, client, testbed, runner, say, SIMULATED_ESTIMATE_S)
        base_s = measured_s
        for part, estimate_s in zip((simulated, infiniband), SIMULATED_ESTIMATES_S, strict=True):
            total_s = measured_s + SIMULATED_ESTIMATE_S
            _simulate(part, testbed, store, folder, _offset(say, base_s, total_s), estimate_s)
            base_s += estimate_s
        say(Phase("writing the report", 1, 1))
        from longhaul.report import write_report  # noqa: PLC0415
        from longhaul.report.rdma import write_rdma_report  # noqa: PLC0415

        names = (spec.name, simulated.name, infiniband.name)
        frame = pd.concat([store.frame(name) for name in names])
        report = write_report(frame, folder / "report", " + ".join(names))
        say(Phase("iWARP, InfiniBand and Myri-10G on a LAN (simulated)", 1, 1))
        write_rdma_report(report.parent / RDMA_LAN_REPORT)
        return report
    finally:
        say(Phase("removing the testbed", 1, 1))
        testbed.down(everything=True)


def _simulate(
    spec: campaigns.Campaign,
    testbed: Testbed,
    store: ResultsStore,
    folder: Path,
    say: Callable[[str, float], None],
    estimate_s: float,
) -> None:
    """A simulated study, stored beside the emulated one."""
    from longhaul.measure.runner import plan_connections  # noqa: PLC0415
    from longhaul.sim import campaign as simulated  # noqa: PLC0415

    planned = campaigns.runs(spec, plan_connections(spec, testbed))

    def progress(what: str, done: int, total: int) -> None:
        say(f"simulating: {what}", estimate_s * done / max(total, 1))

    simulated.run_campaign(
        spec, planned, testbed.topology, store, folder / "results", progress=progress
    )


def _study(
    spec: campaigns.Campaign,
    client: Client,
    testbed: Testbed,
    runner: Runner,
    say: Progress,
    after_s: float,
) -> float:
    """The emulated study, loop by loop; the seconds it was estimated at (the progress
    bar's total adds `after_s` for what comes next)."""
    measured = booked.estimate_s(spec, testbed)
    purpose = "longhaul demo: the quick USN TCP study"
    booked.run(spec, client, testbed, runner, _offset(say, 0, measured + after_s), purpose)
    return measured


def _offset(say: Progress, base_s: float, total_s: float) -> Callable[[str, float], None]:
    def report(what: str, at_s: float) -> None:
        say(Phase(what, base_s + at_s, total_s))

    return report


def _database(folder: Path) -> Database:
    db = Database(f"sqlite:///{folder}/longhaul.db")
    migrate(db.engine)
    return db


@contextmanager
def _control_plane(folder: Path) -> Iterator[Client]:
    """`longhaul serve --driver emulated` in this process, and a client signed in to it."""
    settings = Settings(
        db_url=f"sqlite:///{folder}/longhaul.db",
        driver="emulated",
        home=folder,
        port=free_port(),
        job_interval_s=1.0,
    )
    service, _runner, app = build(settings)
    _user, token = service.accounts.add("demo", admin=True)
    server = uvicorn.Server(
        uvicorn.Config(app, host=settings.host, port=settings.port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, name="longhaul-demo-server", daemon=True)
    thread.start()
    url = f"http://{settings.host}:{settings.port}"
    with Client(ClientConfig(server=url, token=token)) as client:
        booked.wait_for(lambda: _answers(client), timeout_s=30)
        try:
            yield client
        finally:
            server.should_exit = True
            thread.join(timeout=15)


def _answers(client: Client) -> bool:
    try:
        client.reservations(limit=1)
    except Exception:
        return False
    return True
