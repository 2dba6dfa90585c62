"""A real `longhaul serve` in a subprocess, for tests that need a running server."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from longhaul.db.throwaway import free_port


class LiveServer:
    def __init__(self, home: Path, db_url: str | None = None, *extra: str) -> None:
        self.home = home
        self.db_url = db_url or f"sqlite:///{home}/longhaul.db"
        self.extra = extra
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.scheme = "https" if "--tls" in extra else "http"

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}"

    def cli(
        self, *args: str, env: dict[str, str] | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """Run `longhaul ARGS` against this server's database and address."""
        result = subprocess.run(
            [sys.executable, "-m", "longhaul", *args],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env={
                **os.environ,
                "LONGHAUL_DB": self.db_url,
                "LONGHAUL_SERVER": self.url,
                **(env or {}),
            },
        )
        if check and result.returncode != 0:
            raise AssertionError(
                f"longhaul {' '.join(args)} failed ({result.returncode}): {result.stderr}"
            )
        return result

    def add_user(self, name: str, *flags: str) -> str:
        return self.cli("user", "add", name, *flags).stdout.strip()

    def start(self, timeout_s: float = 30) -> LiveServer:
        log = (self.home / "server.log").open("ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "longhaul", "serve", "--home", str(self.home), "--db", self.db_url,
             "--port", str(self.port), *self.extra],
            stdout=log,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"the server exited: {self.log()}")
            try:
                if httpx.get(f"{self.url}/healthz", verify=False, timeout=1).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        raise AssertionError(f"the server did not answer within {timeout_s} s: {self.log()}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=15)
        self.process = None

    def kill_9(self) -> None:
        assert self.process is not None
        self.process.kill()
        self.process.wait(timeout=15)
        self.process = None

    def log(self) -> str:
        path = self.home / "server.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""

    def __enter__(self) -> LiveServer:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()
