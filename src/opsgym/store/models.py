"""The store's tables as SQLAlchemy 2 ORM models.

The schema itself is created and changed only by the Alembic migrations in
``opsgym/store/migrations/versions``; these models must describe the same tables (a test
compares them). Values that a replay must reproduce bit for bit (reports, rewards, truth,
verdicts) live in ``JSON`` columns: JSON text keeps every float exactly, ``-0.0`` and ``1.0``
included, where PostgreSQL's ``JSONB`` would normalise numbers.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    Double,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

STATUSES = ("running", "done", "failed", "interrupted")
"""The states of an evaluation or a training run."""

TRUTH_COMMENT = (
    "HIDDEN: the true state of the world after each step. For judges, audits and post-episode "
    "inspection only; never served to an agent during an episode."
)

_STATUS_CHECK = "status IN ('running', 'done', 'failed', 'interrupted')"

JOB_STATUSES = ("queued", "running", "stopping", "succeeded", "failed", "stopped", "lost")
"""The states of a training job started over HTTP: the first three are live, the rest final
(``lost``: its process could not be found or verified after the server restarted)."""

_JOB_STATUS_CHECK = "status IN ({})".format(", ".join(f"'{s}'" for s in JOB_STATUSES))


def utcnow() -> datetime:
    """The current time in UTC, timezone-aware."""
    return datetime.now(UTC)


NAMING = {
    "pk": "pk_%(table_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ix": "ix_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
}
"""Constraint names, fixed so that migrations can name what they change."""


class Base(DeclarativeBase):
    """Declarative base of the store's tables."""

    metadata = MetaData(naming_convention=NAMING)


class EvaluationModel(Base):
    """One named evaluation: its configuration, status and aggregates, and, once finished, its
    seal (:mod:`opsgym.store.seal`): the manifest of its episodes and the root hash over it.
    """

    __tablename__ = "evaluations"
    __table_args__ = (CheckConstraint(_STATUS_CHECK, name="status"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    config: Mapped[dict[str, Any]] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(20))
    aggregates: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    root: Mapped[str | None] = mapped_column(String(64))
    manifest: Mapped[list[Any] | None] = mapped_column(JSON(none_as_null=True))


class EpisodeModel(Base):
    """One stored episode: its header, verdict and totals (its steps are in ``events``).

    Unique per (evaluation, policy, scenario, seed, trial), so a resumed evaluation never
    stores an episode twice. Episodes outside any evaluation (``evaluation_id`` NULL) are not
    deduplicated.
    """

    __tablename__ = "episodes"
    __table_args__ = (
        UniqueConstraint(
            "evaluation_id", "policy", "scenario", "seed", "trial", name="uq_episodes_key"
        ),
        Index("ix_episodes_env_scenario", "env", "scenario"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    evaluation_id: Mapped[int | None] = mapped_column(ForeignKey("evaluations.id"), index=True)
    env: Mapped[str] = mapped_column(String(100))
    scenario: Mapped[str] = mapped_column(String(100))
    family: Mapped[str] = mapped_column(String(100))
    seed: Mapped[int] = mapped_column(BigInteger)
    split: Mapped[str] = mapped_column(String(50))
    policy: Mapped[str] = mapped_column(String(200))
    trial: Mapped[int] = mapped_column(Integer)
    outcome: Mapped[str | None] = mapped_column(String(100))
    accepted: Mapped[bool | None] = mapped_column(Boolean)
    verdict: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True))
    return_: Mapped[float] = mapped_column("return", Double)
    rewards: Mapped[dict[str, Any]] = mapped_column(JSON)
    steps: Mapped[int] = mapped_column(Integer)
    tokens: Mapped[int] = mapped_column(BigInteger)
    token_source: Mapped[str] = mapped_column(String(20))
    downtime_cost: Mapped[float | None] = mapped_column(Double)
    lies: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True))
    reward_timing: Mapped[str] = mapped_column(String(20))
    header: Mapped[dict[str, Any]] = mapped_column(JSON)
    root: Mapped[str] = mapped_column(String(64))
    record_hash: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    # A model-facing agent's account of how the calls came about (Episode.transcript): outside
    # the hash chain, ignored by replay.
    transcript: Mapped[list[Any] | None] = mapped_column(JSON(none_as_null=True))


class EventModel(Base):
    """The steps of one stored episode, in one row: ``steps`` holds every event (the call, the
    report, the reward paid, the clock, the hash) in step order, and ``truth_hidden`` the hidden
    truth after each of them, in the same order.

    One row per episode, not per step: an evaluation writes thousands of episodes a second,
    and two JSON documents per episode cost a fraction of a row per step. Nothing reads steps
    one at a time; SQL that needs one can use the database's JSON functions.
    """

    __tablename__ = "events"

    episode_id: Mapped[int] = mapped_column(
        ForeignKey("episodes.id", ondelete="CASCADE"), primary_key=True, autoincrement=False
    )
    steps: Mapped[list[Any]] = mapped_column(JSON)
    truth_hidden: Mapped[list[Any]] = mapped_column(JSON, comment=TRUTH_COMMENT)


class TrainingRunModel(Base):
    """One named training run: configuration, status, learning curves and last checkpoint."""

    __tablename__ = "training_runs"
    __table_args__ = (CheckConstraint(_STATUS_CHECK, name="status"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    kind: Mapped[str] = mapped_column(String(50))
    env: Mapped[str] = mapped_column(String(100))
    config: Mapped[dict[str, Any]] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(20))
    curves: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True))
    checkpoint: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class TrainingJobModel(Base):
    """One training job started over HTTP: a child process running a trainer, whose run (same
    name) is in ``training_runs``. ``pid`` and ``pid_start`` (the process's start time in clock
    ticks since boot) let a restarted server find the very process again, not one that reused
    its pid.
    """

    __tablename__ = "training_jobs"
    __table_args__ = (CheckConstraint(_JOB_STATUS_CHECK, name="status"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    kind: Mapped[str] = mapped_column(String(50))
    env: Mapped[str] = mapped_column(String(100))
    config: Mapped[dict[str, Any]] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(20))
    folder: Mapped[str] = mapped_column(Text)
    max_wall_s: Mapped[float | None] = mapped_column(Double)
    pid: Mapped[int | None] = mapped_column(Integer)
    pid_start: Mapped[int | None] = mapped_column(BigInteger)
    exit_code: Mapped[int | None] = mapped_column(Integer)
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
