"""A client of the longhaul API, for the CLI (and for scripts)."""

from __future__ import annotations

import os
import ssl
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import platformdirs
import tomli_w

from longhaul.control.settings import DEFAULT_HOST, DEFAULT_PORT


class ApiError(RuntimeError):
    """The server said no; `problem` is its RFC 9457 answer."""

    def __init__(self, status: int, problem: dict[str, Any]) -> None:
        self.status = status
        self.problem = problem
        super().__init__(str(problem.get("detail") or problem.get("title") or f"HTTP {status}"))


class UnreachableError(RuntimeError):
    """No server answered."""


@dataclass(frozen=True)
class ClientConfig:
    server: str = f"http://{DEFAULT_HOST}:{DEFAULT_PORT}"
    token: str | None = None
    ca: str | None = None
    """A CA file (or the server's self-signed certificate) to verify HTTPS with."""
    cert: str | None = None
    key: str | None = None
    """A client certificate and its key, to sign in by X.509 instead of a token."""


def config_file() -> Path:
    return Path(platformdirs.user_config_dir("longhaul")) / "client.toml"


def load_config() -> ClientConfig:
    """The config file, overridden by $LONGHAUL_SERVER, _TOKEN, _CA, _CERT and _KEY."""
    stored: dict[str, Any] = {}
    if config_file().exists():
        stored = tomllib.loads(config_file().read_text(encoding="utf-8"))
    base = ClientConfig()
    return ClientConfig(
        server=os.environ.get("LONGHAUL_SERVER") or stored.get("server") or base.server,
        token=os.environ.get("LONGHAUL_TOKEN") or stored.get("token"),
        ca=os.environ.get("LONGHAUL_CA") or stored.get("ca"),
        cert=os.environ.get("LONGHAUL_CERT") or stored.get("cert"),
        key=os.environ.get("LONGHAUL_KEY") or stored.get("key"),
    )


def save_config(config: ClientConfig) -> Path:
    path = config_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {k: v for k, v in vars(config).items() if v is not None}
    path.write_text(tomli_w.dumps(data), encoding="utf-8")
    path.chmod(0o600)
    return path


class Client:
    def __init__(self, config: ClientConfig, timeout_s: float = 30.0) -> None:
        self.config = config
        headers = {"Authorization": f"Bearer {config.token}"} if config.token else {}
        verify: ssl.SSLContext | bool = True
        if config.ca or config.cert:
            verify = ssl.create_default_context(cafile=config.ca)
            if config.cert:
                verify.load_cert_chain(config.cert, config.key)
        self._http = httpx.Client(
            base_url=config.server, headers=headers, verify=verify, timeout=timeout_s
        )

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_exc: object) -> None:
        self._http.close()

    def create(self, body: dict[str, Any]) -> dict[str, Any]:
        return dict(self._call("POST", "/api/v1/reservations", json=body))

    def reservations(self, **params: Any) -> dict[str, Any]:
        return dict(self._call("GET", "/api/v1/reservations", params=_drop_none(params)))

    def get(self, reservation_id: int) -> dict[str, Any]:
        return dict(self._call("GET", f"/api/v1/reservations/{reservation_id}"))

    def history(self, reservation_id: int) -> list[dict[str, Any]]:
        return list(self._call("GET", f"/api/v1/reservations/{reservation_id}/history"))

    def modify(self, reservation_id: int, body: dict[str, Any]) -> dict[str, Any]:
        return dict(self._call("PATCH", f"/api/v1/reservations/{reservation_id}", json=body))

    def availability(self, query: str, **params: Any) -> dict[str, Any]:
        """One of the four queries: `fixed-slot`, `earliest-start`, `max-bandwidth`,
        `all-slots`."""
        return dict(self._call("GET", f"/api/v1/availability/{query}", params=_drop_none(params)))

    def cancel(self, reservation_id: int) -> dict[str, Any]:
        return dict(self._call("POST", f"/api/v1/reservations/{reservation_id}/cancel"))

    def nsi_reserve(self, body: dict[str, Any]) -> dict[str, Any]:
        return dict(self._call("POST", "/api/v1/nsi/connections", json=body))

    def nsi_connections(self) -> list[dict[str, Any]]:
        return list(self._call("GET", "/api/v1/nsi/connections"))

    def nsi_connection(self, connection_id: str) -> dict[str, Any]:
        return dict(self._call("GET", f"/api/v1/nsi/connections/{connection_id}"))

    def nsi_request(
        self, connection_id: str, what: str, body: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """`reserve-commit`, `reserve-abort`, `provision`, `release`, `terminate`, or
        `modify` (with a body)."""
        path = f"/api/v1/nsi/connections/{connection_id}/{what}"
        return dict(self._call("POST", path, json=body))

    def nsi_availability(self, query: str, **params: Any) -> dict[str, Any]:
        path = f"/api/v1/nsi/availability/{query}"
        return dict(self._call("GET", path, params=_drop_none(params)))

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            raise UnreachableError(
                f"cannot reach {self.config.server} ({exc}); is `longhaul serve` running? "
                "(set the server with --server or $LONGHAUL_SERVER)"
            ) from exc
        if response.is_success:
            return response.json()
        try:
            problem = response.json()
        except ValueError:
            problem = {"detail": response.text or response.reason_phrase}
        raise ApiError(
            response.status_code, problem if isinstance(problem, dict) else {"detail": str(problem)}
        )


def _drop_none(params: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in params.items() if v is not None}
