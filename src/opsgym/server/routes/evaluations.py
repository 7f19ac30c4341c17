"""``/api/evaluations``: stored evaluations, small ones started here, their verification by
replay, and two policies compared on the same seeds.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, status

from opsgym.core.errors import OpsgymError
from opsgym.core.registry import spec
from opsgym.evaluation.paired import criterion as criterion_of
from opsgym.evaluation.paired import pair
from opsgym.server import responses as R
from opsgym.server.errors import Missing
from opsgym.server.models import EvaluationStart
from opsgym.server.openenv import JSON
from opsgym.server.policies import check_policy
from opsgym.server.routes.deps import EvalJobs, Settings, Store

router = APIRouter(prefix="/api/evaluations", tags=["store"])


@router.get("", response_model=list[R.EvaluationBrief])
def list_evaluations(db: Store, jobs: EvalJobs) -> JSON:
    """Every stored evaluation, with the running jobs' progress."""
    out = []
    running = {name: _copy(job) for name, job in list(jobs.jobs.items())}  # before the store
    checks = {name: _copy(job) for name, job in list(jobs.verifications.items())}
    for e in db.evaluations():
        row = {**e, "created_at": e["created_at"].isoformat()}
        row["updated_at"] = e["updated_at"].isoformat()
        row.pop("aggregates", None)
        row["job"] = running.get(e["name"])
        row["verify"] = checks.get(e["name"])
        out.append(row)
    return JSON(out)


@router.get("/{name}", response_model=R.EvaluationView)
def get_evaluation(name: str, db: Store, jobs: EvalJobs) -> JSON:
    """One evaluation with its aggregates, its job's progress if started here, and its
    last verification here (``POST /api/evaluations/{name}/verify``).
    """
    # Copies taken before the store is read: the job's dict changes under a running job, and a
    # job shown ``done`` must not sit beside the store's ``running`` read before it ended.
    job = _copy(jobs.jobs.get(name))
    verify = _copy(jobs.verifications.get(name))
    try:
        e = db.evaluation(name)
    except OpsgymError:
        if job is None:
            raise
        return JSON(
            {
                "name": name,
                "status": job["status"],
                "job": job,
                "aggregates": None,
                "verify": verify,
            }
        )
    row = {**e, "created_at": e["created_at"].isoformat()}
    row["updated_at"] = e["updated_at"].isoformat()
    row["job"], row["verify"] = job, verify
    return JSON(row)


def _copy(state: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if state is None else dict(state)


@router.post("/{name}/verify", status_code=status.HTTP_202_ACCEPTED, response_model=R.VerifyJob)
def verify_evaluation(name: str, db: Store, jobs: EvalJobs) -> JSON:
    """Replay every stored episode of the evaluation in the background (as ``opsgym eval
    --verify``); its result shows in ``GET /api/evaluations/{name}`` under ``verify``.
    """
    found = db.evaluation(name)
    return JSON(jobs.verify(name, found["status"]), status_code=status.HTTP_202_ACCEPTED)


@router.get("/{name}/pairs", response_model=R.Comparison)
def pairs(
    name: str,
    db: Store,
    a: str | None = Query(
        None,
        max_length=128,
        description="Policy A, of this evaluation (needed if it holds several).",
    ),
    b: str | None = Query(
        None,
        max_length=128,
        description="Policy B, of this evaluation or of versus (needed if it holds several).",
    ),
    versus: str | None = Query(
        None, max_length=200, description="Side B's evaluation (default: this one)."
    ),
    outcome: str = Query(
        "safe",
        min_length=1,
        max_length=64,
        description="What counts: safe (a safe outcome), accepted, or an outcome's name.",
    ),
) -> JSON:
    """Policies A and B on the same seeds (scenario, seed, trial): how many pairs both,
    only A, only B or neither met the criterion, the exact McNemar p-value, and every
    pair's two episode ids (``GET /api/episodes/{id}``). Side A is this evaluation's
    policy ``a``; side B is policy ``b`` of the same evaluation, or of evaluation
    ``versus`` to compare two evaluations.
    """
    if versus is None and (a is None or b is None or a == b):
        raise ValueError("name two policies of the evaluation (a and b), or give versus")
    return JSON(_compare(db, (name, a), (versus or name, b), outcome))


@router.post("", status_code=status.HTTP_202_ACCEPTED, response_model=R.EvaluationJob)
def start_evaluation(body: EvaluationStart, db: Store, jobs: EvalJobs, settings: Settings) -> JSON:
    """Start a small evaluation in the background; follow it: GET /api/evaluations/{name}.

    Trained policies are named as runs in the server's runs folder (``ppo:runs:NAME``).
    """
    for policy in body.policies:
        check_policy(policy, "operator")
    size = len(body.policies) * len(body.scenarios) * body.episodes * body.trials
    if size > settings.max_eval_episodes:
        raise ValueError(
            f"an evaluation over HTTP plays at most {settings.max_eval_episodes} episodes; "
            f"this one would play {size} (use `opsgym eval` for more)"
        )
    return JSON(jobs.start(body), status_code=status.HTTP_202_ACCEPTED)


def _compare(
    db: Any, side_a: tuple[str, str | None], side_b: tuple[str, str | None], outcome: str
) -> dict[str, Any]:
    """Two sides, each an (evaluation, policy), paired on their seeds under ``outcome``."""
    rows, envs, sides = [], set(), []
    for evaluation, policy in (side_a, side_b):
        found = db.episodes(evaluation=evaluation, policy=policy, limit=None)
        policies = sorted({r["policy"] for r in found})
        if not found:
            held = sorted({r["policy"] for r in db.episodes(evaluation=evaluation)})
            raise Missing(
                f"evaluation {evaluation!r} holds no episodes of policy {policy!r} "
                f"(it holds {', '.join(held) or 'none'})"
            )
        if policy is None and len(policies) > 1:
            raise ValueError(
                f"evaluation {evaluation!r} holds several policies "
                f"({', '.join(policies)}): name one"
            )
        rows.append(found)
        envs |= {r["env"] for r in found}
        sides.append({"evaluation": evaluation, "policy": policies[0]})
    if len(envs) != 1:
        raise ValueError(f"the two sides are of different worlds ({', '.join(sorted(envs))})")
    s = spec(envs.pop())
    if outcome not in ("safe", "accepted") and outcome not in s.outcome_rewards:
        raise ValueError(
            f"outcome must be safe, accepted or one of {s.name}'s outcomes "
            f"({', '.join(sorted(s.outcome_rewards))}); got {outcome!r}"
        )
    paired = pair(rows[0], rows[1], criterion_of(outcome, s.safe_outcomes))
    return {"a": sides[0], "b": sides[1], "criterion": outcome, **paired}
