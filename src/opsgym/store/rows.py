"""What the store hands back: plain dicts (typed), detached from any database session.

Plain data, like records: rows go straight into statistics, CSV files and JSON responses.
Times are timezone-aware UTC datetimes.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, TypedDict

from opsgym.store.models import (
    EpisodeModel,
    EvaluationModel,
    TrainingJobModel,
    TrainingRunModel,
)


def aware(moment: datetime) -> datetime:
    """``moment`` in UTC, timezone-aware (SQLite hands datetimes back naive)."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


class Evaluation(TypedDict):
    """A stored evaluation.

    Keys:
        id: Its row id.
        name: Its unique name (what ``opsgym eval --name`` resumes).
        config: The settings it runs with, as given to ``start_evaluation``.
        status: ``running``, ``done``, ``failed`` or ``interrupted``.
        aggregates: What ``finish_evaluation`` wrote (the summary when ``done``; ``error``,
            ``stored`` and how to ``resume`` when ``failed`` or ``interrupted``); while
            ``running``, the ``runner`` process.
        episodes: How many episodes it holds.
        created_at: When it was first started.
        updated_at: When it was last started or finished.
        resumed: Whether ``start_evaluation`` found it already stored (else ``False``).
    """

    id: int
    name: str
    config: dict[str, Any]
    status: str
    aggregates: dict[str, Any] | None
    episodes: int
    created_at: datetime
    updated_at: datetime
    resumed: bool


class TrainingRun(TypedDict):
    """A stored training run.

    Keys:
        id: Its row id.
        name: Its unique name.
        kind: The trainer (``ppo``, ``sft``, ``grpo``, ...).
        env: The environment it trains on.
        config: Its settings, as given to ``start_training_run``.
        status: ``running``, ``done``, ``failed`` or ``interrupted``.
        curves: Learning curves as last written (name -> list of points), or ``None``.
        checkpoint: Where the latest checkpoint is, or ``None``.
        created_at: When it was first started.
        updated_at: When it was last written.
        resumed: Whether ``start_training_run`` found it already stored (else ``False``).
    """

    id: int
    name: str
    kind: str
    env: str
    config: dict[str, Any]
    status: str
    curves: dict[str, Any] | None
    checkpoint: str | None
    created_at: datetime
    updated_at: datetime
    resumed: bool


class TrainingJob(TypedDict):
    """A training job started over HTTP (its run, of the same name, is a :class:`TrainingRun`).

    Keys:
        id: Its row id.
        name: Its unique name, which is its run's.
        kind: The trainer (``ppo``, ``sft``, ``grpo``).
        env: The environment it trains on.
        config: The trainer's config, as validated.
        status: ``queued``, ``running``, ``stopping``, ``succeeded``, ``failed``, ``stopped``
            or ``lost``.
        folder: The run's folder.
        max_wall_s: The wall time after which it is stopped, or ``None``.
        pid: Its process id once started, else ``None``.
        pid_start: Its process's start time (clock ticks since boot), else ``None``.
        exit_code: How its process exited (negative: killed by that signal), else ``None``.
        error: Why it failed or was lost, else ``None``.
        created_at: When it was asked for.
        started_at: When its process started, else ``None``.
        finished_at: When it ended, else ``None``.
        updated_at: When it was last written.
    """

    id: int
    name: str
    kind: str
    env: str
    config: dict[str, Any]
    status: str
    folder: str
    max_wall_s: float | None
    pid: int | None
    pid_start: int | None
    exit_code: int | None
    error: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    updated_at: datetime


EpisodeRow = TypedDict(
    "EpisodeRow",
    {
        "id": int,
        "evaluation": str | None,
        "env": str,
        "scenario": str,
        "family": str,
        "seed": int,
        "split": str,
        "policy": str,
        "trial": int,
        "outcome": str | None,
        "accepted": bool | None,
        "verdict": dict[str, Any] | None,
        "return": float,
        "rewards": dict[str, float],
        "steps": int,
        "tokens": int,
        "token_source": str,
        "downtime_cost": float | None,
        "lies": dict[str, Any] | None,
        "reward_timing": str,
        "record_hash": str,
        "created_at": datetime,
    },
)
EpisodeRow.__doc__ = """A stored episode without its events: what statistics and tables use.

Keys: ``id`` (``Store.episode_record(id)`` rebuilds the whole record), ``evaluation`` (its
name, or ``None``), ``env``, ``scenario`` (``mixed`` for a drawn family), ``family`` (the
family actually drawn, hidden from the agent while it ran), ``seed``, ``split``, ``policy``,
``trial`` (which of the k runs on this seed), ``outcome`` and ``accepted`` (``None`` if the
episode did not end), ``verdict`` (per invariant), ``return``, ``rewards`` (by component),
``steps``, ``tokens``, ``token_source``, ``downtime_cost`` and ``lies`` (``{"told",
"trusted", "reconciled", "by_kind"}``) where the harness gave them, ``reward_timing``,
``record_hash``, ``created_at``.
"""

EPISODE_COLUMNS = tuple(k for k in EpisodeRow.__annotations__ if k != "evaluation")
"""The ``episodes`` columns an :class:`EpisodeRow` carries (its evaluation name is joined in)."""


def episode_columns() -> list[Any]:
    """The model attributes behind :data:`EPISODE_COLUMNS`, in that order."""
    return [EpisodeModel.return_ if c == "return" else getattr(EpisodeModel, c)
            for c in EPISODE_COLUMNS]  # fmt: skip


def episode_row(evaluation: str | None, values: tuple[Any, ...]) -> EpisodeRow:
    """The row of one result of ``select(EvaluationModel.name, *episode_columns())``."""
    row: dict[str, Any] = dict(zip(EPISODE_COLUMNS, values, strict=True))
    row["evaluation"] = evaluation
    row["created_at"] = aware(row["created_at"])
    return row  # type: ignore[return-value]


def evaluation_row(model: EvaluationModel, episodes: int, resumed: bool = False) -> Evaluation:
    """The row of ``model``, which holds ``episodes`` episodes."""
    return Evaluation(
        id=model.id,
        name=model.name,
        config=model.config,
        status=model.status,
        aggregates=model.aggregates,
        episodes=episodes,
        created_at=aware(model.created_at),
        updated_at=aware(model.updated_at),
        resumed=resumed,
    )


def training_run_row(model: TrainingRunModel, resumed: bool = False) -> TrainingRun:
    """The row of ``model``."""
    return TrainingRun(
        id=model.id,
        name=model.name,
        kind=model.kind,
        env=model.env,
        config=model.config,
        status=model.status,
        curves=model.curves,
        checkpoint=model.checkpoint,
        created_at=aware(model.created_at),
        updated_at=aware(model.updated_at),
        resumed=resumed,
    )


def training_job_row(model: TrainingJobModel) -> TrainingJob:
    """The row of ``model``."""
    row = {name: getattr(model, name) for name in TrainingJob.__annotations__}
    for name in ("created_at", "started_at", "finished_at", "updated_at"):
        if row[name] is not None:
            row[name] = aware(row[name])
    return row  # type: ignore[return-value]
