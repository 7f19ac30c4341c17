"""Sessions: one episode each, isolated, reaped when idle, saved to the store when they end.

A session is an :class:`~opsgym.core.episode.Episode` under an unguessable id. Nothing is shared
between sessions but the read-only registry, so one session's bad input or failure cannot touch
another. What a running session hands out is built from what the agent may see
(:meth:`Session.public`); the record, with the truth, is readable once the episode is over.

Tokens are counted here from the call the client sent (its JSON, by the tool-calling face's
estimate :func:`~opsgym.adapters.toolcalls.count_tokens`), never taken from the client: the
record says ``token_source: tokenizer``.

Finished episodes go to the store through a writer process (:class:`StoreWriter`), so that
writing never holds up the event loop; a write is one transaction, so a half-written episode
never reaches the store.
"""

from __future__ import annotations

import json
import logging
import queue
import secrets
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import orjson

from opsgym.adapters.toolcalls import count_tokens
from opsgym.agents.base import get_policy, legal_calls, policy_rng
from opsgym.core.episode import Episode, StepResult, jsonable
from opsgym.core.errors import OpsgymError
from opsgym.core.registry import spec
from opsgym.core.request import EpisodeRequest

log = logging.getLogger("opsgym.server")

SPLITS = ("train", "dev", "test")


class CapacityError(OpsgymError):
    """Every session slot is taken."""

    def __init__(self, active: int, limit: int):
        self.active, self.limit = active, limit
        super().__init__(
            f"the server holds its limit of {limit} sessions; close one (DELETE "
            "/api/sessions/{id}, or close the WebSocket) or retry later"
        )


class SessionNotFound(OpsgymError, LookupError):
    """No open session has this id."""


class SessionOver(OpsgymError):
    """A step was asked of a session whose episode has ended."""


def call_tokens(tool: Any, args: Any) -> int:
    """Tokens of a call as a model would write it: ``{"name": ..., "arguments": ...}``."""
    try:
        text = orjson.dumps({"name": tool, "arguments": args}, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # an integer beyond 64 bits: counted from its JSON all the same
        text = json.dumps({"name": tool, "arguments": args}, sort_keys=True).encode()
    return _counted(text)


@lru_cache(maxsize=4096)
def _counted(text: bytes) -> int:
    # Agents repeat their calls; the regex count costs more than the rest of a step's handling.
    return count_tokens(text.decode())


def told(event: Mapping[str, Any]) -> dict[str, Any]:
    """What the agent was told of one step: the call, the report and the reward it was paid.

    ``components`` is the reward paid on that step by component, as the step returned it
    (``StepResult.components``); ``reward`` is their sum. A settled component (computed from
    hidden facts) accrues out of sight and shows only where it was paid, on the last step: the
    event's ``reward`` holds what was paid, the held-back amounts are in its truth.
    """
    paid = event["reward"]
    return {
        "step": event["step"],
        "tool": event["tool"],
        "args": event["args"],
        "rejected": event["rejected"],
        "report": event["report"],
        "reward": sum(paid.values()),
        "components": dict(paid),
    }


@dataclass(eq=False)
class Session:
    """One episode, and what the server knows of whoever drives it.

    Attributes:
        id: Unguessable handle (the only way to reach the session).
        episode: The episode.
        kind: ``ws`` (an OpenEnv WebSocket) or ``rest``.
        split: The seed's split.
        seed_given: Whether the client chose the seed (a drawn one is shown only at the end:
            with it anyone could recompute the episode's hidden facts).
        label: The client's ``episode_id`` (OpenEnv), if it sent one.
        episode_key: The episode's id when the client sent none: new on every reset, so that
            rollouts keyed on ``state().episode_id`` never merge two episodes of a connection.
        driver: ``client`` while any call came from the client, else the named policy that
            made every call.
        curriculum: Whether the episode's config came from the server's curriculum, which
            hears of its result.
        agents: The named policies that made calls in this episode, kept between requests.
    """

    id: str
    episode: Episode
    kind: str
    split: str
    seed_given: bool
    label: str | None = None
    episode_key: str = field(default_factory=lambda: secrets.token_urlsafe(12))
    driver: str | None = None
    curriculum: bool = False
    created: float = field(default_factory=time.monotonic)
    touched: float = field(default_factory=time.monotonic)
    created_at: float = field(default_factory=time.time)
    stored: bool = False
    busy: threading.Lock = field(default_factory=threading.Lock)
    socket: Any = None
    agents: dict[str, Any] = field(default_factory=dict)

    # -- what may be seen -------------------------------------------------------------------

    @property
    def done(self) -> bool:
        """Whether the episode is over."""
        return self.episode.done

    def public(self, *, history: bool = True) -> dict[str, Any]:
        """The session as its client may see it now: nothing hidden while it runs."""
        ep = self.episode
        out: dict[str, Any] = {
            "id": self.id,
            "kind": self.kind,
            "env": ep.env,
            "scenario": ep.scenario.name,
            "seed": ep.seed if (self.seed_given or ep.done) else None,
            "split": self.split,
            "config": ep.config,
            "episode_id": self.label,
            "steps": ep.steps,
            "max_steps": ep.max_steps or None,
            "done": ep.done,
            "return": ep.total_reward,
            "observation": ep.observe(),
            "verdict": None,
        }
        if history:
            out["history"] = [told(e) for e in ep.events]
        if ep.done and ep.verdict is not None:
            out["verdict"] = {**ep.verdict.to_dict(), "failed": ep.verdict.failed}
            out["family"] = ep.family.name
        return out

    def state(self) -> dict[str, Any]:
        """OpenEnv's ``State``: the episode's label and step count, and nothing hidden."""
        ep = self.episode
        return {
            "episode_id": self.label or self.episode_key,
            "step_count": ep.steps,
            "env": ep.env,
            "scenario": ep.scenario.name,
            "done": ep.done,
            "steps_left": ep.max_steps - ep.steps if ep.max_steps else None,
        }

    # -- acting -----------------------------------------------------------------------------

    def step(self, tool: Any, args: Any) -> StepResult:
        """One call from the client, its tokens counted here."""
        if self.episode.done:
            raise SessionOver(self._over())
        self.driver = "client"
        return self.episode.step(tool, args, tokens=call_tokens(tool, args))

    def play(self, policy: str, *, to_end: bool, runs_dir: str | None = None) -> list[StepResult]:
        """Let the named ``policy`` make one call, or every call to the end (trained policies
        named ``KIND:runs:NAME`` are found in ``runs_dir``).
        """
        ep = self.episode
        if ep.done:
            raise SessionOver(self._over())
        # One agent per policy for the session's episode, reset once: a policy that keeps
        # state between calls (the fleet oracle does) must play one call at a time as it
        # plays them all at once.
        agent = self.agents.get(policy)
        if agent is None:
            agent = get_policy(ep.env, policy, runs_dir=runs_dir)
            if getattr(agent, "drive", None) is not None:
                raise ValueError(
                    f"policy {policy!r} drives its own episodes (an LLM agent): run it with "
                    "`opsgym run` or `opsgym eval`, not through a session"
                )
            agent.reset(policy_rng(ep.seed))  # its own randomness, never the seed
            self.agents[policy] = agent
        self.driver = policy if self.driver in (None, policy) else "client"
        feedback = getattr(agent, "feedback", None)  # as agents.play hands it each result
        results = []
        while not ep.done:
            tool, args = agent.act(ep.observe(), legal_calls(ep))
            results.append(ep.step(tool, args, tokens=call_tokens(tool, args)))
            if feedback is not None:
                feedback(results[-1])
            if not to_end:
                break
        return results

    def _over(self) -> str:
        outcome = self.episode.verdict.outcome if self.episode.verdict else None
        return (
            f"session {self.id} is over (outcome {outcome!r}): read its record with GET "
            f"/api/sessions/{self.id}/record, or start a new episode"
        )


class StoreWriter:
    """Saves finished episodes through a writer process (:mod:`opsgym.server.writer`).

    A write (SQLAlchemy, the events' JSON, the commit) costs milliseconds of Python; in the
    server's process it would hold the interpreter lock while sessions wait to step. The writer
    is started on the first episode to save; records cross a pipe as JSON, sent by a thread of
    this process so that a busy store never blocks the event loop. Reads (``store``) use an
    engine of this process.

    Args:
        url: The store (path or URL; ``None``: ``OPSGYM_DB`` or the default file).
    """

    def __init__(self, url: str | None):
        self.url = url
        self.sent = 0
        self.written = 0
        self.failed = 0
        self._outbox: queue.Queue[bytes | None] = queue.Queue()
        self._process: subprocess.Popen[bytes] | None = None
        self._settled = threading.Condition()
        self._store: Any = None

    def put(self, episode: Episode, policy: str, split: str) -> None:
        """Queue one finished episode: its draft (:meth:`Episode.draft`), serialised here in one
        call; the writer computes the hash chain and the rows it stores, so the cost of a
        record (most of a millisecond of Python for 60 steps) is not paid where sessions wait.
        """
        if self._process is None:
            self._start()
        self.sent += 1
        item = {"draft": episode.draft(), "policy": policy, "split": split}
        try:
            payload = orjson.dumps(item)
        except TypeError:  # an integer beyond 64 bits, as a client may send
            payload = json.dumps(jsonable(item)).encode()
        self._outbox.put(payload)

    def _start(self) -> None:
        url = "" if self.url is None else str(self.url)
        self._process = subprocess.Popen(
            [sys.executable, "-m", "opsgym.server.writer", url],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        threading.Thread(target=self._send, name="opsgym-store-send", daemon=True).start()
        threading.Thread(target=self._hear, name="opsgym-store-hear", daemon=True).start()

    def _send(self) -> None:
        from opsgym.server.writer import frame

        pipe = self._process.stdin
        while True:
            payload = self._outbox.get()
            try:
                pipe.write(frame(payload or b""))
                pipe.flush()
            except (BrokenPipeError, ValueError, OSError):
                break
            if payload is None:
                break

    def _hear(self) -> None:
        for line in self._process.stdout:
            stored, refused = (int(x) for x in line.split())
            with self._settled:
                self.written += stored
                self.failed += refused
                self._settled.notify_all()
        with self._settled:
            self._settled.notify_all()

    def flush(self, timeout: float = 30.0) -> bool:
        """Wait until every queued episode is written (or refused); ``False`` on timeout."""
        with self._settled:
            return (
                self._settled.wait_for(
                    lambda: (
                        self.written + self.failed >= self.sent
                        or (self._process is not None and self._process.poll() is not None)
                    ),
                    timeout,
                )
                and self.written + self.failed >= self.sent
            )

    def close(self, timeout: float = 30.0) -> None:
        """Write what is queued, stop the writer and close the read engine."""
        if self._process is not None:
            self.flush(timeout)
            self._outbox.put(None)
            try:
                self._process.wait(timeout)
            except subprocess.TimeoutExpired:
                self._process.kill()
            self._process = None
        if self._store is not None:
            self._store.close()
            self._store = None

    @property
    def store(self) -> Any:
        """The store, for reads (opened in this process on first use)."""
        if self._store is None:
            from opsgym.store import open_store

            self._store = open_store(self.url)
        return self._store


class SessionManager:
    """Every open session, the capacity limit, the idle reaper and the curricula.

    Args:
        max_sessions: Open sessions before :class:`CapacityError`.
        idle_timeout_s: A session untouched this long is reaped.
        writer: Where finished episodes go (``None``: nowhere).
        allow_overrides: Let sessions force hidden facts (leak tests only).
    """

    def __init__(
        self,
        max_sessions: int,
        idle_timeout_s: float,
        writer: StoreWriter | None = None,
        *,
        allow_overrides: bool = False,
    ):
        self.max_sessions = max_sessions
        self.idle_timeout_s = idle_timeout_s
        self.writer = writer
        self.allow_overrides = allow_overrides
        self.sessions: dict[str, Session] = {}
        self.curricula: dict[str, Any] = {}
        self.reaped = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.sessions)

    def create(
        self,
        env: str,
        scenario: str | None = None,
        seed: int | None = None,
        *,
        config: dict[str, Any] | None = None,
        split: str | None = None,
        overrides: dict[str, Any] | None = None,
        kind: str = "rest",
        label: str | None = None,
        curriculum: bool = False,
    ) -> Session:
        """Open a session on a new episode.

        Raises:
            CapacityError: no slot is free.
            UnknownNameError, ValueError: a bad env, scenario, seed, split or config.
        """
        episode, split = self._episode(env, scenario, seed, config, split, overrides, curriculum)
        with self._lock:
            if len(self.sessions) >= self.max_sessions:
                raise CapacityError(len(self.sessions), self.max_sessions)
            session = Session(
                id=secrets.token_urlsafe(12),
                episode=episode,
                kind=kind,
                split=split,
                seed_given=seed is not None,
                label=label,
                curriculum=curriculum,
            )
            self.sessions[session.id] = session
        return session

    def _episode(
        self,
        env: str,
        scenario: str | None,
        seed: int | None,
        config: dict[str, Any] | None,
        split: str | None,
        overrides: dict[str, Any] | None,
        curriculum: bool,
    ) -> tuple[Episode, str]:
        if overrides and not self.allow_overrides:
            raise ValueError("overrides are refused by this server (they force hidden facts)")
        s = spec(env)
        if curriculum:
            if config:
                raise ValueError("a curriculum session takes its config from the curriculum")
            config = self.curriculum(s.name).config
        resolved = EpisodeRequest(
            s.name,
            scenario,
            seed,
            split=split,
            config=config or {},
            overrides=overrides or {},
            token_source="estimate",
        ).resolve()
        return resolved.start(), resolved.split

    def renew(
        self,
        session: Session,
        env: str,
        scenario: str | None = None,
        seed: int | None = None,
        *,
        config: dict[str, Any] | None = None,
        split: str | None = None,
        overrides: dict[str, Any] | None = None,
        kind: str = "ws",
        label: str | None = None,
        curriculum: bool = False,
    ) -> Session:
        """A new episode in ``session`` (an OpenEnv reset); the old one is saved if it ended."""
        episode, split = self._episode(env, scenario, seed, config, split, overrides, curriculum)
        self.settle(session)
        session.episode, session.split, session.seed_given = episode, split, seed is not None
        session.label, session.curriculum, session.driver = label, curriculum, None
        session.episode_key = secrets.token_urlsafe(12)
        session.agents = {}
        session.stored, session.touched = False, time.monotonic()
        return session

    def get(self, session_id: str) -> Session:
        """The open session ``session_id`` (touched: it is in use)."""
        session = self.sessions.get(session_id)
        if session is None:
            raise SessionNotFound(
                f"no open session {session_id!r} ({len(self.sessions)} open; GET /api/sessions "
                "lists them; sessions idle for "
                f"{self.idle_timeout_s:g} s are closed)"
            )
        session.touched = time.monotonic()
        return session

    def close(self, session_id: str) -> Session:
        """Close a session; its episode is saved if it had ended (a running one is dropped)."""
        with self._lock:
            session = self.sessions.pop(session_id, None)
        if session is None:
            raise SessionNotFound(f"no open session {session_id!r}")
        self.settle(session)
        return session

    def settle(self, session: Session) -> None:
        """Once its episode has ended: save it and tell the curriculum (once)."""
        if not session.done or session.stored:
            return
        session.stored = True
        ep = session.episode
        if session.curriculum and ep.verdict is not None:
            self.curriculum(ep.env).record(ep.verdict.outcome in ep.spec.safe_outcomes)
        if self.writer is not None:
            self.writer.put(ep, session.driver or "client", session.split)

    def reap(self, now: float | None = None) -> list[str]:
        """Close every session idle longer than the timeout; return their ids."""
        now = time.monotonic() if now is None else now
        stale = [
            sid
            for sid, s in list(self.sessions.items())
            if now - s.touched > self.idle_timeout_s and not s.busy.locked()
        ]
        for sid in stale:
            try:
                self.close(sid)
            except SessionNotFound:
                continue
            self.reaped += 1
        return stale

    def curriculum(self, env: str) -> Any:
        """The server's curriculum for ``env`` (one per world that has levels).

        Raises:
            ValueError: the world has no curriculum.
        """
        if env not in self.curricula:
            factory = spec(env).curriculum
            if factory is None:
                raise ValueError(f"the {env} world has no curriculum (only levelled worlds do)")
            self.curricula[env] = factory()
        return self.curricula[env]
