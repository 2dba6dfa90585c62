"""Initial schema: users, reservations and their state history.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Migrations keep their own column types: they must not change when models do.
UTC_TIME = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "users",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("name", sa.String(64), nullable=False, unique=True),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("cert_subject", sa.String(512), nullable=True, unique=True),
        sa.Column("created_at", UTC_TIME, nullable=False),
    )
    op.create_table(
        "reservations",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("owner_id", sa.Integer(), sa.ForeignKey("users.id"), nullable=False),
        sa.Column("src_node", sa.String(128), nullable=False),
        sa.Column("src_port", sa.String(64), nullable=True),
        sa.Column("dst_node", sa.String(128), nullable=False),
        sa.Column("dst_port", sa.String(64), nullable=True),
        sa.Column("bandwidth_mbps", sa.Integer(), nullable=False),
        sa.Column("start", UTC_TIME, nullable=False),
        sa.Column("end", UTC_TIME, nullable=False),
        sa.Column("route", sa.JSON(), nullable=True),
        sa.Column("path_start", sa.String(128), nullable=False),
        sa.Column("path_links", sa.JSON(), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("cancelled_at", UTC_TIME, nullable=True),
        sa.Column("created_at", UTC_TIME, nullable=False),
        sa.Column("updated_at", UTC_TIME, nullable=False),
    )
    op.create_index("ix_reservations_owner", "reservations", ["owner_id"])
    op.create_index("ix_reservations_state_start_end", "reservations", ["state", "start", "end"])
    op.create_table(
        "state_changes",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("reservation_id", sa.Integer(), sa.ForeignKey("reservations.id"), nullable=False),
        sa.Column("at", UTC_TIME, nullable=False),
        sa.Column("from_state", sa.String(16), nullable=True),
        sa.Column("to_state", sa.String(16), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("actor", sa.String(64), nullable=False),
    )
    op.create_index("ix_state_changes_reservation", "state_changes", ["reservation_id"])


def downgrade() -> None:
    op.drop_table("state_changes")
    op.drop_table("reservations")
    op.drop_table("users")
