"""An episode's events in one row: ``steps`` and ``truth_hidden``, two JSON arrays in step order.

A row per step cost an evaluation more to write than playing the episode; nothing reads a step
on its own. Stored episodes are carried over value for value (their records replay the same).

Revision ID: 0003
Revises: 0002
Create Date: 2025-01-03
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import groupby
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

_TRUTH_COMMENT = (
    "HIDDEN: the true state of the world after each step. For judges, audits and post-episode "
    "inspection only; never served to an agent during an episode."
)
_OLD_TRUTH_COMMENT = (
    "HIDDEN: the true state of the world after this step. For judges, audits and post-episode "
    "inspection only; never served to an agent during an episode."
)
_STEP_FIELDS = {  # an event's fields in a record's order, with their column types
    "step": sa.Integer(),
    "tool": sa.JSON(),
    "args": sa.JSON(),
    "tokens": sa.Integer(),
    "rejected": sa.Text(),
    "report": sa.JSON(),
    "reward": sa.JSON(),
    "clock": sa.Double(),
    "done": sa.Boolean(),
    "hash": sa.String(),
}
_BATCH = 500


def _per_step_table(name: str) -> sa.Table:
    return sa.table(
        name,
        sa.column("episode_id", sa.Integer()),
        *(sa.column(f, t) for f, t in _STEP_FIELDS.items()),
        sa.column("truth_hidden", sa.JSON()),
    )


_PER_EPISODE = sa.table(
    "events",
    sa.column("episode_id", sa.Integer()),
    sa.column("steps", sa.JSON()),
    sa.column("truth_hidden", sa.JSON()),
)


def _set_aside(new_name: str) -> None:
    """Rename ``events`` out of the way (with its constraints: PostgreSQL names are global)."""
    op.rename_table("events", new_name)
    if op.get_bind().dialect.name == "postgresql":
        for old in ("pk_events", "fk_events_episode_id"):
            new = old.replace("events", new_name, 1)
            op.execute(f"ALTER TABLE {new_name} RENAME CONSTRAINT {old} TO {new}")


def _batches(rows: Iterator[Any]) -> Iterator[list[Any]]:
    batch = []
    for row in rows:
        batch.append(row)
        if len(batch) >= _BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def upgrade() -> None:
    """Gather each episode's per-step rows into one row of two JSON arrays."""
    _set_aside("events_0002")
    op.create_table(
        "events",
        sa.Column("episode_id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("steps", sa.JSON(), nullable=False),
        sa.Column("truth_hidden", sa.JSON(), nullable=False, comment=_TRUTH_COMMENT),
        sa.PrimaryKeyConstraint("episode_id", name=op.f("pk_events")),
        sa.ForeignKeyConstraint(
            ["episode_id"], ["episodes.id"], name=op.f("fk_events_episode_id"), ondelete="CASCADE"
        ),
    )
    old = _per_step_table("events_0002")
    bind = op.get_bind()
    query = sa.select(old).order_by(old.c.episode_id, old.c.step)
    rows = bind.execute(query.execution_options(yield_per=_BATCH))
    episodes = (
        {
            "episode_id": episode_id,
            "steps": [{f: r[f] for f in _STEP_FIELDS} for r in steps],
            "truth_hidden": [r["truth_hidden"] for r in steps],
        }
        for episode_id, group in groupby(rows.mappings(), key=lambda r: r["episode_id"])
        for steps in [list(group)]
    )
    for batch in _batches(episodes):
        bind.execute(sa.insert(_PER_EPISODE), batch)
    op.drop_table("events_0002")


def downgrade() -> None:
    """Spread each episode's events back over one row per step."""
    _set_aside("events_0003")
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
        sa.Column("truth_hidden", sa.JSON(), nullable=False, comment=_OLD_TRUTH_COMMENT),
        sa.PrimaryKeyConstraint("episode_id", "step", name=op.f("pk_events")),
        sa.ForeignKeyConstraint(
            ["episode_id"], ["episodes.id"], name=op.f("fk_events_episode_id"), ondelete="CASCADE"
        ),
    )
    old = sa.table(
        "events_0003",
        sa.column("episode_id", sa.Integer()),
        sa.column("steps", sa.JSON()),
        sa.column("truth_hidden", sa.JSON()),
    )
    bind = op.get_bind()
    query = sa.select(old).order_by(old.c.episode_id)
    rows = bind.execute(query.execution_options(yield_per=_BATCH))
    per_step = (
        {"episode_id": r.episode_id, **step, "truth_hidden": truth}
        for r in rows
        for step, truth in zip(r.steps, r.truth_hidden, strict=True)
    )
    for batch in _batches(per_step):
        bind.execute(sa.insert(_per_step_table("events")), batch)
    op.drop_table("events_0003")
