"""The REST face under ``/api``: worlds, sessions, the store and evaluations.

Routes are thin: they check the body (pydantic, ``extra="forbid"``), call the session manager,
the store or the harness, and shape the answer. What a running session returns is
:meth:`~opsgym.server.sessions.Session.public`; its record (the truth, marked
``truth_included``) only once it has ended.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anyio
from fastapi import APIRouter, Path, Query, Request, status

from opsgym.agents.base import policy_names
from opsgym.core.errors import OpsgymError
from opsgym.core.registry import spec, specs
from opsgym.core.scenarios import families
from opsgym.evaluation.paired import criterion as criterion_of
from opsgym.evaluation.paired import pair
from opsgym.server import responses as R
from opsgym.server.models import (
    EvaluationStart,
    ForcedSessionCreate,
    GradeRequest,
    SessionCreate,
    SessionStep,
    TimelineRequest,
)
from opsgym.server.openenv import JSON, tools_of
from opsgym.server.policies import check_episode, check_policy, role_of
from opsgym.server.sessions import Session, SessionManager, told
from opsgym.server.timeline import Timelines, lies_view, window

SPLITS = ("train", "dev", "test")


class Missing(OpsgymError, LookupError):
    """What the request names does not exist here (404)."""


class Conflict(OpsgymError):
    """The request is well formed but the resource is not in a state to take it (409)."""


def describe_env(name: str) -> dict[str, Any]:
    """A world as a client needs it: scenarios by split, policies, tools, whether levelled."""
    s = spec(name)
    return {
        "name": s.name,
        "gym_id": s.gym_id,
        "summary": s.summary,
        "max_steps": s.max_steps,
        "scenarios": [
            {
                "name": sc.name,
                "description": sc.description,
                "held_out": sc.held_out,
                "mixture": sc.mixture,
                "splits": [sp for sp in SPLITS if sc.name in families(s.scenarios, sp)],
            }
            for sc in s.scenarios
        ],
        "policies": policy_names(s.name),
        "tools": tools_of(s.name),
        "outcomes": sorted(s.outcome_rewards),
        "safe_outcomes": sorted(s.safe_outcomes),
        "harmful_outcomes": sorted(s.harmful_outcomes),
        "curriculum": s.curriculum is not None,
    }


def _step_entry(session: Session, index: int) -> dict[str, Any]:
    event = session.episode.events[index]
    entry = told(event)
    entry["done"] = event["done"]
    return entry


class Jobs:
    """Evaluations started over HTTP, run one at a time in a background thread."""

    def __init__(self, db: str | None, runs_dir: str | None = None):
        self.db = db
        self.runs_dir = runs_dir
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="opsgym-eval")
        self.jobs: dict[str, dict[str, Any]] = {}
        self.verifications: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def start(self, body: EvaluationStart) -> dict[str, Any]:
        """Check ``body`` and queue its evaluation; the job's first state."""
        from opsgym.evaluation.harness import default_name
        from opsgym.evaluation.runner import EvalConfig, check

        cfg = check(
            EvalConfig(
                body.env,
                tuple(body.policies),
                tuple(body.scenarios),
                body.split,
                body.episodes,
                body.trials,
                dict(body.config),
                None,
                self.runs_dir,
            )
        )
        name = body.name or default_name(cfg)
        with self._lock:
            job = self.jobs.get(name)
            if job is not None and job["status"] in ("queued", "running"):
                raise Conflict(f"evaluation {name!r} is already {job['status']}")
            job = {"name": name, "status": "queued", "done": 0, "total": None, "error": None}
            job["started_at"] = time.time()
            self.jobs[name] = job
        self.pool.submit(self._run, job, cfg)
        return dict(job)

    def _run(self, job: dict[str, Any], cfg: Any) -> None:
        from opsgym.evaluation.harness import evaluate

        def progress(stream: Any, total: int) -> Any:
            job["total"], job["status"] = total, "running"
            for item in stream:
                job["done"] += 1
                yield item

        try:
            evaluate(
                cfg.env,
                cfg.policies,
                cfg.scenarios,
                split=cfg.split,
                episodes=cfg.episodes,
                trials=cfg.trials,
                config=cfg.config,
                db=self.db,
                name=job["name"],
                progress=progress,
                runs_dir=cfg.runs_dir,
            )
            job["status"] = "done"
        except Exception as exc:  # noqa: BLE001 -- a job's failure is its status, not the server's
            job["status"], job["error"] = "failed", f"{type(exc).__name__}: {exc}"
        job["finished_at"] = time.time()

    def verify(self, name: str, status: str) -> dict[str, Any]:
        """Queue a replay of every stored episode of evaluation ``name`` (stored ``status``)
        (what ``opsgym eval --verify`` does); the verification's first state.
        """
        with self._lock:
            job = self.jobs.get(name)
            if status == "running" or (job is not None and job["status"] in ("queued", "running")):
                raise Conflict(f"evaluation {name!r} is running: its episodes still change")
            check = self.verifications.get(name)
            if check is not None and check["status"] in ("queued", "running"):
                raise Conflict(f"evaluation {name!r} is already being verified ({check['status']})")
            check = {"name": name, "status": "queued", "error": None, "result": None}
            check["started_at"] = time.time()
            self.verifications[name] = check
        self.pool.submit(self._verify, check)
        return dict(check)

    def _verify(self, check: dict[str, Any]) -> None:
        from opsgym.evaluation.verify import verify

        check["status"] = "running"
        try:
            found = verify(check["name"], self.db)
            check["result"] = {
                "total": found.total,
                "matched": found.matched,
                "exit_code": found.exit_code,
                "problems": found.problems,
            }
            check["status"] = "done"
        except Exception as exc:  # noqa: BLE001 -- a job's failure is its status, not the server's
            check["status"], check["error"] = "failed", f"{type(exc).__name__}: {exc}"
        check["finished_at"] = time.time()

    def close(self) -> None:
        """Drop queued jobs (a running one ends with the process)."""
        self.pool.shutdown(wait=False, cancel_futures=True)


def router(  # noqa: C901 -- one function per route
    manager: SessionManager, settings: Any, jobs: Jobs, timelines: Timelines | None = None
) -> APIRouter:
    """Every ``/api`` route (``timelines``: where episodes replayed are kept)."""
    api = APIRouter(prefix="/api")
    timelines = Timelines() if timelines is None else timelines
    create_model = ForcedSessionCreate if settings.allow_overrides else SessionCreate

    def store() -> Any:
        if manager.writer is None:
            raise Conflict("this server has no store")
        return manager.writer.store

    # -- worlds ---------------------------------------------------------------------------------

    @api.get("/envs", tags=["worlds"], response_model=list[R.EnvInfo])
    def list_envs() -> JSON:
        """Every world, with its scenarios, policies and tool schemas."""
        return JSON([describe_env(name) for name in specs()])

    @api.get("/envs/{env}", tags=["worlds"], response_model=R.EnvInfo)
    def get_env(env: str) -> JSON:
        """One world."""
        return JSON(describe_env(spec(env).name))

    @api.get("/envs/{env}/tasks", tags=["worlds"], response_model=list[R.ScenarioInfo])
    def tasks(env: str, split: str | None = Query(None, pattern="^(train|dev|test)$")) -> JSON:
        """The task list: the world's scenarios (those of one split if given)."""
        scenarios = describe_env(spec(env).name)["scenarios"]
        if split is not None:
            scenarios = [sc for sc in scenarios if split in sc["splits"]]
        return JSON(scenarios)

    @api.get("/envs/{env}/curriculum", tags=["worlds"], response_model=R.Curriculum)
    def curriculum(env: str) -> JSON:
        """The server's curriculum for a levelled world: its state and its events."""
        try:
            c = manager.curriculum(spec(env).name)
        except ValueError as exc:
            raise Missing(str(exc)) from None
        return JSON({"state": c.state(), "events": list(c.events)})

    @api.post("/grade", tags=["store"], response_model=R.ReplayCheck)
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

    # -- sessions -------------------------------------------------------------------------------

    def create_session(body: SessionCreate, request: Request) -> JSON:
        """Start an episode in a new session (the agent token: no dev or test seed of its
        choosing, no curriculum; see :func:`opsgym.server.policies.check_episode`).
        """
        check_episode(role_of(request.scope), body.seed, curriculum=body.curriculum)
        session = manager.create(
            body.env,
            body.scenario,
            body.seed,
            config=body.config,
            split=body.split,
            overrides=getattr(body, "overrides", None),
            curriculum=body.curriculum,
        )
        out = session.public()
        out["tools"] = tools_of(session.episode.env)
        return JSON(out, status_code=status.HTTP_201_CREATED)

    # The model is chosen at run time (overrides only on leak-test servers); with postponed
    # annotations FastAPI reads the string, so the class is set here.
    create_session.__annotations__["body"] = create_model
    api.post(
        "/sessions",
        tags=["sessions"],
        status_code=status.HTTP_201_CREATED,
        response_model=R.NewSession,
    )(create_session)

    @api.get("/sessions", tags=["sessions"], response_model=list[R.SessionBrief])
    def list_sessions() -> JSON:
        """Every open session, briefly."""
        return JSON(
            [
                {
                    "id": s.id,
                    "kind": s.kind,
                    "env": s.episode.env,
                    "scenario": s.episode.scenario.name,
                    "steps": s.episode.steps,
                    "done": s.done,
                    "created_at": s.created_at,
                }
                for s in list(manager.sessions.values())
            ]
        )

    @api.get("/sessions/{session_id}", tags=["sessions"], response_model=R.SessionView)
    def get_session(session_id: str) -> JSON:
        """One session: what its agent may see, and the verdict once it has ended."""
        return JSON(manager.get(session_id).public())

    @api.post("/sessions/{session_id}/step", tags=["sessions"], response_model=R.Stepped)
    async def step_session(session_id: str, body: SessionStep, request: Request) -> JSON:
        """One call (yours, or a named policy's), or a policy's calls to the end.

        Which policies a client may name depends on its token (:mod:`opsgym.server.policies`).
        """
        if body.policy is not None:
            check_policy(body.policy, role_of(request.scope))
        session = manager.get(session_id)
        if session.kind != "rest":
            raise Conflict(f"session {session_id} belongs to its WebSocket")
        if not session.busy.acquire(blocking=False):
            raise Conflict(f"session {session_id} is busy with another request")
        try:
            first = session.episode.steps
            if body.tool is not None:
                session.step(body.tool, body.args)
            elif body.to_end:
                await anyio.to_thread.run_sync(
                    lambda: session.play(body.policy, to_end=True, runs_dir=settings.runs_dir)
                )
            else:
                session.play(body.policy, to_end=False, runs_dir=settings.runs_dir)
            if session.done:
                manager.settle(session)
            steps = [_step_entry(session, i) for i in range(first, session.episode.steps)]
            return JSON({"steps": steps, "session": session.public(history=False)})
        finally:
            session.busy.release()

    @api.get("/sessions/{session_id}/record", tags=["sessions"], response_model=R.SessionRecord)
    def session_record(session_id: str) -> JSON:
        """The ended episode's record: every call and, marked as such, the truth after it."""
        session = manager.get(session_id)
        if not session.done:
            raise Conflict(
                f"session {session_id} is still running (step {session.episode.steps}); the "
                "record, which holds the truth, is readable once the episode has ended"
            )
        ep = session.episode
        record = ep.record()
        return JSON(
            {
                "truth_included": True,
                "verdict": {**ep.verdict.to_dict(), "failed": ep.verdict.failed},
                "record": record,
                "lies": lies_view(timelines.of(record)),
            }
        )

    @api.delete("/sessions/{session_id}", tags=["sessions"], response_model=R.Closed)
    def delete_session(session_id: str) -> JSON:
        """Close a session (an ended episode is saved; a running one is dropped)."""
        session = manager.close(session_id)
        return JSON({"id": session.id, "closed": True, "saved": session.stored})

    # -- the store ------------------------------------------------------------------------------

    @api.get("/episodes", tags=["store"], response_model=list[R.EpisodeRow])
    def list_episodes(
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
        db = store()
        rows = db.episodes(**filters, order=order, limit=limit, offset=offset)
        total = db.count_episodes(**filters)
        return JSON(
            [{**r, "created_at": r["created_at"].isoformat()} for r in rows],
            headers={TOTAL_HEADER: str(total)},
        )

    # Store ids are 64-bit: a larger one is a 422 here, not an overflow in the database.
    stored_id = Path(ge=0, le=2**63 - 1, description="A stored episode's id.")

    @api.get("/episodes/{episode_id}", tags=["store"], response_model=R.StoredEpisode)
    def get_episode(episode_id: int = stored_id) -> JSON:
        """One stored episode's record (truth included: it has ended), and what became of each
        lie it told: trusted or reconciled, at which step and by which call (by replay).
        """
        record = store().episode_record(episode_id)
        return JSON(
            {
                "truth_included": True,
                "record": record,
                "lies": lies_view(timelines.of(record)),
            }
        )

    first_step = Query(0, ge=0, le=2**31, description="Steps to skip (0: from the first).")
    window_size = Query(50, ge=1, le=1000, description="Most steps to show.")

    @api.get("/episodes/{episode_id}/timeline", tags=["store"], response_model=R.Timeline)
    def episode_timeline(
        episode_id: int = stored_id, start: int = first_step, limit: int = window_size
    ) -> JSON:
        """A stored episode replayed: whether it matches, the family it drew, what became of
        each lie, and for the steps ``start + 1`` to ``start + limit`` what the agent was told
        and what it saw after (its observation). Replays are cached by the record's digest.
        """
        record = store().episode_record(episode_id)
        return JSON(window(timelines.of(record), start, limit))

    @api.post("/timeline", tags=["store"], response_model=R.Timeline)
    def posted_timeline(body: TimelineRequest) -> JSON:
        """The timeline of a posted record (what ``opsgym run --out`` or GET .../record wrote),
        as ``GET /api/episodes/{id}/timeline`` gives a stored one's.
        """
        return JSON(window(timelines.of(body.record), body.start, body.limit))

    @api.get("/episodes/{episode_id}/replay", tags=["store"], response_model=R.ReplayCheck)
    def replay_episode(episode_id: int = stored_id) -> JSON:
        """Replay a stored episode from its calls and say whether it matches."""
        return grade(GradeRequest(record=store().episode_record(episode_id)))

    @api.get("/evaluations", tags=["store"], response_model=list[R.EvaluationBrief])
    def list_evaluations() -> JSON:
        """Every stored evaluation, with the running jobs' progress."""
        out = []
        for e in store().evaluations():
            row = {**e, "created_at": e["created_at"].isoformat()}
            row["updated_at"] = e["updated_at"].isoformat()
            row.pop("aggregates", None)
            row["job"] = jobs.jobs.get(e["name"])
            row["verify"] = jobs.verifications.get(e["name"])
            out.append(row)
        return JSON(out)

    @api.get("/evaluations/{name}", tags=["store"], response_model=R.EvaluationView)
    def get_evaluation(name: str) -> JSON:
        """One evaluation with its aggregates, its job's progress if started here, and its
        last verification here (``POST /api/evaluations/{name}/verify``).
        """
        job = jobs.jobs.get(name)
        verify = jobs.verifications.get(name)
        try:
            e = store().evaluation(name)
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

    @api.post(
        "/evaluations/{name}/verify",
        tags=["store"],
        status_code=status.HTTP_202_ACCEPTED,
        response_model=R.VerifyJob,
    )
    def verify_evaluation(name: str) -> JSON:
        """Replay every stored episode of the evaluation in the background (as ``opsgym eval
        --verify``); its result shows in ``GET /api/evaluations/{name}`` under ``verify``.
        """
        found = store().evaluation(name)
        return JSON(jobs.verify(name, found["status"]), status_code=status.HTTP_202_ACCEPTED)

    criterion = Query(
        "safe",
        min_length=1,
        max_length=64,
        description="What counts: safe (a safe outcome), accepted, or an outcome's name.",
    )

    def compare(
        side_a: tuple[str, str | None], side_b: tuple[str, str | None], outcome: str
    ) -> dict[str, Any]:
        db = store()
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
        paired = pair(*rows, criterion_of(outcome, s.safe_outcomes))
        return {"a": sides[0], "b": sides[1], "criterion": outcome, **paired}

    @api.get("/evaluations/{name}/pairs", tags=["store"], response_model=R.Comparison)
    def pairs(
        name: str,
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
        outcome: str = criterion,
    ) -> JSON:
        """Policies A and B on the same seeds (scenario, seed, trial): how many pairs both,
        only A, only B or neither met the criterion, the exact McNemar p-value, and every
        pair's two episode ids (``GET /api/episodes/{id}``). Side A is this evaluation's
        policy ``a``; side B is policy ``b`` of the same evaluation, or of evaluation
        ``versus`` to compare two evaluations.
        """
        if versus is None and (a is None or b is None or a == b):
            raise ValueError("name two policies of the evaluation (a and b), or give versus")
        return JSON(compare((name, a), (versus or name, b), outcome))

    @api.post(
        "/evaluations",
        tags=["store"],
        status_code=status.HTTP_202_ACCEPTED,
        response_model=R.EvaluationJob,
    )
    def start_evaluation(body: EvaluationStart) -> JSON:
        """Start a small evaluation in the background; follow it: GET /api/evaluations/{name}.

        Trained policies are named as runs in the server's runs folder (``ppo:runs:NAME``).
        """
        store()
        for policy in body.policies:
            check_policy(policy, "operator")
        size = len(body.policies) * len(body.scenarios) * body.episodes * body.trials
        if size > settings.max_eval_episodes:
            raise ValueError(
                f"an evaluation over HTTP plays at most {settings.max_eval_episodes} episodes; "
                f"this one would play {size} (use `opsgym eval` for more)"
            )
        return JSON(jobs.start(body), status_code=status.HTTP_202_ACCEPTED)

    # A request tries the routes in order (a regex and scope bookkeeping each, some microseconds):
    # the one a client calls every step goes first. The docs list paths by tag.
    api.routes.sort(key=lambda route: getattr(route, "path", "") != HOT_ROUTE)
    return api


TOTAL_HEADER = "X-Total-Count"
"""The header of ``GET /api/episodes`` that counts every matching episode, past the page."""

HOT_ROUTE = "/api/sessions/{session_id}/step"
"""The REST route called on every step, matched first."""
