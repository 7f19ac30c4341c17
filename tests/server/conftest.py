"""A real Uvicorn server on 127.0.0.1, in a thread of the test process (so tests can reach the
app's session manager and store writer), one per test that asks for it.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("fastapi")
uvicorn = pytest.importorskip("uvicorn")

from opsgym.server import ServerSettings, create_app  # noqa: E402


@dataclass
class Live:
    """A running server: its base URL, its app, and an HTTP client for it."""

    url: str
    app: Any
    client: httpx.Client

    @property
    def ws_url(self) -> str:
        return self.url.replace("http://", "ws://") + "/ws"

    @property
    def manager(self) -> Any:
        return self.app.state.manager

    def flush(self) -> None:
        assert self.app.state.writer.flush(30), "the store writer did not drain"


@contextlib.contextmanager
def running(**settings: Any) -> Iterator[Live]:
    """Serve ``create_app(ServerSettings(**settings))`` on a free loopback port until exit."""
    settings.setdefault("host", "127.0.0.1")
    if settings.get("db") and "://" not in settings["db"]:  # runs beside a test's store, not ./runs
        settings.setdefault("runs_dir", str(Path(settings["db"]).parent / "runs"))
    app = create_app(ServerSettings(**settings))
    # IPPROTO_TCP named: asyncio sets TCP_NODELAY only on sockets whose proto says TCP, and
    # without it each response waits out the client's delayed ACK (40 ms a request).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app,
        log_level="warning",
        ws_max_size=app.state.settings.max_message_bytes,
        lifespan="on",
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    url = f"http://127.0.0.1:{port}"
    headers = {"authorization": f"Bearer {settings['token']}"} if settings.get("token") else {}
    try:
        with httpx.Client(base_url=url, headers=headers, timeout=30) as client:
            yield Live(url, app, client)
    finally:
        server.should_exit = True
        thread.join(20)
        sock.close()


@pytest.fixture(autouse=True)
def _no_server_settings_from_the_environment(monkeypatch):
    # ServerSettings reads OPSGYM_* variables: a developer's OPSGYM_TOKEN must not change tests.
    for name in ("TOKEN", "AGENT_TOKEN", "HOST", "PORT", "DEFAULT_ENV", "MAX_SESSIONS"):
        monkeypatch.delenv(f"OPSGYM_{name}", raising=False)


@pytest.fixture
def serve(tmp_path) -> Iterator[Callable[..., Live]]:
    """``serve(**settings)`` starts a server (a fresh SQLite store under ``tmp_path``)."""
    stack = contextlib.ExitStack()

    def start(**settings: Any) -> Live:
        settings.setdefault("db", str(tmp_path / f"store{len(stack._exit_callbacks)}.sqlite"))
        settings.setdefault("runs_dir", str(tmp_path / "runs"))
        return stack.enter_context(running(**settings))

    with stack:
        yield start


@pytest.fixture
def live(serve) -> Live:
    """One server with default settings, overrides allowed (for leak tests)."""
    return serve(allow_overrides=True)
