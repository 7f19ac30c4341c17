"""What the server tests share: talking to a live server over HTTP and the WebSocket, and the
reference a served episode is held to (the same seed played alone, in this process).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

import opsgym
from opsgym.server.sessions import call_tokens
from tests.server.conftest import Live, running

ENVS = tuple(opsgym.list_envs())
KNOWN = f"Known: {', '.join(ENVS)}."
"""How the error for an unknown world ends: every registered name."""
WAIT_S = 30.0
"""Longest wait for anything the server does in the background (a reap, a close)."""


# -- servers shared by the tests of one worker -------------------------------------------------
#
# A server that has saved an episode takes seconds to stop (its store writer is a process), so
# the tests that end episodes share one; they look only at their own sessions and find their
# stored episodes by record hash. Tests that count what a server holds start their own (``live``).
# A module that wants them imports them (``from tests.server.wire import shared_server``).


@pytest.fixture(scope="session", name="shared")
def shared_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    """One server for the worker's tests, overrides allowed (as ``live``)."""
    db = tmp_path_factory.mktemp("shared") / "store.sqlite"
    with running(db=str(db), allow_overrides=True) as live:
        yield live


@pytest.fixture(scope="session", name="plain")
def plain_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    """One server for the worker's tests, with the settings of ``opsgym serve``."""
    db = tmp_path_factory.mktemp("plain") / "store.sqlite"
    with running(db=str(db)) as live:
        yield live


# -- the WebSocket ----------------------------------------------------------------------------


def ws(live: Any, token: str | None = None) -> ClientConnection:
    """A WebSocket to ``live``'s ``/ws`` (with a bearer token if given)."""
    headers = {"authorization": f"Bearer {token}"} if token else None
    return connect(live.ws_url, additional_headers=headers, open_timeout=10, close_timeout=5)


def ask(sock: ClientConnection, message: Any) -> dict[str, Any]:
    """Send one message (JSON unless it is already text) and return the reply."""
    sock.send(message if isinstance(message, str) else json.dumps(message))
    return json.loads(sock.recv(timeout=30))


def reset(sock: ClientConnection, **data: Any) -> dict[str, Any]:
    """OpenEnv ``reset`` with ``data``; the reply."""
    return ask(sock, {"type": "reset", "data": data})


def act(sock: ClientConnection, tool: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    """OpenEnv ``step`` with one tool call; the reply."""
    return ask(sock, {"type": "step", "data": {"tool": tool, "args": args or {}}})


def state(sock: ClientConnection) -> dict[str, Any]:
    """OpenEnv ``state``; the reply's data."""
    reply = ask(sock, {"type": "state"})
    assert reply["type"] == "state", reply
    return reply["data"]


def close_code(sock: ClientConnection) -> int | None:
    """Wait for the server to close ``sock``; the code it sent (messages before it are read)."""
    try:
        while True:
            sock.recv(timeout=WAIT_S)
    except ConnectionClosed as closed:
        return closed.rcvd.code if closed.rcvd is not None else None
    except TimeoutError:
        raise AssertionError(f"the server did not close the WebSocket in {WAIT_S} s") from None


# -- REST -------------------------------------------------------------------------------------


def create(client: httpx.Client, **body: Any) -> dict[str, Any]:
    """POST /api/sessions; the new session (asserting the 201)."""
    reply = client.post("/api/sessions", json=body)
    assert reply.status_code == 201, reply.text
    return reply.json()


def call(client: httpx.Client, sid: str, tool: str, args: dict[str, Any] | None = None) -> dict:
    """One tool call in REST session ``sid``; the reply (asserting the 200)."""
    reply = client.post(f"/api/sessions/{sid}/step", json={"tool": tool, "args": args or {}})
    assert reply.status_code == 200, reply.text
    return reply.json()


def stored(client: httpx.Client, **filters: Any) -> list[dict[str, Any]]:
    """GET /api/episodes with ``filters``."""
    reply = client.get("/api/episodes", params=filters)
    assert reply.status_code == 200, reply.text
    return reply.json()


def stored_as(live: Live, episode: opsgym.Episode) -> list[dict[str, Any]]:
    """The stored episodes whose record hash is ``episode``'s (after the writer is flushed)."""
    live.flush()
    rows = stored(live.client, env=episode.env, limit=1000)
    return [r for r in rows if r["record_hash"] == episode.record()["hash"]]


# -- the reference ----------------------------------------------------------------------------


def alone(env: str, scenario: str, seed: int, policy: str = "oracle") -> opsgym.Episode:
    """The same seed played alone, in this process, by ``policy``."""
    return opsgym.run(env, scenario, seed, policy)


def as_served(env: str, scenario: str | None, seed: int, calls: Any, **kwargs: Any):
    """``calls`` played in this process as a session plays them: tokens counted from each
    call's JSON (so the record, and its hash, are the ones the server stores).
    """
    episode = opsgym.make(env, scenario, seed, token_source="estimate", **kwargs)
    for tool, args in calls:
        episode.step(tool, args, tokens=call_tokens(tool, args))
    return episode


def calls_of(events: list[dict[str, Any]]) -> list[tuple[Any, Any]]:
    """The calls of a trajectory (an episode's events, a record's, a session's history)."""
    return [(e["tool"], e["args"]) for e in events]


def verdict_of(episode: opsgym.Episode) -> dict[str, Any]:
    """The verdict as the server shows it."""
    return {**episode.verdict.to_dict(), "failed": episode.verdict.failed}


def wait_until(condition: Callable[[], Any], what: str, limit: float = WAIT_S) -> Any:
    """Poll ``condition`` until it is truthy; fail naming ``what`` after ``limit`` seconds."""
    deadline = time.monotonic() + limit
    while not (value := condition()):
        assert time.monotonic() < deadline, f"{what}: not within {limit} s"
        time.sleep(0.02)
    return value
