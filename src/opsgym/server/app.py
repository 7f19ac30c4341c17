"""The application: OpenEnv's protocol and the REST face on one FastAPI app, safe by default.

* **Who may enter** (:class:`Guard`). Loopback binds need no token, but then a request's
  ``Host`` must name this machine (DNS rebinding); any other bind needs a token
  (:class:`~opsgym.server.settings.ServerSettings` refuses to start without one), and with a token
  every route but ``/health`` wants ``Authorization: Bearer <token>`` or HTTP Basic with the token
  as password (the WebSocket handshake too; a wrong or missing one is a 401, or a refused
  handshake). A browser's write from a foreign ``Origin`` is a 403. CORS is closed unless origins
  are configured. What a policy named over HTTP may load is :mod:`opsgym.server.policies`'s rule.
* **What may come in.** Bodies over ``max_body_bytes`` are a 413 before they are read whole;
  every body is a pydantic model with ``extra="forbid"``, so a bad one is a 422 naming the field;
  an unknown world, scenario, policy, session or episode is a 404 saying what exists; a full
  server is a 503 with ``Retry-After``. Domain errors never become a 5xx.
* **Sessions** are isolated, capped and reaped when idle (:mod:`opsgym.server.sessions`);
  finished episodes are saved to the store by one writer thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from pydantic import ValidationError
from starlette.exceptions import HTTPException
from starlette.middleware.cors import CORSMiddleware

import opsgym
from opsgym.core.errors import OpsgymError, PolicyRefusedError, UnknownNameError
from opsgym.server import responses, routes, training, ui, worlds
from opsgym.server.errors import Conflict, Missing
from opsgym.server.guard import Guard
from opsgym.server.jobs import Jobs
from opsgym.server.models import TooDeepError
from opsgym.server.openenv import JSON, OpenEnvFace, errors
from opsgym.server.policies import AgentRefusedError
from opsgym.server.sessions import (
    CapacityError,
    SessionManager,
    SessionNotFound,
    SessionOver,
    StoreWriter,
)
from opsgym.server.settings import ServerSettings
from opsgym.server.supervisor import Supervisor
from opsgym.server.timeline import Timelines
from opsgym.store.errors import NotFoundError

log = logging.getLogger("opsgym.server")

API_VERSION = "1.0.0"
"""The HTTP API's version (OpenAPI ``info.version``; OpenEnv reads it as its protocol profile).
The package's version is in ``/metadata``."""

RETRY_AFTER_S = 5
"""What a 503 tells a client to wait before trying again."""

SHUTDOWN_S = 5
"""How long a stopping server waits for open responses (a training job's live stream lasts as
long as the job) before it closes them."""


def _handlers(app: FastAPI) -> None:
    def detail(status: int, message: str, **headers: str) -> JSON:
        return JSON({"detail": message}, status_code=status, headers=headers or None)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSON:
        return JSON({"detail": exc.errors()}, status_code=422)

    @app.exception_handler(HTTPException)
    async def unparsed(request: Request, exc: HTTPException) -> Response:
        # FastAPI's "There was an error parsing the body" (400) hides why; past ~1,000 levels
        # Python's json gives up on the nesting, which the message then names (as TooDeepError
        # does for a body that parsed).
        if isinstance(exc.__cause__, RecursionError):
            return detail(422, str(TooDeepError("body")))
        return await http_exception_handler(request, exc)

    @app.exception_handler(ValidationError)
    async def invalid_inner(request: Request, exc: ValidationError) -> JSON:
        return JSON({"detail": errors(exc)}, status_code=422)

    @app.exception_handler(CapacityError)
    async def full(request: Request, exc: CapacityError) -> JSON:
        return detail(503, str(exc), **{"Retry-After": str(RETRY_AFTER_S)})

    @app.exception_handler(UnknownNameError)
    async def unknown(request: Request, exc: UnknownNameError) -> JSON:
        return detail(404, str(exc))

    @app.exception_handler(SessionNotFound)
    @app.exception_handler(Missing)
    @app.exception_handler(NotFoundError)
    async def missing(request: Request, exc: Exception) -> JSON:
        return detail(404, str(exc))

    @app.exception_handler(PolicyRefusedError)
    @app.exception_handler(AgentRefusedError)
    async def refused(request: Request, exc: Exception) -> JSON:
        return detail(403, str(exc))

    @app.exception_handler(SessionOver)
    @app.exception_handler(Conflict)
    async def conflict(request: Request, exc: Exception) -> JSON:
        return detail(409, str(exc))

    @app.exception_handler(OpsgymError)
    @app.exception_handler(ValueError)
    @app.exception_handler(TypeError)
    async def bad_value(request: Request, exc: Exception) -> JSON:
        return detail(422, str(exc))


def create_app(settings: ServerSettings | None = None, **overrides: Any) -> FastAPI:
    """The server's ASGI app (``opsgym serve`` runs it under Uvicorn).

    Args:
        settings: Its settings (``ServerSettings()`` reads ``OPSGYM_*`` variables).
        **overrides: Fields of :class:`ServerSettings` to set instead of ``settings``.
    """
    if settings is None:
        settings = ServerSettings(**overrides)
    elif overrides:
        settings = settings.model_copy(update=overrides)

    writer = StoreWriter(settings.db)
    manager = SessionManager(
        settings.max_sessions,
        settings.idle_timeout_s,
        writer,
        allow_overrides=settings.allow_overrides,
    )
    jobs = Jobs(settings.db, settings.runs_dir)
    face = OpenEnvFace(manager, settings)
    supervisor = Supervisor(settings)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        reaper = asyncio.create_task(_reap(manager, settings.reap_interval_s))
        await asyncio.to_thread(supervisor.open)
        try:
            yield
        finally:
            await asyncio.to_thread(supervisor.close)
            reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reaper
            jobs.close()
            writer.close()

    app = FastAPI(
        title="opsgym",
        version=API_VERSION,
        description=(
            "Production-operations worlds judged on the truth. OpenEnv's protocol (/ws, /reset, "
            "/step, /state, /schema, /metadata, /health, /mcp) and REST sessions, the store and "
            "evaluations under /api."
        ),
        lifespan=lifespan,
    )
    # What the routes ask for as dependencies (opsgym.server.routes.deps), and what tests read.
    app.state.settings, app.state.manager, app.state.writer = settings, manager, writer
    app.state.jobs, app.state.timelines, app.state.training = jobs, Timelines(), supervisor
    _handlers(app)
    app.include_router(face.router())
    for router in routes.routers(allow_overrides=settings.allow_overrides):
        app.include_router(router)
    app.include_router(training.router(supervisor, settings))
    app.include_router(worlds.router(app.router.routes))
    _about(app, settings)
    ui.mount(app)
    app.add_middleware(
        Guard,
        token=settings.token,
        agent_token=settings.agent_token,
        max_body=settings.max_body_bytes,
        allowed_hosts=frozenset(settings.allowed_hosts),
        cors_origins=frozenset(settings.cors_origins),
    )
    if settings.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.cors_origins,
            allow_methods=["GET", "POST", "DELETE"],
            allow_headers=["authorization", "content-type"],
        )
    return app


def _about(app: FastAPI, settings: ServerSettings) -> None:
    @app.get("/api/server", tags=["server"], response_model=responses.ServerInfo)
    def about() -> JSON:
        """What this server is and how it is guarded."""
        return JSON(
            {
                "api_version": API_VERSION,
                "package_version": opsgym.__version__,
                "auth": "token" if settings.token else "loopback",
                "agent_token": settings.agent_token is not None,
                "training": settings.training,
                "allow_overrides": settings.allow_overrides,
                "workbench": ui.built(),
                "max_sessions": settings.max_sessions,
                "max_eval_episodes": settings.max_eval_episodes,
            }
        )


async def _reap(manager: SessionManager, every: float) -> None:
    while True:
        await asyncio.sleep(every)
        sockets = {sid: s.socket for sid, s in manager.sessions.items() if s.socket is not None}
        for sid in manager.reap():
            socket = sockets.get(sid)
            if socket is not None:
                with contextlib.suppress(Exception):
                    await socket.close(code=1001, reason="idle")


def serve(settings: ServerSettings) -> None:
    """Run the server under Uvicorn until interrupted (what ``opsgym serve`` does)."""
    import uvicorn

    uvicorn.run(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        log_level="warning",
        ws_max_size=settings.max_message_bytes,
        ws_per_message_deflate=settings.ws_deflate,
        limit_concurrency=max(settings.max_sessions * 2, 64),
        timeout_graceful_shutdown=SHUTDOWN_S,
    )
