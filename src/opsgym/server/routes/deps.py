"""What the routes share, as FastAPI dependencies: the app's state, read per request.

:func:`opsgym.server.app.create_app` leaves one of each on ``app.state`` (``settings``,
``manager``, ``jobs``, ``timelines``); a route names what it needs by type, e.g.
``manager: Manager``, and never closes over the app. Dependencies that only read ``app.state``
are ``async`` so that FastAPI calls them on the event loop rather than in its thread pool;
:func:`store` may open the database, so it runs in the pool.

One route reads ``app.state`` itself: ``POST /api/sessions/{id}/step``, the one every REST step
takes, where FastAPI's solving of each dependency per request (about 69,000 instructions) would
cost a fifth of the step.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Request

from opsgym.server.errors import Conflict
from opsgym.server.jobs import Jobs
from opsgym.server.policies import role_of
from opsgym.server.sessions import SessionManager
from opsgym.server.settings import ServerSettings
from opsgym.server.timeline import Timelines


async def settings(request: Request) -> ServerSettings:
    """The server's settings."""
    found: ServerSettings = request.app.state.settings
    return found


async def sessions(request: Request) -> SessionManager:
    """The session manager: every open session, the capacity limit, the curricula."""
    found: SessionManager = request.app.state.manager
    return found


async def jobs(request: Request) -> Jobs:
    """The evaluations started over HTTP."""
    found: Jobs = request.app.state.jobs
    return found


async def timelines(request: Request) -> Timelines:
    """Where episodes replayed for their timelines are kept."""
    found: Timelines = request.app.state.timelines
    return found


async def role(request: Request) -> str:
    """Who is asking: ``operator`` or ``agent`` (:func:`opsgym.server.policies.role_of`)."""
    return role_of(request.scope)


def store(manager: Annotated[SessionManager, Depends(sessions)]) -> Any:
    """The store, for reads (opened on first use).

    Raises:
        Conflict: this server has no store.
    """
    if manager.writer is None:
        raise Conflict("this server has no store")
    return manager.writer.store


Settings = Annotated[ServerSettings, Depends(settings)]
Manager = Annotated[SessionManager, Depends(sessions)]
EvalJobs = Annotated[Jobs, Depends(jobs)]
Replays = Annotated[Timelines, Depends(timelines)]
Role = Annotated[str, Depends(role)]
Store = Annotated[Any, Depends(store)]
