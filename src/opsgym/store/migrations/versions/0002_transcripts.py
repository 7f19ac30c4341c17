"""Episodes keep the transcript of a model-facing agent (prompts, replies, parsed calls).

Revision ID: 0002
Revises: 0001
Create Date: 2025-01-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add ``episodes.transcript`` (NULL for episodes played without one)."""
    with op.batch_alter_table("episodes") as batch:
        batch.add_column(sa.Column("transcript", sa.JSON(none_as_null=True), nullable=True))


def downgrade() -> None:
    """Drop ``episodes.transcript``."""
    with op.batch_alter_table("episodes") as batch:
        batch.drop_column("transcript")
