"""Training jobs started over HTTP: a child process each, beside the runs they write.

Revision ID: 0004
Revises: 0003
Create Date: 2025-01-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

_STATUSES = ("queued", "running", "stopping", "succeeded", "failed", "stopped", "lost")


def upgrade() -> None:
    """Create ``training_jobs``."""
    op.create_table(
        "training_jobs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("kind", sa.String(length=50), nullable=False),
        sa.Column("env", sa.String(length=100), nullable=False),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("folder", sa.Text(), nullable=False),
        sa.Column("max_wall_s", sa.Double(), nullable=True),
        sa.Column("pid", sa.Integer(), nullable=True),
        sa.Column("pid_start", sa.BigInteger(), nullable=True),
        sa.Column("exit_code", sa.Integer(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "status IN ({})".format(", ".join(f"'{s}'" for s in _STATUSES)),
            name=op.f("ck_training_jobs_status"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_training_jobs")),
        sa.UniqueConstraint("name", name=op.f("uq_training_jobs_name")),
    )


def downgrade() -> None:
    """Drop ``training_jobs``."""
    op.drop_table("training_jobs")
