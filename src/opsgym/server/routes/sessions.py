"""``/api/sessions``: episodes played over REST, one call (or one policy's calls) a request.

What a running session returns is :meth:`~opsgym.server.sessions.Session.public`; its record
(the truth, marked ``truth_included``) only once it has ended.
"""

from __future__ import annotations

import inspect
from typing import Any

import anyio
from fastapi import APIRouter, Request, status
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError

from opsgym.server import responses as R
from opsgym.server.errors import Conflict
from opsgym.server.models import ForcedSessionCreate, GradeRequest, SessionCreate, SessionStep
from opsgym.server.openenv import JSON, errors, tools_of
from opsgym.server.policies import AgentRefusedError, check_episode, check_policy, role_of
from opsgym.server.routes.deps import Manager, Replays, Role
from opsgym.server.routes.episodes import grade
from opsgym.server.sessions import Session, told
from opsgym.server.timeline import lies_view

router = APIRouter(prefix="/api/sessions", tags=["sessions"])


def creating(allow_overrides: bool) -> APIRouter:
    """``POST /api/sessions``, whose body takes ``overrides`` only on a leak-test server (a
    router of its own, as the body's model is the server's choice).
    """
    found = APIRouter(prefix="/api/sessions", tags=["sessions"])
    found.add_api_route(
        "",
        create_forced_session if allow_overrides else create_session,
        methods=["POST"],
        name="create_session",  # one operation id, whichever model
        status_code=status.HTTP_201_CREATED,
        response_model=R.NewSession,
        description=inspect.cleandoc(create_session.__doc__ or ""),  # the same docs either way
    )
    return found


def create_session(body: SessionCreate, role: Role, manager: Manager) -> JSON:
    """Start an episode in a new session (the agent token: no dev or test seed of its
    choosing, no curriculum; see :func:`opsgym.server.policies.check_episode`).
    """
    check_episode(role, body.seed, curriculum=body.curriculum)
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


def create_forced_session(body: ForcedSessionCreate, role: Role, manager: Manager) -> JSON:
    """:func:`create_session` on a leak-test server: the body may force hidden facts."""
    return create_session(body, role, manager)


@router.get("", response_model=list[R.SessionBrief])
def list_sessions(manager: Manager) -> JSON:
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


@router.get("/{session_id}", response_model=R.SessionView)
def get_session(session_id: str, manager: Manager) -> JSON:
    """One session: what its agent may see, and the verdict once it has ended."""
    return JSON(manager.get(session_id).public())


@router.post("/{session_id}/step", response_model=R.Stepped)
async def step_session(session_id: str, body: SessionStep, request: Request) -> JSON:
    """One call (yours, or a named policy's), or a policy's calls to the end.

    Which policies a client may name depends on its token (:mod:`opsgym.server.policies`).
    """
    # The route every REST step takes reads the app's state itself: as dependencies, the three
    # cost a step a fifth more of the server's instructions (953,610 -> 1,151,286, callgrind),
    # as FastAPI solves each one anew per request.
    manager, settings = request.app.state.manager, request.app.state.settings
    if body.policy is not None:
        check_policy(body.policy, role_of(request.scope))
    session = manager.get(session_id)
    if session.kind != "rest":
        raise Conflict(f"session {session_id} belongs to its WebSocket")
    if body.strict and body.tool is not None:
        if role_of(request.scope) == "agent":
            # An agent's malformed call is recorded and costs `invalid`, as in every face: the
            # strict check is for a person at the workbench's form, not a way around the cost.
            raise AgentRefusedError("the agent token may not make strict calls")
        check_call(session, body.tool, body.args)
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


@router.get("/{session_id}/record", response_model=R.SessionRecord)
def session_record(session_id: str, manager: Manager, timelines: Replays) -> JSON:
    """The ended episode's record: every call and, marked as such, the truth after it."""
    session = manager.get(session_id)
    if not session.done:
        raise Conflict(
            f"session {session_id} is still running (step {session.episode.steps}); the "
            "record, which holds the truth, is readable once the episode has ended"
        )
    ep = session.episode
    record = ep.record()
    verdict = ep.verdict
    assert verdict is not None  # a done episode has been judged
    return JSON(
        {
            "truth_included": True,
            "verdict": {**verdict.to_dict(), "failed": verdict.failed},
            "record": record,
            "lies": lies_view(timelines.of(record)),
        }
    )


@router.get("/{session_id}/replay", response_model=R.ReplayCheck)
def session_replay(session_id: str, manager: Manager) -> JSON:
    """The ended episode's record judged again from its calls, as ``POST /api/grade`` judges a
    posted one. Here the record never leaves the server: a client's JSON may write ``30.0`` as
    ``30`` (JavaScript does), which changes the hash chain of a record posted back.
    """
    session = manager.get(session_id)
    if not session.done:
        raise Conflict(
            f"session {session_id} is still running (step {session.episode.steps}); its "
            "record is replayed once the episode has ended"
        )
    return grade(GradeRequest(record=session.episode.record()))


@router.delete("/{session_id}", response_model=R.Closed)
def delete_session(session_id: str, manager: Manager) -> JSON:
    """Close a session (an ended episode is saved; a running one is dropped)."""
    session = manager.close(session_id)
    return JSON({"id": session.id, "closed": True, "saved": session.stored})


HOT_ROUTE = "/api/sessions/{session_id}/step"
"""The REST route called on every step, matched first."""

# A request tries the routes in order (a regex and scope bookkeeping each, some microseconds):
# the one a client calls every step goes first (and this router first of the /api ones).
router.routes.sort(key=lambda route: getattr(route, "path", "") != HOT_ROUTE)


def check_call(session: Session, tool: str, args: dict[str, Any]) -> None:
    """Refuse a strict call that the world's tool schemas refuse, before the episode sees it:
    a person's slip at a form (the workbench's) costs the episode nothing, and the 422 names
    the field as any bad body's does. Only the schemas are read (public, the same for every
    episode of the world), so the refusal tells nothing of the episode.

    Raises:
        RequestValidationError: the world has no such tool, or the arguments do not fit it.
    """
    world = session.episode.world
    found = world.tools.get(tool)
    if found is None:
        message = f"the {session.episode.env} world has no tool {tool!r}; it has " + ", ".join(
            world.tools
        )
        raise RequestValidationError(
            [{"type": "value_error", "loc": ("body", "tool"), "msg": message, "input": tool}]
        )
    try:
        found.args.model_validate(args)
    except ValidationError as exc:
        raise RequestValidationError(
            [{**e, "loc": ("body", "args", *e["loc"])} for e in errors(exc)]
        ) from None


def _step_entry(session: Session, index: int) -> dict[str, Any]:
    event = session.episode.events[index]
    entry = told(event)
    entry["done"] = event["done"]
    return entry
