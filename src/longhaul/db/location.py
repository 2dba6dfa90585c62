"""Where the project keeps its data: the data directory and the database URL."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

from longhaul.errors import InputError


def data_dir() -> Path:
    """`$LONGHAUL_HOME`, else the user's data directory (~/.local/share/longhaul)."""
    home = os.environ.get("LONGHAUL_HOME")
    return Path(home) if home else Path(platformdirs.user_data_dir("longhaul"))


def database_url(value: str | None = None) -> str:
    """A SQLAlchemy URL from `--db`, `$LONGHAUL_DB` or the default SQLite file.

    A value with `://` is a URL (`postgresql+psycopg://user@host/db`); anything else is
    the path of a SQLite file, created on first use.
    """
    value = value or os.environ.get("LONGHAUL_DB") or str(data_dir() / "longhaul.db")
    if "://" in value:
        if not value.startswith(("sqlite", "postgresql")):
            raise InputError("--db", f"{value!r}: longhaul stores its data in SQLite or PostgreSQL")
        return value
    path = Path(value).expanduser().resolve()
    return f"sqlite:///{path}"
