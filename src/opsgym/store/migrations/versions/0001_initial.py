"""The first schema: evaluations, episodes, events (with the hidden truth) and training runs.

Revision ID: 0001
Revises:
Create Date: 2025-01-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

_STATUS_CHECK = "status IN ('running', 'done', 'failed', 'interrupted')"
_TRUTH_COMMENT = (
    "HIDDEN: the true state of the world after this step. For judges, audits and post-episode "
    "inspection only; never served to an agent during an episode."
)


def _stamps() -> list[sa.Column]:
    return [
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    ]


def upgrade() -> None:
    """Create every table."""
    op.create_table(
        "evaluations",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("aggregates", sa.JSON(none_as_null=True), nullable=True),
        *_stamps(),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_evaluations")),
        sa.UniqueConstraint("name", name=op.f("uq_evaluations_name")),
        sa.CheckConstraint(_STATUS_CHECK, name=op.f("ck_evaluations_status")),
    )
    op.create_table(
        "episodes",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("evaluation_id", sa.Integer(), nullable=True),
        sa.Column("env", sa.String(100), nullable=False),
        sa.Column("scenario", sa.String(100), nullable=False),
        sa.Column("family", sa.String(100), nullable=False),
        sa.Column("seed", sa.BigInteger(), nullable=False),
        sa.Column("split", sa.String(50), nullable=False),
        sa.Column("policy", sa.String(200), nullable=False),
        sa.Column("trial", sa.Integer(), nullable=False),
        sa.Column("outcome", sa.String(100), nullable=True),
        sa.Column("accepted", sa.Boolean(), nullable=True),
        sa.Column("verdict", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("return", sa.Double(), nullable=False),
        sa.Column("rewards", sa.JSON(), nullable=False),
        sa.Column("steps", sa.Integer(), nullable=False),
        sa.Column("tokens", sa.BigInteger(), nullable=False),
        sa.Column("token_source", sa.String(20), nullable=False),
        sa.Column("downtime_cost", sa.Double(), nullable=True),
        sa.Column("lies", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("reward_timing", sa.String(20), nullable=False),
        sa.Column("header", sa.JSON(), nullable=False),
        sa.Column("root", sa.String(64), nullable=False),
        sa.Column("record_hash", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_episodes")),
        sa.ForeignKeyConstraint(
            ["evaluation_id"], ["evaluations.id"], name=op.f("fk_episodes_evaluation_id")
        ),
        sa.UniqueConstraint(
            "evaluation_id", "policy", "scenario", "seed", "trial", name=op.f("uq_episodes_key")
        ),
    )
    op.create_index(op.f("ix_episodes_evaluation_id"), "episodes", ["evaluation_id"])
    op.create_index(op.f("ix_episodes_env_scenario"), "episodes", ["env", "scenario"])
    op.create_table(
        "events",
        sa.Column("episode_id", sa.Integer(), nullable=False),
        sa.Column("step", sa.Integer(), nullable=False),
        sa.Column("tool", sa.JSON(), nullable=False),
        sa.Column("args", sa.JSON(), nullable=False),
        sa.Column("tokens", sa.Integer(), nullable=False),
        sa.Column("rejected", sa.Text(), nullable=True),
        sa.Column("report", sa.JSON(), nullable=False),
        sa.Column("reward", sa.JSON(), nullable=False),
        sa.Column("clock", sa.Double(), nullable=False),
        sa.Column("done", sa.Boolean(), nullable=False),
        sa.Column("hash", sa.String(64), nullable=False),
        sa.Column("truth_hidden", sa.JSON(), nullable=False, comment=_TRUTH_COMMENT),
        sa.PrimaryKeyConstraint("episode_id", "step", name=op.f("pk_events")),
        sa.ForeignKeyConstraint(
            ["episode_id"], ["episodes.id"], name=op.f("fk_events_episode_id"), ondelete="CASCADE"
        ),
    )
    op.create_table(
        "training_runs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("kind", sa.String(50), nullable=False),
        sa.Column("env", sa.String(100), nullable=False),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("curves", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("checkpoint", sa.Text(), nullable=True),
        *_stamps(),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_training_runs")),
        sa.UniqueConstraint("name", name=op.f("uq_training_runs_name")),
        sa.CheckConstraint(_STATUS_CHECK, name=op.f("ck_training_runs_status")),
    )


def downgrade() -> None:
    """Drop every table."""
    op.drop_table("training_runs")
    op.drop_table("events")
    op.drop_index(op.f("ix_episodes_env_scenario"), table_name="episodes")
    op.drop_index(op.f("ix_episodes_evaluation_id"), table_name="episodes")
    op.drop_table("episodes")
    op.drop_table("evaluations")
