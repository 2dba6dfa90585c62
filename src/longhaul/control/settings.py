"""Where the control plane keeps its data and how it is reached: one value, read once."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from longhaul.db.location import data_dir, database_url

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8642


@dataclass(frozen=True)
class Settings:
    """Everything `longhaul serve` needs."""

    db_url: str = field(default_factory=database_url)
    topology_file: Path | None = None
    """The topology to reserve on; the shipped USN topology when None."""
    driver: str = "log"
    home: Path = field(default_factory=data_dir)
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    tls: bool = False
    client_ca: Path | None = None
    """With TLS, ask clients for a certificate signed by this CA and map its subject to a user."""
    job_interval_s: float = 5.0
    """The longest the job runner sleeps before looking for due work again."""
    workers: int = 1
    """Server processes. More use more cores; one of them runs the jobs."""
    threads: int = 4
    """Threads per process that run requests (see api.app.DEFAULT_THREADS)."""
    open_metrics: bool = False
    """Serve /metrics to anyone (a Prometheus on the same host); else admins and metrics readers."""
    rate_limit_per_s: float | None = None
    """Each user's requests per second per process (bursts of twice it); None: unlimited."""
    policy_file: Path | None = None
    """Each role's and user's limits (TOML, see control.policy); the defaults when None."""
    nsi_network: str | None = None
    """This domain's NSI network identifier (`urn:ogf:network:...`); None: one made of the
    topology's name (`nsi.provider.default_network`)."""
    nsi_peers_file: Path | None = None
    """The domains this one peers with and how to reach them (TOML, see
    `nsi.aggregator.load_peering`); None: this domain alone."""
    nsi_nsa_id: str | None = None
    """This provider's NSA identifier (`urn:ogf:network:...`), as its Faults and what it
    sends unasked name it; None: the network identifier and `:nsa`."""
    nsi_hold_s: float = 120.0
    """How long an NSI reserve holds its bandwidth uncommitted (`nsi.provider.DEFAULT_HOLD`)."""
    devices_file: Path | None = None
    """Where the `cli` driver finds the switches and signs in (TOML, see
    control.devices.inventory); `longhaul devices serve` writes one."""
    nsi_reply_to: tuple[str, ...] = ()
    """Where NSI SOAP requesters may have confirmations sent (`nsi.reply_to`); none: nowhere."""
    access_log: bool = False
    """Log every request (uvicorn's access log): 5 % of what a saturated process does."""

    def to_json(self) -> str:
        return json.dumps(
            {k: str(v) if isinstance(v, Path) else v for k, v in asdict(self).items()}
        )

    @classmethod
    def from_json(cls, text: str) -> Settings:
        data = json.loads(text)
        for key in (
            "topology_file",
            "home",
            "client_ca",
            "policy_file",
            "devices_file",
            "nsi_peers_file",
        ):
            if data.get(key) is not None:
                data[key] = Path(data[key])
        data["nsi_reply_to"] = tuple(data.get("nsi_reply_to", ()))
        return cls(**data)

    @property
    def driver_log(self) -> Path:
        return self.home / "driver-log.jsonl"

    @property
    def tls_dir(self) -> Path:
        return self.home / "tls"
