"""Evaluations keep their seal: the manifest of their episodes and its root hash.

Revision ID: 0005
Revises: 0004
Create Date: 2025-01-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add ``evaluations.root`` and ``evaluations.manifest`` (NULL until an evaluation is
    finished; evaluations finished before this revision stay unsealed).
    """
    with op.batch_alter_table("evaluations") as batch:
        batch.add_column(sa.Column("root", sa.String(length=64), nullable=True))
        batch.add_column(sa.Column("manifest", sa.JSON(none_as_null=True), nullable=True))


def downgrade() -> None:
    """Drop ``evaluations.root`` and ``evaluations.manifest``."""
    with op.batch_alter_table("evaluations") as batch:
        batch.drop_column("manifest")
        batch.drop_column("root")
