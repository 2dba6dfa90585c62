"""The project database: the engine, its two kinds of transaction, the migrations (of
every table: the reservation service's and the measurement results'), and a throw-away
PostgreSQL for tests and benchmarks."""

from longhaul.db.base import Base, UTCDateTime
from longhaul.db.engine import Database, make_engine, migrate
from longhaul.db.location import data_dir, database_url

__all__ = [
    "Base",
    "Database",
    "UTCDateTime",
    "data_dir",
    "database_url",
    "make_engine",
    "migrate",
]
