"""A private PostgreSQL cluster in a temporary folder, for tests and benchmarks.

It runs the server binaries of the Debian `postgresql` package (`make setup` installs
it), listens only on 127.0.0.1 at a free port, trusts local connections, and is removed
with its folder by `stop()`. PostgreSQL refuses to run as root, so as root it runs as
the `postgres` user the package creates.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from types import TracebackType

import psycopg


class PostgresUnavailableError(RuntimeError):
    """No PostgreSQL server binaries on this machine."""


def server_binaries() -> Path:
    """The folder with initdb and pg_ctl of the newest PostgreSQL installed."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=_version)
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("initdb")
    if on_path:
        return Path(on_path).resolve().parent
    raise PostgresUnavailableError(
        "PostgreSQL server binaries not found; install them with "
        "`apt-get install postgresql` (make setup does)"
    )


def _version(path: str) -> int:
    part = Path(path).parts[-3]
    return int(part) if part.isdigit() else 0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class ThrowawayPostgres:
    def __init__(self, durable: bool = False) -> None:
        self.durable = durable
        """With False (for tests), skip fsync: fast, and nothing needs to survive a crash."""
        self.port = 0
        self.folder: Path | None = None

    def __enter__(self) -> ThrowawayPostgres:
        self.start()
        return self

    def __exit__(
        self,
        _type: type[BaseException] | None,
        _value: BaseException | None,
        _trace: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self.folder is not None

    def start(self) -> None:
        binaries = server_binaries()
        self.folder = Path(tempfile.mkdtemp(prefix="longhaul-pg-"))
        self.port = free_port()
        as_user: list[str] = []
        if os.geteuid() == 0:
            owner = pwd.getpwnam("postgres")
            os.chown(self.folder, owner.pw_uid, owner.pw_gid)
            as_user = ["runuser", "-u", "postgres", "--"]
        data = self.folder / "data"
        options = (
            f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c max_connections=200"
        )
        if not self.durable:
            options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        try:
            self._run(
                [
                    *as_user,
                    str(binaries / "initdb"),
                    "-D",
                    str(data),
                    "-A",
                    "trust",
                    "-U",
                    "postgres",
                    "-E",
                    "UTF8",
                    "--no-sync",
                ]
            )
            self._run(
                [
                    *as_user,
                    str(binaries / "pg_ctl"),
                    "start",
                    "-w",
                    "-t",
                    "60",
                    "-D",
                    str(data),
                    "-l",
                    str(self.folder / "server.log"),
                    "-o",
                    options,
                ]
            )
        except BaseException:
            self._remove()
            raise
        self._binaries, self._as_user = binaries, as_user

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        """A new empty database; its SQLAlchemy URL."""
        with psycopg.connect(
            f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres", autocommit=True
        ) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        if self.folder is None:
            return
        data = self.folder / "data"
        subprocess.run(
            [
                *self._as_user,
                str(self._binaries / "pg_ctl"),
                "stop",
                "-w",
                "-m",
                "immediate",
                "-D",
                str(data),
            ],
            capture_output=True,
            timeout=60,
            check=False,
        )
        self._remove()

    def _remove(self) -> None:
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None

    def _run(self, command: list[str]) -> None:
        result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
        if result.returncode != 0:
            log = ""
            if self.folder is not None and (self.folder / "server.log").exists():
                log = (self.folder / "server.log").read_text(errors="replace")[-2000:]
            raise RuntimeError(f"{' '.join(command[:4])} failed: {result.stderr.strip()} {log}")
