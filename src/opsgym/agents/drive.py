"""The one loop that plays an episode with a model: a backend, in a conversation format.

Every model-facing policy plays through :func:`drive`: the ``llm:`` agents (an OpenAI-compatible
endpoint, :mod:`opsgym.agents.llm`), the ``hf:`` policies (a local Transformers model, free or
constrained, :mod:`opsgym.agents.hf`) and the offline planner. Two things vary, apart:

* the **backend** (:class:`Backend`) turns one turn's messages and tools into a reply: it knows
  how to reach a model, nothing of episodes;
* the **conversation format** (:mod:`opsgym.adapters.chat`: ``snapshot`` or ``history``) says
  what the model is sent each turn, and takes in what each reply did.

So a model is evaluated in the format it was trained in, through either backend
(``llm+history:MODEL`` is a model trained by ``opsgym train`` served by vLLM;
``hf+snapshot:PATH`` a local model meeting episodes as the ``llm:`` policies do).

Each turn: the format's messages go to the backend; the reply is read with
:func:`opsgym.adapters.toolcalls.parse_reply` (or, for a backend that chose a call itself, as it
says) and carried out with :func:`~opsgym.adapters.toolcalls.run_turn`: 1 to 3 calls, each
validated by the episode, the batch stopped at the first unexpected result, a reply without a
call recorded and rejected as such. The turn's tokens (:func:`tokens`) are charged to its first
step.

**Budget.** At most ``turns`` turns (every turn spends at least one step, so the episode's step
budget ends first when ``turns`` is that budget). An episode still running when the turns are
spent, or whose conversation no longer fits the model (the backend raises
:class:`OutOfContext`), is left unfinished, without a verdict, and the transcript says why.

**Record.** ``Episode.transcript`` gets a ``setup`` entry (the agent, the backend, the format and
what the format fixes for the episode: the system message or the first message, the tool
schemas) and per turn what the format sent (``user`` for the snapshot format), the raw response,
the parsed calls, what became of each (ran, rejected, skipped, extra, with its step), the tokens
and their source, the retries, and what the backend adds (a constrained choice's candidates).
A backend that fails mid-turn leaves the turn in the transcript with its ``error``.

**Progress.** Each turn is logged at ``INFO`` on the agent's logger (under ``opsgym.agents``),
which ``opsgym eval`` shows beside its progress bar.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from opsgym.adapters import toolcalls
from opsgym.adapters.chat import Conversation, conversation
from opsgym.agents.base import Call, legal_calls
from opsgym.core.episode import Episode, StepResult
from opsgym.core.errors import OpsgymError
from opsgym.core.seat import Seat

DEFAULT_DECISIONS = 500
"""Turns per episode when neither the agent nor the episode's step budget bounds them."""


class LLMError(OpsgymError):
    """A model-facing agent cannot run: a missing setting or package, a wrong world."""


class OutOfContext(Exception):  # noqa: N818 -- a reason to stop, not a failure
    """The conversation no longer fits the model: the episode stops unfinished (the message
    says why).
    """


@dataclass(frozen=True)
class Request:
    """One turn's question to a backend.

    ``messages`` and ``tools`` are what a model is sent. ``obs`` and ``legal`` (the legal
    catalogue calls, filled in for a backend that ``needs_legal``) are for backends that choose
    among valid calls: the offline planner, constrained decoding.
    """

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None
    obs: dict[str, Any]
    legal: list[Call] = field(default_factory=list)


@dataclass(frozen=True)
class Reply:
    """A backend's answer.

    Attributes:
        message: The assistant message (a dict, OpenAI's shape).
        usage: Token usage (``completion_tokens``, ``prompt_tokens``), or ``None``.
        raw: The response as the backend got it (JSON), for the transcript.
        retries: Retries the request took.
        parsed: The calls, when the backend chose them itself (constrained decoding); else
            they are read from ``message``.
        details: More for the turn's transcript entry (a constrained choice's candidates).
    """

    message: dict[str, Any]
    usage: dict[str, Any] | None
    raw: Any
    retries: int = 0
    parsed: toolcalls.ParsedReply | None = None
    details: Mapping[str, Any] = field(default_factory=dict)


class Backend(Protocol):
    """Where replies come from: turns a :class:`Request` into a :class:`Reply`.

    Attributes:
        label: What it is, for the transcript (``openai-compatible endpoint ...``).
        token_source: ``None``: a reply's tokens are the provider's ``usage`` if it reports
            one, else the face's estimate; ``"tokenizer"``: ``usage`` is the model's own count;
            ``"none"``: no tokens (not a model).
        needs_legal: Whether requests must carry the legal catalogue calls.
    """

    label: str
    token_source: str | None
    needs_legal: bool

    def reset(self, rng: np.random.Generator | None) -> None:
        """Prepare for a new episode (``rng``: the policy's own randomness, never the seed)."""

    def complete(self, request: Request) -> Reply:
        """The reply to ``request``.

        Raises:
            OutOfContext: the request does not fit the model (the episode stops).
        """

    def feedback(self, result: StepResult) -> None:
        """What a call returned (the planner's scripted policy may want it)."""


def tokens(backend: Backend, reply: Reply) -> tuple[int, str]:
    """The turn's tokens and their source (see :class:`Backend`'s ``token_source``)."""
    fixed = backend.token_source
    if fixed == "none":
        return 0, "none"
    counted = (reply.usage or {}).get("completion_tokens")
    if isinstance(counted, int) and not isinstance(counted, bool) and counted >= 0:
        return counted, fixed or "provider"
    return toolcalls.count_tokens(toolcalls.reply_text(reply.message)), "estimate"


def drive(
    episode: Seat,
    backend: Backend,
    conversation: Conversation,
    *,
    agent: str,
    turns: int | None = None,
    setup: Mapping[str, Any] | None = None,
    log: logging.Logger | None = None,
) -> Seat:
    """Play ``episode`` until it ends, the turns run out or the model's context is full.

    Args:
        episode: The agent's seat at a running episode (what it may see and do).
        backend: Where replies come from.
        conversation: The episode's conversation, in its format.
        agent: The policy's name, for the transcript and the log.
        turns: Most turns (``None``: the episode's step budget, else
            :data:`DEFAULT_DECISIONS`).
        setup: More for the transcript's ``setup`` entry (the agent's settings).
        log: Where each turn is logged (``INFO``).

    Returns:
        The episode. Whatever the backend raises (an endpoint that fails) propagates; the
        transcript keeps the turn with its ``error``.
    """
    limit = turns or episode.max_steps or DEFAULT_DECISIONS
    episode.transcript.append(
        {
            "kind": "setup",
            "agent": agent,
            "backend": backend.label,
            **(setup or {}),
            "format": conversation.format,
            **conversation.setup(),
        }
    )
    turn = 0
    while not episode.done:
        if turn >= limit:
            episode.transcript.append(
                {"kind": "stop", "reason": f"the decision budget ({limit} turns) is spent"}
            )
            break
        started = time.monotonic()
        obs = episode.observe()
        messages, shown = conversation.messages(obs)
        request = Request(
            messages, conversation.tools, obs, legal_calls(episode) if backend.needs_legal else []
        )
        entry: dict[str, Any] = {"kind": "turn", "turn": turn + 1, "step": episode.steps, **shown}
        try:
            reply = backend.complete(request)
        except OutOfContext as stop:
            episode.transcript.append({"kind": "stop", "reason": str(stop)})
            break
        except Exception as exc:
            entry["error"] = str(exc)
            episode.transcript.append(entry)
            raise
        turn += 1
        episode.transcript.append(entry)
        spent = _play(episode, backend, conversation, reply, entry)
        if log is not None:
            log.info(
                "%s: %s, turn %d of at most %d, step %d: %d tokens in %.1f s",
                agent,
                episode.env,
                turn,
                limit,
                episode.steps,
                spent,
                time.monotonic() - started,
            )
    return episode


def _play(
    episode: Seat,
    backend: Backend,
    conversation: Conversation,
    reply: Reply,
    entry: dict[str, Any],
) -> int:
    """Carry ``reply`` out and record it in ``entry``; the tokens it was charged."""
    parsed = reply.parsed or toolcalls.parse_reply(reply.message)
    spent, source = tokens(backend, reply)
    if episode.steps == 0:  # the record names its token source before its first step
        episode.token_source = source
    usage = reply.usage or {}
    entry.update(
        **reply.details,
        response=reply.raw,
        retries=reply.retries,
        parsed=[c.to_dict() for c in parsed.calls],
        text=parsed.text,
        reasoning=parsed.reasoning,
        tokens={
            "charged": spent,
            "source": source,
            "prompt": usage.get("prompt_tokens"),
            "completion": usage.get("completion_tokens"),
        },
    )
    outcome = toolcalls.run_turn(episode, parsed, spent, on_result=backend.feedback)
    entry.update(calls=outcome.calls, stopped=outcome.stopped, steps=outcome.steps)
    conversation.add(reply.message, parsed, outcome)
    return spent


class ModelAgent:
    """A policy that steps episodes itself through :func:`drive`: the base of the LLM agent
    and the local-model policies.

    Subclasses set ``env``, ``name``, ``backend``, ``format``, ``turns`` and what the setup
    entry records (:meth:`setup`).
    """

    env: str
    name: str
    backend: Backend
    format: str = "snapshot"
    tools_in_prompt: bool = False
    turns: int | None = None
    deterministic = False
    log = logging.getLogger("opsgym.agents")

    def setup(self) -> dict[str, Any]:
        """What the transcript's setup entry records of the agent (its settings)."""
        return {}

    def reset(self, rng: np.random.Generator | None = None) -> None:
        """Prepare for a new episode (``rng``: the policy's own randomness)."""
        self.backend.reset(rng)

    def act(self, obs: dict[str, Any], legal: list[Call]) -> Call:
        """Not supported: the agent makes several calls a turn and counts their tokens, so it
        steps the episode itself (:meth:`drive`, which :func:`opsgym.agents.play` calls).
        """
        raise LLMError(
            f"{self.name} steps episodes itself: use opsgym.agents.play(episode, agent) or "
            "agent.drive(episode), not act()."
        )

    def drive(self, episode: Episode | Seat) -> Episode | Seat:
        """Play ``episode`` (or the seat :func:`opsgym.agents.play` hands it) until it ends or
        the turns run out; return it (see :func:`drive`). The model sees only what the seat
        shows.
        """
        if episode.env != self.env:
            raise LLMError(f"{self.name} plays {self.env!r}, not {episode.env!r}.")
        drive(
            episode if isinstance(episode, Seat) else Seat(episode),
            self.backend,
            conversation(self.format, episode, tools_in_prompt=self.tools_in_prompt),
            agent=self.name,
            turns=self.turns,
            setup=self.setup(),
            log=self.log,
        )
        return episode
