"""The chat format of TRL's environment loop, shared by everything that talks to a local LLM.

The trainers' reference conversations (:mod:`opsgym.training.data`), GRPO's rollouts and the
``hf:`` policies (:mod:`opsgym.agents.hf`) build their conversations from these pieces, so that a
model is trained and evaluated on one kind of conversation: the first prompt as one user message
(:func:`user_message`), the tools in the chat template's tool list (:func:`tool_schemas`: the
JSON schemas ``transformers`` builds from :mod:`opsgym.adapters.trl`'s environment class, in the
order TRL lists them), then per call an assistant message making it (:func:`call_message`) and a
tool message with what the tool reported (:func:`tool_message`).
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Mapping
from functools import cache
from typing import Any

from opsgym.adapters.trl import RESERVED, environment_factory


@cache
def tool_schemas_json(env: str) -> str:
    """:func:`tool_schemas` as JSON text (a dataset row's ``tools`` column), made once per
    world.
    """
    from transformers.utils import get_json_schema

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
    return json.loads(tool_schemas_json(env))


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
