"""Alembic runs this to migrate; longhaul passes the connection in (see engine.migrate)."""

from alembic import context

# Every table's model, so that the metadata is the whole database.
from longhaul.db.base import Base

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    context.run_migrations()
