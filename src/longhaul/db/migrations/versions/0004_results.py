"""Measurement campaigns and their tidy rows.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from longhaul.db.base import UTCDateTime

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "campaigns",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("name", sa.String(128), nullable=False, unique=True),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("spec", sa.Text(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("finished_at", UTCDateTime(), nullable=True),
    )
    op.create_table(
        "measurements",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "campaign_id",
            sa.Integer(),
            sa.ForeignKey("campaigns.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("run_key", sa.String(255), nullable=False),
        sa.Column("test", sa.String(32), nullable=False),
        sa.Column("tool", sa.String(32), nullable=False),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("connection", sa.String(128), nullable=False),
        sa.Column("length_miles", sa.Float(), nullable=True),
        sa.Column("repetition", sa.Integer(), nullable=False),
        sa.Column("started_at", UTCDateTime(), nullable=False),
        sa.Column("cc", sa.String(32), nullable=True),
        sa.Column("streams", sa.Integer(), nullable=True),
        sa.Column("message_bytes", sa.Integer(), nullable=True),
        sa.Column("variant", sa.String(32), nullable=True),
        sa.Column("cross_traffic_gbps", sa.Float(), nullable=False),
        sa.Column("duration_s", sa.Float(), nullable=True),
        sa.Column("throughput_gbps", sa.Float(), nullable=True),
        sa.Column("retransmits", sa.Integer(), nullable=True),
        sa.Column("rtt_ms", sa.Float(), nullable=True),
        sa.Column("rtt_std_ms", sa.Float(), nullable=True),
        sa.Column("raw_ref", sa.Text(), nullable=True),
        sa.Column("extra", sa.JSON(), nullable=False),
        sa.UniqueConstraint("campaign_id", "run_key"),
    )


def downgrade() -> None:
    op.drop_table("measurements")
    op.drop_table("campaigns")
