"""Conversation formats: how a model meets an episode turn by turn, whatever serves it.

A model is evaluated in the format it was trained in: a different one would measure the change
of format as much as the model. So the format is a strategy of its own
(:func:`conversation`), which the drive loop (:func:`opsgym.agents.drive.drive`) hands to any
backend, an OpenAI-compatible endpoint or a local Transformers model. There are two, and they
differ in what the model keeps between turns:

* **snapshot** (:class:`Snapshot`, the ``llm:`` policies' format): each turn a fresh
  ``[system, user]`` pair. The system message is the world's brief and the reply rules (tools
  in the request, or listed in the system message with ``tools_in_prompt``); the user message is
  the whole state now as compact text, then what each call of the previous turn returned
  (:func:`opsgym.adapters.toolcalls.state_text`). No history is resent: the observation holds
  everything the agent has been told, so the prompt is the same size every turn.
* **history** (:class:`History`, the ``hf:`` policies' and the trainers' format): the
  conversation of TRL's environment loop, growing turn by turn as in GRPO's rollouts and in the
  SFT reference conversations (:mod:`opsgym.training.data`). The first prompt as one user message
  (:func:`user_message`: :func:`opsgym.adapters.trl.prompt`, the system text and the first
  state, without tool schemas), the tools in the chat template's tool list (:func:`tool_schemas`:
  the JSON schemas ``transformers`` builds from :mod:`opsgym.adapters.trl`'s environment class,
  in the order TRL lists them), then per turn the model's reply (:func:`call_message` is the form
  of one call) and a tool message with what each call reported (:func:`tool_message`).

Through an endpoint, the history format wants one that renders the conversation with the model's
own chat template (vLLM, SGLang, llama.cpp's server): a tool message answering calls written in
the text carries no ``tool_call_id``, which OpenAI's own API refuses.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Mapping
from functools import cache
from typing import TYPE_CHECKING, Any, Protocol

from opsgym.adapters.toolcalls import (
    MAX_CALLS,
    ParsedReply,
    TurnOutcome,
    state_text,
    system_text,
)
from opsgym.adapters.trl import RESERVED, environment_factory, prompt
from opsgym.core.errors import MissingExtraError

if TYPE_CHECKING:
    from opsgym.core.seat import AgentView

FORMATS = ("snapshot", "history")
"""The conversation formats, by name (see the module docstring)."""


@cache
def tool_schemas_json(env: str) -> str:
    """:func:`tool_schemas` as JSON text (a dataset row's ``tools`` column), made once per
    world.
    """
    try:
        from transformers.utils import get_json_schema
    except ModuleNotFoundError as exc:
        raise MissingExtraError(exc, "grpo") from None

    cls = environment_factory(env)
    instance = cls()
    # TRL lists an environment's tools with inspect.getmembers on its class: sorted by name.
    names = [
        name
        for name, _ in inspect.getmembers(cls, predicate=inspect.isfunction)
        if name not in RESERVED and not name.startswith("_")
    ]
    return json.dumps([get_json_schema(getattr(instance, name)) for name in names])


def tool_schemas(env: str) -> list[dict[str, Any]]:
    """The tools of ``env`` as the chat template is given them: the schemas ``transformers``
    builds from the TRL environment's methods, in TRL's order (a fresh copy each call).
    """
    schemas: list[dict[str, Any]] = json.loads(tool_schemas_json(env))
    return schemas


def user_message(text: str) -> dict[str, Any]:
    """The conversation's first message: the environment's first prompt."""
    return {"role": "user", "content": text}


def call_message(name: str, arguments: Mapping[str, Any] | str) -> dict[str, Any]:
    """An assistant message making one call; ``arguments`` as a mapping or as JSON text.

    The template writes JSON text as it is, and a mapping as ``json.dumps`` writes it (its
    ``tojson``), so both render alike.
    """
    if not isinstance(arguments, str):
        arguments = json.dumps(dict(arguments), ensure_ascii=False)
    call = {"type": "function", "function": {"name": name, "arguments": arguments}}
    return {"role": "assistant", "content": "", "tool_calls": [call]}


def tool_message(name: str, text: str) -> dict[str, Any]:
    """What a tool reported, as TRL hands it back to the model."""
    return {"role": "tool", "name": name, "content": text}


# -- the formats ----------------------------------------------------------------------------


class Conversation(Protocol):
    """One episode's conversation in one format: what the model is sent each turn.

    Attributes:
        format: The format's name (:data:`FORMATS`).
        tools: The tool schemas that travel beside the messages (the request's ``tools``, the
            chat template's tool list), or ``None`` when the messages list them.
    """

    format: str
    tools: list[dict[str, Any]] | None

    def setup(self) -> dict[str, Any]:
        """What the transcript's ``setup`` entry records of the format (fixed for the episode)."""

    def messages(self, obs: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """This turn's messages (``obs`` is ``Episode.observe()`` now) and what the turn's
        transcript entry records of them.
        """

    def add(self, reply: dict[str, Any], parsed: ParsedReply, outcome: TurnOutcome) -> None:
        """Take in the model's ``reply`` (an assistant message), as read and as carried out."""


class Snapshot:
    """Each turn ``[system, user]``: the brief and the rules, then the state now and the last
    turn's results (see the module docstring).

    Args:
        episode: The episode.
        tools_in_prompt: List the tools in the system message instead of sending them beside
            it, for servers without native tool calling.
    """

    format = "snapshot"

    def __init__(self, episode: AgentView, *, tools_in_prompt: bool = False):
        self.tools = None if tools_in_prompt else episode.tools
        self._schemas = episode.tools
        self._system = system_text(
            episode.env, episode.spec.brief, episode.tools if tools_in_prompt else None
        )
        self._results: list[tuple[str, str]] | None = None

    def setup(self) -> dict[str, Any]:
        """The system message (the same every turn) and where the tools travel."""
        return {
            "tools": "request" if self.tools is not None else "system message",
            "max_calls": MAX_CALLS,
            "system": self._system,
            "schemas": self._schemas,
        }

    def messages(self, obs: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """The system message and the state now, with what the last turn's calls returned."""
        user = state_text(obs, self._results)
        return [{"role": "system", "content": self._system}, user_message(user)], {"user": user}

    def add(self, reply: dict[str, Any], parsed: ParsedReply, outcome: TurnOutcome) -> None:
        """Keep what each call returned, for the next user message."""
        self._results = outcome.results


class History:
    """TRL's environment-loop conversation, growing turn by turn (see the module docstring)."""

    format = "history"

    def __init__(self, episode: AgentView):
        self.tools: list[dict[str, Any]] | None = tool_schemas(episode.env)
        self._messages = [user_message(prompt(episode))]

    def setup(self) -> dict[str, Any]:
        """The first message and the tools the chat template lists."""
        return {"first_message": self._messages[0]["content"], "schemas": self.tools}

    def messages(self, obs: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """The conversation so far (the state is in it already), a copy the backend may keep."""
        return list(self._messages), {"messages": len(self._messages)}

    def add(self, reply: dict[str, Any], parsed: ParsedReply, outcome: TurnOutcome) -> None:
        """Append the reply and one tool message per call that ran or was rejected, as TRL does.

        A native call with an id is always answered (an endpoint wants an answer to each id), a
        skipped or extra one with why it did not run. Otherwise a reply-wide rejection (no call,
        too many calls) is a tool message without a tool's name.
        """
        message: dict[str, Any] = {"role": "assistant", "content": reply.get("content")}
        if reply.get("tool_calls"):
            message["tool_calls"] = reply["tool_calls"]
        elif message["content"] is None:
            message["content"] = ""
        self._messages.append(message)
        results = iter(outcome.results)
        for call, entry in zip(parsed.calls, outcome.calls, strict=False):
            if entry["status"] in ("ran", "rejected"):
                said = next(results)[1]
            elif call.id is not None:
                said = json.dumps({"rejected": f"{entry['status']}: {entry['reason']}"})
            else:
                continue
            answer = tool_message(call.name if isinstance(call.name, str) else "", said)
            if call.id is not None:
                answer["tool_call_id"] = call.id
            self._messages.append(answer)
        if not any(call.id is not None for call in parsed.calls):  # each id is answered above
            self._messages.extend(tool_message("", said) for _, said in results)


def conversation(format: str, episode: AgentView, *, tools_in_prompt: bool = False) -> Conversation:
    """A new conversation over ``episode`` in ``format`` (:data:`FORMATS`).

    ``tools_in_prompt`` (list the tools in the system message) is the snapshot format's option;
    the history format always gives them to the chat template.
    """
    if format == "snapshot":
        return Snapshot(episode, tools_in_prompt=tools_in_prompt)
    if format == "history":
        if tools_in_prompt:
            raise ValueError(
                "tools_in_prompt is the snapshot format's option; the history format gives the "
                "tools to the chat template"
            )
        return History(episode)
    raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {format!r}")
