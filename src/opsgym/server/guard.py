"""Who may ask the server anything: tokens, the ``Host`` and ``Origin`` rules, the body limit.

:class:`Guard` runs before every route (and every WebSocket handshake) as pure ASGI middleware;
it leaves the caller's role in the ASGI scope for the routes that care (:func:`role_of`).
"""

from __future__ import annotations

import base64
import binascii
import hmac
import ipaddress

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from opsgym.server.openenv import JSON
from opsgym.server.policies import ROLE

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


def _public(scope: Scope) -> bool:
    """Whether a request needs no token: ``/health``, and reading the workbench's static pages
    (``/``, ``/ui/...``), which hold no data: what they show they fetch from ``/api`` with the
    token the user gives them.
    """
    path = scope["path"]
    if path == "/health":
        return True
    reading = scope["type"] == "http" and scope.get("method") in ("GET", "HEAD")
    return reading and (path in ("/", "/ui") or path.startswith("/ui/"))


def _agent_may(scope: Scope) -> bool:
    """Whether the agent token reaches this request: the worlds, a session it holds the id of
    (not the list of everyone's sessions), never the store.
    """
    path = scope["path"]
    if path == "/api/sessions" and scope.get("method") != "POST":
        return False
    return path.startswith(AGENT_PATHS)


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


LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "[::1]"})
"""``Host`` names a tokenless server always answers (with any port)."""

WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
"""Methods whose ``Origin``, when a browser sends one, must be the server's own or a CORS one."""

HOST_REFUSED = (
    "host not allowed: a server without a token answers only to Host 127.0.0.1, localhost, "
    "[::1] and the names given with --allowed-hosts"
)


def host_name(host: bytes) -> str:
    """The host name of a ``Host`` header, lower-cased, without its port (``[::1]`` keeps its
    brackets); ``""`` for a malformed one.
    """
    text = host.decode("latin-1").strip().lower()
    if text.startswith("["):
        name, bracket, rest = text.partition("]")
        return name + bracket if bracket and (not rest or rest[0] == ":") else ""
    name, _, port = text.partition(":")
    return name if not port or port.isdigit() else ""


class Guard:
    """Pure ASGI middleware: who may ask (tokens, ``Host``, ``Origin``), and the body size limit.

    * **Tokens.** With a token every route but ``/health`` wants it, as ``Authorization: Bearer
      TOKEN`` or as the password of HTTP Basic (``http://opsgym:TOKEN@host:8000``, the only form
      OpenEnv's stock client can carry). The agent token reaches what :func:`_agent_may` allows.
    * **DNS rebinding.** Without a token, the ``Host`` must name this machine (127.0.0.1,
      localhost, [::1]) or an allowed host: a page on an attacker's name rebound to 127.0.0.1 is
      same-origin to the browser, but its requests still carry the attacker's name.
    * **Cross-site writes.** A POST, PUT, PATCH, DELETE or WebSocket handshake whose ``Origin``
      is neither this server's own nor a configured CORS origin is refused: a page on another
      loopback port may not start episodes here, whatever the token.

    Written as ASGI rather than as ``BaseHTTPMiddleware`` so that it costs microseconds per
    request and sees WebSocket handshakes too.
    """

    def __init__(
        self,
        app: ASGIApp,
        token: str | None,
        max_body: int,
        agent_token: str | None = None,
        allowed_hosts: frozenset[str] = frozenset(),
        cors_origins: frozenset[str] = frozenset(),
    ):
        self.app = app
        self.expected = f"Bearer {token}".encode() if token else None
        self.agent = f"Bearer {agent_token}".encode() if agent_token else None
        self.max_body = max_body
        self.hosts = LOCAL_HOSTS | allowed_hosts
        self.origins = frozenset(origin.rstrip("/").lower() for origin in cors_origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check one request or handshake, then pass it on."""
        kind = scope["type"]
        if kind not in ("http", "websocket") or _public(scope):
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        refusal = self._refusal(scope, headers)
        if refusal is not None:
            code, detail, extra = refusal
            if kind == "websocket":
                await send({"type": "websocket.close", "code": 1008, "reason": detail[:120]})
            else:
                await _plain(send, code, detail, extra)
            return
        if kind == "http":
            length = headers.get(b"content-length")
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

    def _refusal(
        self, scope: Scope, headers: dict[bytes, bytes]
    ) -> tuple[int, str, dict[str, str] | None] | None:
        """Why this request may not pass (status, detail, headers), or ``None``; the caller's
        role is left in the scope.
        """
        if self.expected is not None:
            given = _bearer(headers.get(b"authorization", b""))
            operator = hmac.compare_digest(given, self.expected)
            agent = self.agent is not None and hmac.compare_digest(given, self.agent)
            if not (operator or agent):
                return 401, "missing or wrong bearer token", {"www-authenticate": "Bearer"}
            if agent and not operator:
                if not _agent_may(scope):
                    return 403, "the agent token does not reach this route", None
                scope[ROLE] = "agent"
        else:
            if host_name(headers.get(b"host", b"")) not in self.hosts:
                return 403, HOST_REFUSED, None
            if _remote(scope.get("client")):
                # No token: loopback clients only, however the server was bound (`uvicorn
                # opsgym.server.app:create_app --factory --host 0.0.0.0` skips ServerSettings).
                return 403, "this server has no token: it serves loopback clients only", None
        origin = headers.get(b"origin")
        if origin is not None and (scope["type"] == "websocket" or scope["method"] in WRITES):
            if not self._own_or_allowed(scope, origin, headers.get(b"host", b"")):
                return 403, f"origin not allowed: {origin.decode('latin-1')[:100]}", None
        return None

    def _own_or_allowed(self, scope: Scope, origin: bytes, host: bytes) -> bool:
        """Whether a browser's ``Origin`` is this server's own or a configured CORS origin."""
        given = origin.decode("latin-1").strip().rstrip("/").lower()
        scheme = {"ws": "http", "wss": "https"}.get(scope.get("scheme", "http"), scope["scheme"])
        own = f"{scheme}://{host.decode('latin-1').strip().lower()}"
        return given == own or given in self.origins

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


def _bearer(given: bytes) -> bytes:
    """An ``Authorization`` header as ``Bearer TOKEN``: HTTP Basic carries the token as its
    password (any user name), which is how a URL's ``user:TOKEN@`` reaches the server.
    """
    if given[:6].lower() != b"basic ":
        return given
    try:
        _, _, password = base64.b64decode(given[6:].strip(), validate=True).partition(b":")
    except (binascii.Error, ValueError):
        return b""
    return b"Bearer " + password


async def _plain(send: Send, code: int, detail: str, headers: dict[str, str] | None = None) -> None:
    body = JSON({"detail": detail}).body
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": code, "headers": raw})
    await send({"type": "http.response.body", "body": body})
