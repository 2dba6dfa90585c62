"""Two-phase reservations and NSI connections: a reservation may be held until a time,
may be wanted up or not (NSI's provision and release), and may be named by an NSI
connection; connections across domains are aggregates of one connection per domain.

Revision ID: 0012
Revises: 0011
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from longhaul.db.base import UTCDateTime

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("reservations") as batch:
        batch.add_column(sa.Column("held_until", UTCDateTime(), nullable=True))
        batch.add_column(sa.Column("held_change", sa.JSON(none_as_null=True), nullable=True))
        batch.add_column(
            sa.Column("provision", sa.Boolean(), nullable=False, server_default=sa.true())
        )
    op.create_index("ix_reservations_held_until", "reservations", ["held_until"])
    op.create_index("ix_reservations_provision_end", "reservations", ["provision", "end"])
    op.create_table(
        "nsi_connections",
        sa.Column("connection_id", sa.String(64), primary_key=True),
        sa.Column(
            "reservation_id",
            sa.Integer(),
            sa.ForeignKey("reservations.id"),
            nullable=False,
            unique=True,
        ),
        sa.Column("global_reservation_id", sa.String(255), nullable=False),
        sa.Column("requester_nsa", sa.String(255), nullable=False),
        sa.Column("source_local", sa.String(200), nullable=False),
        sa.Column("source_vlan", sa.Integer(), nullable=True),
        sa.Column("dest_local", sa.String(200), nullable=False),
        sa.Column("dest_vlan", sa.Integer(), nullable=True),
        sa.Column("version", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("terminated_at", UTCDateTime(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
    )
    op.create_index("ix_nsi_connections_source", "nsi_connections", ["source_local", "source_vlan"])
    op.create_index("ix_nsi_connections_dest", "nsi_connections", ["dest_local", "dest_vlan"])

    op.create_table(
        "nsi_aggregates",
        sa.Column("connection_id", sa.String(64), primary_key=True),
        sa.Column("owner_id", sa.Integer(), sa.ForeignKey("users.id"), nullable=False),
        sa.Column("global_reservation_id", sa.String(255), nullable=False),
        sa.Column("requester_nsa", sa.String(255), nullable=False),
        sa.Column("source_stp", sa.String(512), nullable=False),
        sa.Column("dest_stp", sa.String(512), nullable=False),
        sa.Column("capacity_mbps", sa.Integer(), nullable=False),
        sa.Column("start", UTCDateTime(), nullable=False),
        sa.Column("end", UTCDateTime(), nullable=False),
        sa.Column("segments", sa.JSON(), nullable=False),
        sa.Column("held_change", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("nsi_aggregates")
    op.drop_table("nsi_connections")
    op.drop_index("ix_reservations_provision_end", "reservations")
    op.drop_index("ix_reservations_held_until", "reservations")
    with op.batch_alter_table("reservations") as batch:
        batch.drop_column("provision")
        batch.drop_column("held_change")
        batch.drop_column("held_until")
