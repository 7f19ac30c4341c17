"""``/api/episodes``, ``/api/grade``, ``/api/timeline``: the store's episodes, and any record
judged again or replayed step by step.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query

from opsgym.server import responses as R
from opsgym.server.models import GradeRequest, TimelineRequest
from opsgym.server.openenv import JSON
from opsgym.server.routes.deps import Replays, Store
from opsgym.server.timeline import lies_view, window

TOTAL_HEADER = "X-Total-Count"
"""The header of ``GET /api/episodes`` that counts every matching episode, past the page."""

router = APIRouter(prefix="/api", tags=["store"])

# Store ids are 64-bit: a larger one is a 422 here, not an overflow in the database.
StoredId = Annotated[int, Path(ge=0, le=2**63 - 1, description="A stored episode's id.")]
FirstStep = Annotated[int, Query(ge=0, le=2**31, description="Steps to skip (0: from the first).")]
WindowSize = Annotated[int, Query(ge=1, le=1000, description="Most steps to show.")]


@router.post("/grade", response_model=R.ReplayCheck)
def grade(body: GradeRequest) -> JSON:
    """Judge a finished episode again from its calls: the replay's match and verdict.

    ``labels`` name what makes the record unfit for a leaderboard (forced facts, dense
    reward timing, a held-out family on a train seed); ``admissible`` is a match with none.
    """
    from opsgym.core.replay import replay

    record = body.record
    try:
        result = replay(record)
    except (AttributeError, KeyError, IndexError, TypeError) as exc:  # a malformed record
        raise ValueError(f"the record cannot be replayed: {type(exc).__name__}: {exc}") from exc
    return JSON(
        {
            "match": result.match,
            "first_difference": result.first_difference,
            "recorded_hash": result.recorded_hash,
            "replayed_hash": result.replayed_hash,
            "verdict": record.get("verdict") if result.match else None,
            "labels": list(result.labels),
            "admissible": result.admissible,
        }
    )


@router.get("/episodes", response_model=list[R.EpisodeRow])
def list_episodes(
    db: Store,
    env: str | None = Query(None, max_length=64),
    scenario: str | None = Query(None, max_length=128),
    family: str | None = Query(None, max_length=128),
    policy: str | None = Query(None, max_length=128),
    evaluation: str | None = Query(None, max_length=200),
    outcome: str | None = Query(None, max_length=64),
    split: str | None = Query(None, pattern="^(train|dev|test)$"),
    accepted: bool | None = Query(
        None, description="Only episodes the judge accepted (true) or did not (false)."
    ),
    order: str = Query(
        "oldest", pattern="^(oldest|newest)$", description="By id: oldest or newest first."
    ),
    limit: int = Query(100, ge=1, le=1000),
    offset: int = Query(0, ge=0, le=2**62),
) -> JSON:
    """Stored episodes matching every filter (without their events): a page of them.

    The body is the page, a JSON list, oldest first unless ``order=newest``; the header
    ``X-Total-Count`` holds how many episodes match the filters in all, so a client pages
    with ``limit`` and ``offset`` up to it. ``accepted=false`` counts every episode whose
    verdict did not accept, those cut short without a verdict among them.
    """
    filters = {
        "env": env,
        "scenario": scenario,
        "family": family,
        "policy": policy,
        "evaluation": evaluation,
        "outcome": outcome,
        "split": split,
        "accepted": accepted,
    }
    rows = db.episodes(**filters, order=order, limit=limit, offset=offset)
    total = db.count_episodes(**filters)
    return JSON(
        [{**r, "created_at": r["created_at"].isoformat()} for r in rows],
        headers={TOTAL_HEADER: str(total)},
    )


@router.get("/episodes/{episode_id}", response_model=R.StoredEpisode)
def get_episode(episode_id: StoredId, db: Store, timelines: Replays) -> JSON:
    """One stored episode's record (truth included: it has ended), and what became of each
    lie it told: trusted or reconciled, at which step and by which call (by replay).
    """
    record = db.episode_record(episode_id)
    return JSON(
        {
            "truth_included": True,
            "record": record,
            "lies": lies_view(timelines.of(record)),
        }
    )


@router.get("/episodes/{episode_id}/timeline", response_model=R.Timeline)
def episode_timeline(
    episode_id: StoredId,
    db: Store,
    timelines: Replays,
    start: FirstStep = 0,
    limit: WindowSize = 50,
) -> JSON:
    """A stored episode replayed: whether it matches, the family it drew, what became of
    each lie, and for the steps ``start + 1`` to ``start + limit`` what the agent was told
    and what it saw after (its observation). Replays are cached by the record's digest.
    """
    record = db.episode_record(episode_id)
    return JSON(window(timelines.of(record), start, limit))


@router.post("/timeline", response_model=R.Timeline)
def posted_timeline(body: TimelineRequest, timelines: Replays) -> JSON:
    """The timeline of a posted record (what ``opsgym run --out`` or GET .../record wrote),
    as ``GET /api/episodes/{id}/timeline`` gives a stored one's.
    """
    return JSON(window(timelines.of(body.record), body.start, body.limit))


@router.get("/episodes/{episode_id}/replay", response_model=R.ReplayCheck)
def replay_episode(episode_id: StoredId, db: Store) -> JSON:
    """Replay a stored episode from its calls and say whether it matches."""
    return grade(GradeRequest(record=db.episode_record(episode_id)))
