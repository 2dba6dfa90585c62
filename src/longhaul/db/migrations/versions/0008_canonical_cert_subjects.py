"""Certificate subjects stored in their canonical form (longhaul.control.subjects), so a
certificate matches whatever order its maker gave its attributes.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from longhaul.control.subjects import canonical_subject

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

users = sa.table("users", sa.column("id", sa.Integer), sa.column("cert_subject", sa.String))


def upgrade() -> None:
    connection = op.get_bind()
    rows = connection.execute(
        sa.select(users.c.id, users.c.cert_subject).where(users.c.cert_subject.is_not(None))
    ).all()
    taken = {subject for _, subject in rows}
    for user_id, subject in rows:
        try:
            canonical = canonical_subject(subject)
        except ValueError:
            continue  # never matched a certificate's subject; left for an admin to see
        if canonical == subject or canonical in taken:
            continue  # two users with one name: the first keeps the canonical form
        connection.execute(
            users.update().where(users.c.id == user_id).values(cert_subject=canonical)
        )
        taken.add(canonical)


def downgrade() -> None:
    """The canonical form matches as the old strings did only where the maker's order
    was RFC 4514's; nothing to undo."""
