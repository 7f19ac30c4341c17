"""How a model's reply becomes calls: strict parsing, nothing guessed.

:func:`parse_reply` reads a reply in the formats models emit: OpenAI ``tool_calls`` (message
objects or dicts), calls written in the text as
``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` (Qwen and Hermes chat templates; any
number of blocks), or a reply that is one bare JSON call object (or a list of them: Llama's
``{"name": ..., "parameters": ...}``, Mistral's ``[TOOL_CALLS][...]``), optionally in one code
fence. Reasoning in ``<think>...</think>`` is dropped first: a call drafted while thinking is not
a call. Anything else is free text. Nothing is guessed: prose around a JSON object makes it
prose, a call without a name or with arguments that are not a JSON object is a malformed call
(a :class:`ParsedCall` with its ``error``), which the turn records and rejects
(:mod:`opsgym.adapters.toolcalls.turn`). So is JSON nested deeper than an honest call ever is
(arguments past :data:`~opsgym.core.episode.MAX_DEPTH` levels, a reply past
:data:`~opsgym.core.episode.MAX_MESSAGE_DEPTH`): it is kept as an excerpt of its text, never as
the value, so nothing after the parser (the turn, the next prompt, the transcript, the store)
walks it.

:func:`reply_text` is everything the model wrote in a reply, what the token estimate counts when
the provider reports no usage.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from opsgym.core.episode import MAX_DEPTH, MAX_MESSAGE_DEPTH, jsonable, nests_deeper

EXCERPT = 200
"""Characters of a call's text kept when its JSON cannot be used (undecodable, too deep)."""


@dataclass(frozen=True, slots=True)
class ParsedCall:
    """One call found in a reply.

    Attributes:
        name: The tool name as written (``None`` when the call had none).
        arguments: The arguments: a dict when they parsed as a JSON object, else the raw text.
        source: ``tool_calls`` (native), ``tag`` (``<tool_call>`` text) or ``json`` (a bare
            JSON reply).
        id: The native call id, if any.
        error: Why the call is malformed, or ``None``.
    """

    name: Any
    arguments: Any
    source: str
    id: str | None = None
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON form, for the transcript."""
        return {
            "name": self.name,
            "arguments": self.arguments,
            "source": self.source,
            "id": self.id,
            "error": self.error,
        }


@dataclass(frozen=True, slots=True)
class ParsedReply:
    """A model's reply, read.

    Attributes:
        calls: Every call found, in order (possibly more than a turn runs:
            :data:`~opsgym.adapters.toolcalls.render.MAX_CALLS`).
        text: The free text: the reply's content without reasoning and call blocks.
        reasoning: Reasoning the reply carried (``<think>`` blocks, ``reasoning_content``).
    """

    calls: tuple[ParsedCall, ...]
    text: str
    reasoning: str = ""


_THINK = re.compile(r"<think>.*?(?:</think>|\Z)", re.S)
_TAG = re.compile(r"<tool_call>(.*?)</tool_call>", re.S)
_OPEN_TAG = "<tool_call>"
_MISTRAL = "[TOOL_CALLS]"  # Mistral's templates put this before a JSON list of calls
_FENCE = re.compile(r"\A```[A-Za-z]*\s*\n?(.*?)\n?```\Z", re.S)


def _get(obj: Any, key: str) -> Any:
    if isinstance(obj, dict):
        return obj.get(key)
    value = getattr(obj, key, None)
    if value is None:
        extra = getattr(obj, "model_extra", None)
        if isinstance(extra, dict):
            value = extra.get(key)
    return value


def _content(message: Any) -> str:
    """The message's text (a string, or the text parts of a list of content parts)."""
    content = message if isinstance(message, str) else _get(message, "content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(_get(p, "text") or "") for p in content)
    return str(content)


def _arguments(raw: Any) -> tuple[Any, str | None]:
    """``(arguments, error)``: a dict, or the raw value and why it is not one."""
    if raw is None:
        return {}, None
    if isinstance(raw, dict):
        if nests_deeper(raw, MAX_DEPTH):  # a native call handed over decoded (a dict message)
            return jsonable(raw), _TOO_DEEP_ARGUMENTS
        return raw, None
    if not isinstance(raw, str):
        return raw, f"arguments must be a JSON object, got {type(raw).__name__}"
    if not raw.strip():
        return {}, None  # some servers send "" for a tool without arguments
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        return raw, f"arguments are not valid JSON ({exc.msg} at {exc.pos})"
    except ValueError as exc:  # valid JSON Python will not decode: an integer over 4,300 digits
        return raw[:EXCERPT], f"arguments cannot be decoded ({_reason(exc)})"
    except RecursionError:  # a reply of nested brackets: rejected, never the run's end
        return raw[:EXCERPT], _TOO_DEEP_ARGUMENTS
    if nests_deeper(value, MAX_DEPTH):  # decoded, but the next prompt would recurse into it
        return raw[:EXCERPT], _TOO_DEEP_ARGUMENTS
    if not isinstance(value, dict):
        return raw, f"arguments must be a JSON object, got {type(value).__name__}"
    return value, None


_TOO_DEEP_ARGUMENTS = f"arguments nested deeper than {MAX_DEPTH} levels"
_TOO_DEEP_JSON = f"JSON nested deeper than {MAX_MESSAGE_DEPTH} levels"


def _reason(exc: ValueError) -> str:
    """The first clause of a decoding error (Python's own advice after it is not the model's)."""
    return str(exc).split(":", 1)[0]


def _named(name: Any, error: str | None) -> str | None:
    if error is None and (not isinstance(name, str) or not name):
        return "the call has no tool name"
    return error


def _from_object(obj: Any, source: str) -> ParsedCall:
    """A call from a decoded JSON value written in the text."""
    if not isinstance(obj, dict):
        return ParsedCall(None, obj, source, error="a call must be a JSON object with a name")
    raw = obj["arguments"] if "arguments" in obj else obj.get("parameters")
    arguments, error = _arguments(raw)
    name = obj.get("name")
    return ParsedCall(name, arguments, source, error=_named(name, error))


def _from_json_text(text: str, source: str) -> list[ParsedCall]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return [ParsedCall(None, text, source, error=f"not valid JSON ({exc.msg} at {exc.pos})")]
    except ValueError as exc:  # as in _arguments
        return [
            ParsedCall(
                None, text[:EXCERPT], source, error=f"JSON cannot be decoded ({_reason(exc)})"
            )
        ]
    except RecursionError:
        return [ParsedCall(None, text[:EXCERPT], source, error=_TOO_DEEP_JSON)]
    if nests_deeper(value, MAX_MESSAGE_DEPTH):
        return [ParsedCall(None, text[:EXCERPT], source, error=_TOO_DEEP_JSON)]
    if isinstance(value, list) and value:
        return [_from_object(v, source) for v in value]
    return [_from_object(value, source)]


def _native(calls: Any) -> list[ParsedCall]:
    out = []
    for call in calls:
        function = _get(call, "function")
        name = _get(function, "name") if function is not None else None
        raw = _get(function, "arguments") if function is not None else None
        arguments, error = _arguments(raw)
        ident = _get(call, "id")
        out.append(
            ParsedCall(
                name,
                arguments,
                "tool_calls",
                id=ident if isinstance(ident, str) else None,
                error=_named(name, error),
            )
        )
    return out


def parse_reply(message: Any) -> ParsedReply:
    """Read a model's reply: an OpenAI message (object or dict) or its text.

    Native ``tool_calls``, when present, are the calls (text then stays text). Otherwise the
    text's ``<tool_call>`` blocks are (an opening tag never closed is a malformed call);
    otherwise a reply that is exactly one JSON object or list of them (in a code fence or not)
    is read as call(s); otherwise there is no call.
    """
    raw_text = _content(message)
    reasoning = "" if isinstance(message, str) else str(_get(message, "reasoning_content") or "")
    thoughts = _THINK.findall(raw_text)
    if thoughts:
        reasoning = "\n".join(filter(None, [reasoning, *thoughts]))
    text = _THINK.sub("", raw_text)
    if "</think>" in text:  # a template that opened the reasoning in the prompt
        head, _, text = text.rpartition("</think>")
        reasoning = "\n".join(filter(None, [reasoning, head]))
    native = None if isinstance(message, str) else _get(message, "tool_calls")
    if native:
        return ParsedReply(tuple(_native(native)), text.strip(), reasoning)
    calls: list[ParsedCall] = []
    for block in _TAG.findall(text):
        calls.extend(_from_json_text(block.strip(), "tag"))
    rest = _TAG.sub("", text)
    if _OPEN_TAG in rest:
        tail = rest[rest.index(_OPEN_TAG) + len(_OPEN_TAG) :].strip()
        calls.append(ParsedCall(None, tail, "tag", error="<tool_call> opened and never closed"))
        rest = rest[: rest.index(_OPEN_TAG)]
    if not calls:
        bare = rest.strip().removeprefix(_MISTRAL).lstrip()
        fenced = _FENCE.fullmatch(bare)
        if fenced:
            bare = fenced.group(1).strip()
        if bare[:1] in ("{", "["):
            calls = _from_json_text(bare, "json")
            rest = ""
    return ParsedReply(tuple(calls), rest.strip(), reasoning)


def reply_text(message: Any) -> str:
    """Everything the model wrote in a reply (text, reasoning, native calls): what
    :func:`count_tokens` counts when the provider reports no usage.
    """
    parts = [_content(message)]
    if not isinstance(message, str):
        parts.append(str(_get(message, "reasoning_content") or ""))
        for call in _get(message, "tool_calls") or []:
            function = _get(call, "function")
            parts.append(str(_get(function, "name") or ""))
            raw = _get(function, "arguments")
            parts.append(raw if isinstance(raw, str) else json.dumps(raw))
    return "".join(parts)
