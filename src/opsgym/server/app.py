"""The application: OpenEnv's protocol and the REST face on one FastAPI app, safe by default.

* **Who may enter.** Loopback binds need nothing; any other bind needs a token
  (:class:`~opsgym.server.settings.ServerSettings` refuses to start without one), and with a token
  every route but ``/health`` wants ``Authorization: Bearer <token>`` (the WebSocket handshake
  too; a wrong or missing one is a 401, or a refused handshake). CORS is closed unless origins
  are configured.
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
import hmac
import ipaddress
import logging
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from opsgym.core.errors import OpsgymError, UnknownNameError
from opsgym.server import api
from opsgym.server.openenv import JSON, OpenEnvFace, errors
from opsgym.server.sessions import (
    CapacityError,
    SessionManager,
    SessionNotFound,
    SessionOver,
    StoreWriter,
)
from opsgym.server.settings import ServerSettings
from opsgym.store.errors import NotFoundError

log = logging.getLogger("opsgym.server")

AGENT_PATHS = (
    "/ws",
    "/reset",
    "/step",
    "/state",
    "/schema",
    "/metadata",
    "/mcp",
    "/api/envs",
    "/api/sessions",
)
"""What the agent token reaches (prefixes): the worlds and sessions, not the store."""


def _agent_may(scope: Scope) -> bool:
    """Whether the agent token reaches this request: the worlds, a session it holds the id of
    (not the list of everyone's sessions), never the store.
    """
    path = scope["path"]
    if path == "/api/sessions" and scope.get("method") != "POST":
        return False
    return path.startswith(AGENT_PATHS)


API_VERSION = "1.0.0"
"""The HTTP API's version (OpenAPI ``info.version``; OpenEnv reads it as its protocol profile).
The package's version is in ``/metadata``."""

RETRY_AFTER_S = 5
"""What a 503 tells a client to wait before trying again."""


def _remote(client: tuple[str, int] | None) -> bool:
    """Whether an ASGI ``client`` is an IP address off this machine (a name, such as Starlette
    TestClient's ``testclient``, or no client at all, as on a unix socket, is not).
    """
    if not client:
        return False
    try:
        ip = ipaddress.ip_address(client[0])
    except ValueError:
        return False
    return not (getattr(ip, "ipv4_mapped", None) or ip).is_loopback


class Guard:
    """Pure ASGI middleware: the bearer token, and the body size limit.

    Written as ASGI rather than as ``BaseHTTPMiddleware`` so that it costs microseconds per
    request and sees WebSocket handshakes too.
    """

    def __init__(
        self, app: ASGIApp, token: str | None, max_body: int, agent_token: str | None = None
    ):
        self.app = app
        self.expected = f"Bearer {token}".encode() if token else None
        self.agent = f"Bearer {agent_token}".encode() if agent_token else None
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check one request or handshake, then pass it on."""
        kind = scope["type"]
        if kind not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        if (self.expected is not None or self.agent is not None) and scope["path"] != "/health":
            given = dict(scope["headers"]).get(b"authorization", b"")
            operator = self.expected is not None and hmac.compare_digest(given, self.expected)
            agent = self.agent is not None and hmac.compare_digest(given, self.agent)
            if agent and not operator and not _agent_may(scope):
                await _plain(send, 403, "the agent token does not reach this route")
                return
            if not (operator or agent):
                if kind == "websocket":
                    await send({"type": "websocket.close", "code": 1008, "reason": "bad token"})
                    return
                await _plain(
                    send, 401, "missing or wrong bearer token", {"www-authenticate": "Bearer"}
                )
                return
        if self.expected is None and scope["path"] != "/health" and _remote(scope.get("client")):
            # No token: loopback clients only, however the server was bound (`uvicorn
            # opsgym.server.app:create_app --factory --host 0.0.0.0` skips ServerSettings' check).
            if kind == "websocket":
                await send({"type": "websocket.close", "code": 1008, "reason": "no token set"})
                return
            await _plain(send, 403, "this server has no token: it serves loopback clients only")
            return
        if kind == "http":
            length = dict(scope["headers"]).get(b"content-length")
            if length is not None and (not length.isdigit() or int(length) > self.max_body):
                await _plain(send, 413, f"request body over {self.max_body} bytes")
                return
            if length is None:  # chunked: read it here, as FastAPI makes any error a 400
                buffered = await self._buffered(receive)
                if buffered is None:
                    await _plain(send, 413, f"request body over {self.max_body} bytes")
                    return
                receive = buffered
        await self.app(scope, receive, send)

    async def _buffered(self, receive: Receive) -> Receive | None:
        """The whole body of a request that gave no length, or ``None`` past the limit.

        A declared length is kept by the HTTP parser, so only these need counting.
        """
        chunks: list[bytes] = []
        seen = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunks.append(message.get("body", b""))
            seen += len(chunks[-1])
            if seen > self.max_body:
                return None
            if not message.get("more_body", False):
                message = {"type": "http.request", "body": b"".join(chunks), "more_body": False}
                break
        first: list[Message] = [message]

        async def replay() -> Message:
            return first.pop() if first else await receive()

        return replay


async def _plain(send: Send, code: int, detail: str, headers: dict[str, str] | None = None) -> None:
    body = JSON({"detail": detail}).body
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": code, "headers": raw})
    await send({"type": "http.response.body", "body": body})


def _handlers(app: FastAPI) -> None:
    def detail(status: int, message: str, **headers: str) -> JSON:
        return JSON({"detail": message}, status_code=status, headers=headers or None)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSON:
        return JSON({"detail": exc.errors()}, status_code=422)

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
    @app.exception_handler(api.Missing)
    @app.exception_handler(NotFoundError)
    async def missing(request: Request, exc: Exception) -> JSON:
        return detail(404, str(exc))

    @app.exception_handler(SessionOver)
    @app.exception_handler(api.Conflict)
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
    jobs = api.Jobs(settings.db)
    face = OpenEnvFace(manager, settings)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        reaper = asyncio.create_task(_reap(manager, settings.reap_interval_s))
        try:
            yield
        finally:
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
    app.state.settings, app.state.manager, app.state.writer, app.state.jobs = (
        settings,
        manager,
        writer,
        jobs,
    )
    _handlers(app)
    app.include_router(face.router())
    app.include_router(api.router(manager, settings, jobs))
    app.add_middleware(
        Guard,
        token=settings.token,
        agent_token=settings.agent_token,
        max_body=settings.max_body_bytes,
    )
    if settings.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.cors_origins,
            allow_methods=["GET", "POST", "DELETE"],
            allow_headers=["authorization", "content-type"],
        )
    return app


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
    )
