"""NSI notifications and results: where each connection's requester wants notifications
(its reserve's replyTo), the notifications themselves, numbered per connection, with
what their sending has come to; and the confirmations given for each connection, for
queryResult.

Revision ID: 0013
Revises: 0012
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from longhaul.db.base import UTCDateTime

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("nsi_connections") as batch:
        batch.add_column(sa.Column("notify_to", sa.String(2048), nullable=True))
    op.create_table(
        "nsi_notifications",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "connection_id",
            sa.String(64),
            sa.ForeignKey("nsi_connections.connection_id"),
            nullable=False,
        ),
        sa.Column("notification_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("at", UTCDateTime(), nullable=False),
        sa.Column("detail", sa.JSON(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("next_try_at", UTCDateTime(), nullable=True),
        sa.Column("delivered_at", UTCDateTime(), nullable=True),
        sa.UniqueConstraint("connection_id", "notification_id", name="uq_nsi_notifications_number"),
    )
    op.create_index("ix_nsi_notifications_undelivered", "nsi_notifications", ["delivered_at", "id"])
    op.create_table(
        "nsi_results",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("connection_id", sa.String(64), nullable=False),
        sa.Column("result_id", sa.Integer(), nullable=False),
        sa.Column("correlation_id", sa.String(255), nullable=False),
        sa.Column("at", UTCDateTime(), nullable=False),
        sa.Column("confirmation", sa.Text(), nullable=False),
        sa.UniqueConstraint("connection_id", "result_id", name="uq_nsi_results_number"),
    )


def downgrade() -> None:
    op.drop_table("nsi_results")
    op.drop_index("ix_nsi_notifications_undelivered", "nsi_notifications")
    op.drop_table("nsi_notifications")
    with op.batch_alter_table("nsi_connections") as batch:
        batch.drop_column("notify_to")
