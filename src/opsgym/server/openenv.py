"""OpenEnv's wire protocol, spoken without the ``openenv`` package.

``WS /ws`` is the protocol's heart: one isolated session per connection. The client sends
``{"type": "reset", "data": {...}}``, ``{"type": "step", "data": {"tool": ..., "args": {...}}}``,
``{"type": "state"}`` or ``{"type": "close"}``; the server answers ``{"type": "observation",
"data": {"observation": ..., "reward": ..., "done": ...}}``, ``{"type": "state", "data": ...}`` or
``{"type": "error", "data": {"message": ..., "code": ...}}`` with OpenEnv's error codes
(``INVALID_JSON``, ``UNKNOWN_TYPE``, ``VALIDATION_ERROR``, ``EXECUTION_ERROR``,
``CAPACITY_REACHED``, ``SESSION_ERROR``). ``reset``'s data may name the world (``env``),
``scenario``, ``seed``, ``config``, ``split`` and OpenEnv's ``episode_id``; every ``reset``
starts a new episode in the connection's session (an ended one is saved first). The step that
ends an episode also carries its ``verdict``.

A message is parsed as OpenEnv parses it: a discriminated union on ``type``
(:data:`~opsgym.server.models.WSMessage`, OpenEnv's ``WSIncomingMessage``), then the step's
``data`` as an action (:class:`~opsgym.server.models.OpsAction`) and the reset's as its
parameters, so a field's error is located in the action or the parameters (``["tool"]``), as
OpenEnv's server reports it; a message nested deeper than
:data:`~opsgym.core.episode.MAX_MESSAGE_DEPTH` levels is refused before either, naming the field
(:func:`~opsgym.server.models.too_deep`; ``/mcp`` likewise). The union costs about 2 µs a step
over the hand-written checks it replaced (under 1% of a WebSocket step's round trip;
``benchmarks/server.py``).

As in OpenEnv's server, ``POST /reset`` and ``POST /step`` are stateless (a fresh episode per
request; ``/api/sessions`` is the stateful REST face) and ``GET /state`` is a fresh episode's;
``/schema``, ``/metadata`` and ``/health`` describe the server.

``POST /mcp`` is OpenEnv's MCP route: plain JSON-RPC 2.0, one request per POST, no ``initialize``
handshake, always HTTP 200 (errors are JSON-RPC errors; ``openenv validate`` checks that much).
The SDK's streamable-HTTP app cannot stand there (it wants the handshake and its ``Accept``
header), so the route only frames: ``tools/list``, ``tools/call`` and ``ping`` are answered by
:class:`opsgym.adapters.mcp.OpsgymMCP`, the face ``opsgym mcp`` serves, with its catalogue
(``start_episode``, ``<env>_<tool>``, ``observe_episode``, ``read_verdict``), its validation
and its results. The HTTP requests are stateless; the episodes are held by the face under the
``episode_id`` ``start_episode`` returns (the newest ``MAX_EPISODES``), and one a call ends is
saved to the store.

The observation is ``Episode.observe()``: the agent's view, never the truth. The ``State`` holds
the label, the step count and the budget left, nothing hidden.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import deque
from typing import Any, assert_never

import orjson
from fastapi import APIRouter, Body, Request, WebSocket
from fastapi.responses import Response
from pydantic import TypeAdapter, ValidationError
from starlette.websockets import WebSocketDisconnect, WebSocketState

import opsgym
from opsgym.core.episode import Episode, StepResult
from opsgym.core.errors import OpsgymError
from opsgym.core.request import EpisodeRequest
from opsgym.core.scenarios import split_of
from opsgym.server.models import (
    ForcedResetData,
    OpsAction,
    OpsObservation,
    OpsState,
    ResetData,
    StepRequest,
    WSClose,
    WSMessage,
    WSReset,
    WSState,
    WSStep,
    too_deep,
)
from opsgym.server.policies import AgentRefusedError, check_episode, role_of
from opsgym.server.sessions import CapacityError, Session, SessionManager, SessionOver, call_tokens

DESCRIPTION = (
    "Production-operations worlds (release, fleet, oversight) where an agent's tools may "
    "mislead and the episode is judged on what was true. Actions are tool calls "
    '{"tool": name, "args": {...}}; reset data may name env, scenario, seed, config, split.'
)

_messages: TypeAdapter[WSReset | WSStep | WSState | WSClose] = TypeAdapter(WSMessage)
log = logging.getLogger("opsgym.server")


def dumps(value: Any) -> bytes:
    """JSON bytes (orjson; numpy values and other oddities become plain JSON)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SERIALIZE_NUMPY, default=repr)
    except TypeError:  # an integer beyond 64 bits, as a client may send (and a 422 echo)
        return json.dumps(value, default=repr, separators=(",", ":")).encode()


class JSON(Response):
    """A JSON response serialised by orjson."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        """The body."""
        return dumps(content)


def errors(exc: ValidationError) -> list[dict[str, Any]]:
    """Pydantic's ``errors()`` without what cannot be JSON (exception objects, URLs)."""
    return exc.errors(include_url=False, include_context=False)


def invalid(found: list[dict[str, Any]], most: int = 3) -> str:
    """The message of a ``VALIDATION_ERROR``: each field and what is wrong with it.

    OpenEnv's client shows only ``message`` and ``code`` (it drops ``errors``), so the message
    itself names the fields: ``Invalid message: data.tool: Field required``.
    """
    parts = [
        f"{'.'.join(str(p) for p in e.get('loc', ())) or 'message'}: {e.get('msg', 'invalid')}"
        for e in found[:most]
    ]
    if len(found) > most:
        parts.append(f"and {len(found) - most} more")
    return "Invalid message: " + "; ".join(parts) if parts else "Invalid message"


def tools_of(env: str) -> list[dict[str, Any]]:
    """The tool schemas of ``env`` (OpenAI function form)."""
    return [t.schema for t in opsgym.core.registry.spec(env).world.tools.values()]


def observation(episode: Episode, result: StepResult | None = None) -> dict[str, Any]:
    """OpenEnv's step/reset payload: ``{"observation", "reward", "done"}`` (+ ``verdict``)."""
    data: dict[str, Any] = {
        "observation": episode.observe(),
        "reward": None if result is None else result.reward,
        "done": episode.done,
    }
    if episode.done and episode.verdict is not None:
        verdict = {**episode.verdict.to_dict(), "failed": episode.verdict.failed}
        data["verdict"] = verdict
        data["observation"]["verdict"] = verdict  # OpenEnv's StepResult keeps only observation
    return data


def _error(message: str, code: str, **extra: Any) -> bytes:
    return dumps({"type": "error", "data": {"message": message, "code": code, **extra}})


def _refusal(msg: Any, exc: ValidationError) -> bytes:
    """The error reply to a message the union refused: ``UNKNOWN_TYPE`` if it names no type we
    know (or is no object), else ``VALIDATION_ERROR`` naming each field and what is wrong.
    """
    found = errors(exc)
    if any(not e["loc"] for e in found):  # the discriminator itself: a union error at the root
        kind = msg.get("type") if isinstance(msg, dict) else None
        return _error(f"Unknown message type: {kind!r}", "UNKNOWN_TYPE")
    return _error(invalid(found), "VALIDATION_ERROR", errors=found)


class OpenEnvFace:
    """The OpenEnv routes over one session manager."""

    def __init__(self, manager: SessionManager, settings: Any):
        self.manager = manager
        self.settings = settings
        self.reset_model = ForcedResetData if settings.allow_overrides else ResetData
        self._mcp: Any = None

    def _reset_session(self, session: Session | None, data: dict[str, Any], ws: Any) -> Session:
        parsed = self.reset_model.model_validate(data)
        check_episode(role_of(ws.scope), parsed.seed)
        env = parsed.env or self.settings.default_env
        kwargs = {
            "config": parsed.config,
            "split": parsed.split,
            "overrides": getattr(parsed, "overrides", None),
            "kind": "ws",
            "label": parsed.episode_id,
        }
        if session is not None:
            return self.manager.renew(session, env, parsed.scenario, parsed.seed, **kwargs)
        fresh = self.manager.create(env, parsed.scenario, parsed.seed, **kwargs)
        fresh.socket = ws
        return fresh

    async def websocket(self, ws: WebSocket) -> None:
        """``WS /ws``: one session for the connection's life.

        A client may leave at any moment (before its first message, between a message and the
        reply, without a ``close``): that ends the connection and its session quietly, with a
        debug line, never an error in the server's log.
        """
        manager, limit = self.manager, self.settings.max_message_bytes
        strikes: deque[float] = deque()
        window, most = self.settings.malformed_window_s, self.settings.malformed_limit
        session: Session | None = None

        async def malformed(reply: bytes) -> bool:
            now = time.monotonic()
            strikes.append(now)
            while strikes and now - strikes[0] > window:
                strikes.popleft()
            await ws.send_text(reply.decode())
            if len(strikes) > most:
                await ws.close(code=1008, reason="too many malformed messages")
                return True
            return False

        try:
            await ws.accept()
            while True:
                # The reaper closes an idle session's socket; one that never opened a session
                # is closed here, or idle connections would pile up without limit.
                if session is not None:  # the reaper watches it
                    frame = await ws.receive()
                else:
                    try:
                        frame = await asyncio.wait_for(ws.receive(), manager.idle_timeout_s)
                    except TimeoutError:
                        await ws.close(code=1001, reason="idle")
                        break
                if frame["type"] == "websocket.disconnect":
                    break
                raw = frame.get("text")
                if raw is None:
                    raw = frame.get("bytes") or b""
                if len(raw) > limit:
                    await ws.close(code=1009, reason=f"message over {limit} bytes")
                    break
                try:
                    msg = orjson.loads(raw)
                except orjson.JSONDecodeError as exc:
                    if await malformed(_error(f"Invalid JSON: {exc}", "INVALID_JSON")):
                        break
                    continue
                deep = too_deep(msg, "message")  # before anything recursive reads it
                if deep is not None:
                    if await malformed(_error(str(deep), "VALIDATION_ERROR")):
                        break
                    continue
                try:
                    message = _messages.validate_python(msg)
                except ValidationError as exc:
                    if await malformed(_refusal(msg, exc)):
                        break
                    continue
                if session is not None and session.id not in manager.sessions:
                    await ws.send_text(
                        _error(
                            f"session closed after {manager.idle_timeout_s:g} s idle; reconnect",
                            "SESSION_ERROR",
                        ).decode()
                    )
                    await ws.close(code=1001)
                    break
                if isinstance(message, WSClose):
                    break
                try:
                    session, reply = self._answer(session, message, ws)
                except ValidationError as exc:  # the step's action, or the reset's data
                    found = errors(exc)
                    reply_bytes = _error(invalid(found), "VALIDATION_ERROR", errors=found)
                    if await malformed(reply_bytes):
                        break
                    continue
                except CapacityError as exc:
                    await ws.send_text(
                        _error(
                            str(exc),
                            "CAPACITY_REACHED",
                            active_sessions=exc.active,
                            max_sessions=exc.limit,
                        ).decode()
                    )
                    continue
                except (OpsgymError, ValueError, TypeError) as exc:
                    await ws.send_text(_error(str(exc), "EXECUTION_ERROR").decode())
                    continue
                await ws.send_text(dumps(reply).decode())
                if session is not None and session.done:
                    manager.settle(session)  # after the reply: the record is the server's cost
        except WebSocketDisconnect as gone:
            log.debug("a WebSocket client left (code %s)", gone.code)
        finally:
            if session is not None and session.id in manager.sessions:
                manager.close(session.id)
            await _close_quietly(ws)

    def _answer(
        self, session: Session | None, message: WSReset | WSStep | WSState, ws: WebSocket
    ) -> tuple[Session | None, dict[str, Any]]:
        """The reply to one well-formed ``reset``, ``step`` or ``state``, and the connection's
        session after it.

        Raises:
            ValidationError: the step's action or the reset's data is malformed.
        """
        match message:
            case WSStep(data=data):
                action = OpsAction.model_validate(data)
                if session is None:
                    raise SessionOver("no episode yet: send a reset first")
                session.touched = time.monotonic()
                ep = session.episode
                if ep.done:
                    raise SessionOver(session._over())
                tool, args = action.tool, action.args
                result = ep.step(tool, args, tokens=call_tokens(tool, args))
                session.driver = "client"
                return session, {"type": "observation", "data": observation(ep, result)}
            case WSReset(data=data):
                session = self._reset_session(session, data, ws)
                reply = observation(session.episode)
                reply["observation"]["tools"] = tools_of(session.episode.env)
                return session, {"type": "observation", "data": reply}
            case WSState():
                if session is not None:
                    session.touched = time.monotonic()
                state = session.state() if session else OpsState().model_dump()
                return session, {"type": "state", "data": state}
            case _:
                assert_never(message)

    # -- stateless HTTP, as OpenEnv's simulation mode ----------------------------------------

    def mcp_face(self) -> Any:
        """The MCP face behind ``POST /mcp``, made on first use (it needs the ``mcp`` extra)."""
        if self._mcp is None:
            from opsgym.adapters.mcp import OpsgymMCP

            self._mcp = OpsgymMCP(
                allow_overrides=self.settings.allow_overrides, on_end=self.keep_if_ended
            )
        return self._mcp

    def fresh_episode(self, env: str | None, scenario: str | None, seed: int | None) -> Episode:
        """A throwaway episode for a stateless request."""
        return EpisodeRequest(
            env or self.settings.default_env, scenario, seed, token_source="estimate"
        ).start()

    def keep_if_ended(self, episode: Episode) -> None:
        """Save a stateless request's episode if that one call ended it (e.g. ``complete``)."""
        if episode.done and self.manager.writer is not None:
            self.manager.writer.put(episode, "client", split_of(episode.seed))

    def router(self) -> APIRouter:
        """``/ws``, ``/reset``, ``/step``, ``/state``, ``/schema``, ``/metadata``, ``/health``,
        ``/mcp``.
        """
        router = APIRouter()
        router.add_api_websocket_route("/ws", self.websocket)
        face = self

        @router.post("/reset", tags=["OpenEnv"], summary="A new episode's first observation")
        def reset(
            request: Request,
            body: ResetData = Body(default_factory=ResetData),  # noqa: B008
        ) -> JSON:
            """Stateless, as OpenEnv's HTTP reset: nothing is kept (use /ws or /api/sessions)."""
            check_episode(role_of(request.scope), body.seed)
            if body.episode_id is not None and len(body.episode_id) > 255:
                raise ValueError("episode_id is longer than 255 characters")
            ep = EpisodeRequest(
                body.env or face.settings.default_env,
                body.scenario,
                body.seed,
                split=body.split,
                config=body.config,
                token_source="estimate",
            ).start()
            data = observation(ep)
            data["observation"]["tools"] = tools_of(ep.env)
            return JSON(data)

        @router.post("/step", tags=["OpenEnv"], summary="One action on a fresh episode")
        def step(body: StepRequest, request: Request) -> JSON:
            """Stateless, as OpenEnv's HTTP step: a fresh episode takes the action."""
            check_episode(role_of(request.scope), body.seed)
            action = OpsAction.model_validate(body.action)
            ep = face.fresh_episode(body.env, body.scenario, body.seed)
            result = ep.step(action.tool, action.args, tokens=call_tokens(action.tool, action.args))
            face.keep_if_ended(ep)
            return JSON(observation(ep, result))

        @router.get("/state", tags=["OpenEnv"], response_model=OpsState)
        def state() -> OpsState:
            """A fresh episode's state (sessions keep theirs: /ws, /api/sessions)."""
            return OpsState()

        @router.get("/schema", tags=["OpenEnv"])
        def schema() -> dict[str, Any]:
            """JSON schemas of the action, the observation and the state."""
            return {
                "action": OpsAction.model_json_schema(),
                "observation": OpsObservation.model_json_schema(),
                "state": OpsState.model_json_schema(),
            }

        @router.get("/metadata", tags=["OpenEnv"])
        def metadata() -> dict[str, Any]:
            """Name, description and version of the environments served."""
            return {
                "name": "opsgym",
                "description": DESCRIPTION,
                "version": opsgym.__version__,
                "readme_content": None,
                "author": "opsgym",
                "documentation_url": None,
            }

        @router.get("/health", tags=["OpenEnv"])
        def health() -> dict[str, str]:
            """Whether the server is up (the one route that needs no token)."""
            return {"status": "healthy"}

        @router.post("/mcp", tags=["OpenEnv"])
        async def mcp(request: Request) -> JSON:
            """JSON-RPC 2.0 without a session: ``tools/list``, ``tools/call``, ``ping``."""
            return JSON(face.jsonrpc(await request.body(), role_of(request.scope)))

        return router

    def jsonrpc(self, body: bytes, role: str = "operator") -> dict[str, Any]:
        """Answer one JSON-RPC request (errors as JSON-RPC errors, never an HTTP error)."""
        try:
            request = orjson.loads(body)
        except orjson.JSONDecodeError as exc:  # nested past 1,024 levels too: it says so
            return _rpc_error(None, -32700, f"Parse error: {exc}")
        rid = request.get("id") if isinstance(request, dict) else None
        if not isinstance(rid, str | int | type(None)) or isinstance(rid, bool):
            rid = None
        deep = too_deep(request, "request")  # before the SDK's models recurse into it
        if deep is not None:
            return _rpc_error(rid, -32600, f"Invalid Request: {deep}")
        if (
            not isinstance(request, dict)
            or request.get("jsonrpc") != "2.0"
            or not isinstance(request.get("method"), str)
        ):
            return _rpc_error(rid, -32600, "Invalid Request: jsonrpc '2.0' and a method needed")
        params = request.get("params") or {}
        if not isinstance(params, dict):
            return _rpc_error(rid, -32602, "params must be an object")
        try:
            face = self.mcp_face()
        except ImportError as exc:
            return _rpc_error(
                rid, -32603, f"MCP needs the mcp extra: pip install 'opsgym[mcp]' ({exc})"
            )
        from mcp.shared.exceptions import MCPError

        arguments = params.get("arguments")
        if request["method"] == "tools/call" and isinstance(arguments, dict):
            try:  # the same rule as every other way to start an episode here
                check_episode(role, arguments.get("seed"))
            except AgentRefusedError as exc:
                return _rpc_error(rid, -32602, str(exc))
        try:
            result = face.answer(request["method"], params)
        except MCPError as exc:
            return _rpc_error(rid, exc.error.code, exc.error.message)
        return {"jsonrpc": "2.0", "id": rid, "result": result}


async def _close_quietly(ws: WebSocket) -> None:
    """Close ``ws`` unless either side already has; a client already gone is not an error."""
    if WebSocketState.DISCONNECTED in (ws.client_state, ws.application_state):
        return
    try:
        await ws.close()
    except (WebSocketDisconnect, RuntimeError, OSError) as exc:  # it left while we closed
        log.debug("a WebSocket closed under the server: %s", type(exc).__name__)


def _rpc_error(rid: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}
