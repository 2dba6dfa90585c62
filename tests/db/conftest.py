"""A database with one table of numbers, `n (v INTEGER)`, for the transaction tests."""

import pytest
from sqlalchemy import text

from longhaul.db import Database, migrate


@pytest.fixture
def db(db_url):
    database = Database(db_url)
    migrate(database.engine)
    with database.write() as session:
        session.execute(text("CREATE TABLE n (v INTEGER)"))
    yield database
    database.dispose()


def values(db):
    """The numbers stored, smallest first."""
    with db.read() as session:
        return sorted(v for (v,) in session.execute(text("SELECT v FROM n")))
