"""Reservations record the ledger generation at which their bookings last changed.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("reservations") as batch:
        batch.add_column(
            sa.Column("changed_in", sa.BigInteger(), nullable=False, server_default="0")
        )
    op.create_index("ix_reservations_changed_in", "reservations", ["changed_in"])


def downgrade() -> None:
    op.drop_index("ix_reservations_changed_in", "reservations")
    with op.batch_alter_table("reservations") as batch:
        batch.drop_column("changed_in")
