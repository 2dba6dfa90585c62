"""`longhaul serve`: the service, its job runner and its web app behind uvicorn."""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import os
import shutil
import ssl
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import uvicorn
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from fastapi import FastAPI
from uvicorn.protocols.http.h11_impl import H11Protocol

from longhaul.control import drivers
from longhaul.control.api.app import create_app
from longhaul.control.jobs import JobRunner
from longhaul.control.nsi.aggregator import load_peering
from longhaul.control.nsi.provider import Provider, default_network
from longhaul.control.nsi.reply_to import ReplyTargets
from longhaul.control.policy import Policy
from longhaul.control.service import Service
from longhaul.control.settings import Settings
from longhaul.db import Database, migrate
from longhaul.topology import load_topology, usn

log = logging.getLogger(__name__)


_SETTINGS_ENV = "LONGHAUL_SERVE_SETTINGS"


def build(settings: Settings) -> tuple[Service, JobRunner, FastAPI]:
    """The database (migrated), the service on its topology and driver, the runner, the app."""
    db = Database(settings.db_url)
    migrate(db.engine)
    topology = usn() if settings.topology_file is None else load_topology(settings.topology_file)
    driver = drivers.create(settings.driver, topology, settings)
    limits = None if settings.policy_file is None else Policy.load(settings.policy_file)
    service = Service(db, topology, driver, policy=limits)
    leader = settings.home / "jobs.lock" if settings.workers > 1 else None
    runner = JobRunner(service, max_sleep_s=settings.job_interval_s, leader_lock=leader)
    network = settings.nsi_network or default_network(topology)
    reply_to = ReplyTargets.of(settings.nsi_reply_to)
    hold = timedelta(seconds=settings.nsi_hold_s)
    provider = Provider(service, network, hold, reply_to, settings.nsi_nsa_id)
    app = create_app(
        service,
        runner,
        settings.threads,
        open_metrics=settings.open_metrics,
        rate_limit_per_s=settings.rate_limit_per_s,
        nsi=provider,
        nsi_peering=None
        if settings.nsi_peers_file is None
        else load_peering(settings.nsi_peers_file),
    )
    return service, runner, app


def app_from_environment() -> FastAPI:
    """The app of one worker process, from the settings `serve` put in the environment."""
    _, _, app = build(Settings.from_json(os.environ[_SETTINGS_ENV]))
    return app


def serve(settings: Settings) -> None:
    options: dict[str, Any] = {
        "host": settings.host,
        "port": settings.port,
        "log_level": "info",
        "access_log": settings.access_log,
    }
    if settings.tls:
        cert, key = ensure_certificate(settings.tls_dir, settings.host)
        options |= {"ssl_certfile": str(cert), "ssl_keyfile": str(key)}
        if settings.client_ca is not None:
            options |= {
                "ssl_ca_certs": str(settings.client_ca),
                "ssl_cert_reqs": ssl.CERT_OPTIONAL,
                "http": ClientCertH11Protocol,
            }
    scheme = "https" if settings.tls else "http"
    log.info(
        "longhaul on %s://%s:%s (database %s)",
        scheme,
        settings.host,
        settings.port,
        settings.db_url,
    )
    if settings.workers == 1:
        _, _, app = build(settings)
        uvicorn.run(app, **options)
        return
    db = Database(settings.db_url)
    migrate(db.engine)  # once, before the workers start
    db.dispose()
    # Counters of all workers add up in files here (prometheus_client's multiprocess mode);
    # the variable must be set before any worker imports prometheus_client.
    metrics = settings.home / "metrics"
    shutil.rmtree(metrics, ignore_errors=True)
    metrics.mkdir(parents=True)
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(metrics)
    os.environ[_SETTINGS_ENV] = settings.to_json()
    target = "longhaul.control.server:app_from_environment"
    uvicorn.run(target, factory=True, workers=settings.workers, **options)


def ensure_certificate(folder: Path, host: str) -> tuple[Path, Path]:
    """A self-signed certificate for `host`, localhost and 127.0.0.1, made on first use."""
    cert_path, key_path = folder / "server.crt", folder / "server.key"
    if cert_path.exists() and key_path.exists():
        return cert_path, key_path
    folder.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"longhaul on {host}")])
    alt_names: list[x509.GeneralName] = [
        x509.DNSName("localhost"),
        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
    ]
    try:
        alt_names.append(x509.IPAddress(ipaddress.ip_address(host)))
    except ValueError:
        alt_names.append(x509.DNSName(host))
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(days=825))
        .add_extension(x509.SubjectAlternativeName(list(dict.fromkeys(alt_names))), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    key_path.chmod(0o600)
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return cert_path, key_path


class ClientCertH11Protocol(H11Protocol):
    """Hands a verified client certificate to the app as the ASGI TLS extension's
    `client_cert_chain` (leaf only; uvicorn does not provide the extension yet)."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        ssl_object = transport.get_extra_info("ssl_object")
        der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
        if not der:
            return
        chain = [ssl.DER_cert_to_PEM_cert(der)]
        app = self.app

        async def with_certificate(scope: Any, receive: Any, send: Any) -> None:
            scope.setdefault("extensions", {})["tls"] = {"client_cert_chain": chain}
            await app(scope, receive, send)

        self.app = with_certificate
