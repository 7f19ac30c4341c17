"""What an LLM agent is shown: the system text, the state as compact text, what a call returned.

:func:`render_messages` gives ``[system, user]`` chat messages. The system message is the world's
brief (``EnvSpec.brief``: the job, in the world's words), the reply rules (1 to :data:`MAX_CALLS`
calls a turn, how a batch stops) and, unless the serving stack takes tools natively, the tool
schemas (``Episode.tools``, generated from each tool's pydantic model). The user message is
:func:`state_text` of ``Episode.observe()``: a lossless, compact text form of the observation and
nothing else, so the prompt carries exactly what the agent has been told (the observation is what
the leak audit proves free of the truth and of the family). It is stable: equal observations give
the same bytes (keys are sorted at every level; no clock, no set order). Compact: no quotes around
keys and plain strings, no space after ``:`` and ``,``, and a list of records with one set of
keys is a table (the keys once, then a row per record). Over the oracle's ``mixed`` episodes it
is 8-22% shorter than compact JSON of the same observations in characters, and in
:func:`~opsgym.adapters.toolcalls.tokens.count_tokens` 16% fewer for oversight (its lists of
proposals and workers), about the same for fleet and release (-1.5%, +2%: their values are mostly
numbers and logs).

What a call returned reaches the model as :func:`result_text` (the report, or why the call was
rejected; never the reward); a call as the agent reads it is :func:`call_text`.
"""

from __future__ import annotations

import json
import operator
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from opsgym.core.episode import StepResult
    from opsgym.core.seat import AgentView

MAX_CALLS = 3
"""Most calls one reply may make; the rest are rejected (and recorded)."""

REPLY_RULES = f"""How to reply: make 1 to {MAX_CALLS} tool calls. They run in order; when one is \
rejected, times out, is ambiguous or is not accepted, the calls after it are skipped, so check \
what it reported before going on. Calls beyond {MAX_CALLS}, unknown tools and malformed \
arguments are rejected and penalised; a reply without a call is rejected too. If you cannot \
make native tool calls, write each call on its own as \
<tool_call>{{"name": "TOOL", "arguments": {{...}}}}</tool_call>."""

_INTRO = """You are the agent in the opsgym world "{env}". Each turn you are shown what you know \
now: the reports your tools gave, which may be late, partial or wrong, as real tools are. An \
independent judge grades the episode on the true state of the system, not on the reports."""


# -- rendering ------------------------------------------------------------------------------


def schemas(episode: AgentView) -> list[dict[str, Any]]:
    """OpenAI-style function schemas of the episode's tools (generated from their models)."""
    return episode.tools


def _tool_json(tools: Sequence[dict[str, Any]] | None) -> str:
    """The schemas as JSON lines (one function each), cached: a world's schemas never change."""
    if not tools:
        return ""
    return _tool_lines(tuple(json.dumps(t["function"], separators=(",", ":")) for t in tools))


@lru_cache(maxsize=32)
def _tool_lines(lines: tuple[str, ...]) -> str:
    return "\n".join(lines)


@lru_cache(maxsize=32)
def _system(env: str, brief: str, tool_json: str) -> str:
    parts = [_INTRO.format(env=env)]
    if brief:
        parts.append(brief.strip())
    parts.append(REPLY_RULES)
    if tool_json:
        parts.append("Tools (JSON schemas, one per line):\n" + tool_json)
    return "\n\n".join(parts)


def system_text(env: str, brief: str = "", tools: Sequence[dict[str, Any]] | None = None) -> str:
    """The system message: the intro, the world's ``brief``, the reply rules and, when
    ``tools`` are given, their schemas (leave them out when the endpoint takes tools natively).
    """
    return _system(env, brief, _tool_json(tools))


_EPISODE_KEYS = ("step", "steps_left", "done", "last")
_BARE = r"(?!(?:true|false|null|(?i:inf|infinity|nan))\b)[^\W\d][\w.\-/@+%]*"
"""A string shown without quotes: it starts with a letter or ``_`` and holds only letters,
digits and ``_ . - / @ + %``, and reads as no JSON keyword or number (``inf``, ``nan``)."""
_PLAIN = re.compile(_BARE)
_QUOTED_PLAIN = re.compile(rf'"(?<=[\[{{,:]")({_BARE})"(?=[,\]}}:])')
"""A JSON string literal that is plain. In compact JSON a literal opens after ``[ { , :`` and
closes before ``, ] } :``; a quote inside a literal is escaped, so it is never taken for one."""
_ORJSON = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS
_INNER = operator.methodcaller("group", 1)  # faster than the template r"\1" before Python 3.12


@lru_cache(maxsize=16384)
def _string(text: str) -> str:
    """A string as shown: bare when plain, else JSON-quoted (cached: ids and keys repeat)."""
    return text if _PLAIN.fullmatch(text) else orjson.dumps(text).decode()


def _raw(value: Any) -> str:
    """One value on one line, before :func:`_unquote`: JSON (keys sorted, no spaces) written by
    orjson, strings already shown (:func:`_string`); a value orjson refuses is walked.
    """
    kind = type(value)
    if kind is str:
        return _string(value)
    try:
        return orjson.dumps(value, option=_ORJSON).decode()
    except TypeError:
        return _walk(value)


def _unquote(text: str) -> str:
    """Take the quotes off every plain string literal in ``text``: one pass for a whole state,
    several times faster than walking its values in Python.
    """
    return _QUOTED_PLAIN.sub(_INNER, text)


def inline(value: Any) -> str:
    """One value on one line: JSON with keys sorted, no spaces, and no quotes on plain strings
    (``{k:v,...}``, ``[a,b]``): a tokenizer would spend a token on each.
    """
    return _unquote(_raw(value))


def _walk(value: Any) -> str:
    """:func:`inline` in Python, for what orjson refuses (an int beyond 64 bits, a non-JSON
    type, shown as its ``str``).
    """
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{_key(k)}:{_walk(value[k])}" for k in sorted(value, key=str)) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(_walk(v) for v in value) + "]"
    if value is None or isinstance(value, bool | int | float):
        try:
            return orjson.dumps(value).decode()
        except TypeError:
            return json.dumps(value)
    return _string(str(value))


def _key(key: Any) -> str:
    return _string(key if type(key) is str else str(key))


def _table(rows: list[Any]) -> list[str] | None:
    """A list of records with one set of keys as a table, or ``None`` if it is not one."""
    if not rows or not all(isinstance(r, dict) and r for r in rows):
        return None
    keys = sorted(rows[0])
    if any(sorted(r) != keys for r in rows[1:]):
        return None
    head = "(" + "|".join(_key(k) for k in keys) + ")"
    return [head, *("  - " + "|".join([_raw(r[k]) for k in keys]) for r in rows)]


def _block(key: str, value: Any) -> list[str]:
    table = _table(value) if isinstance(value, list) else None
    if table is not None:
        return [f"{key} {table[0]}:", *table[1:]]
    if isinstance(value, dict) and any(isinstance(v, dict | list) for v in value.values()):
        lines = [f"{key}:"]
        for k in sorted(value):
            sub = _table(value[k]) if isinstance(value[k], list) else None
            if sub is not None:
                lines.append(f"  {_key(k)} {sub[0]}:")
                lines.extend("  " + row for row in sub[1:])
            else:
                lines.append(f"  {_key(k)}: {_raw(value[k])}")
        return lines
    return [f"{key}: {_raw(value)}"]


def call_text(name: Any, arguments: Any) -> str:
    """A call as the agent reads it: ``name {arg:value}``."""
    shown = inline(name)
    if arguments in (None, {}):
        return str(shown)
    return f"{shown} {inline(arguments)}"


def state_text(obs: dict[str, Any], results: Sequence[tuple[str, str]] | None = None) -> str:
    """The user message: the observation as compact text.

    The world's keys come first, sorted, one per line (a nested record indented beneath its key,
    a list of like records as a table); then the episode's counters; then either ``last`` (the
    last call and its report) or, when ``results`` are given, every call of the previous turn
    with what it returned (``[(call, result)]``, see :func:`call_text` and :func:`result_text`).
    """
    lines = ["State now:"]
    for key in sorted(k for k in obs if k not in _EPISODE_KEYS):
        lines.extend(_block(_key(key), obs[key]))
    counters = {k: obs[k] for k in ("step", "steps_left", "done") if k in obs}
    lines.append(", ".join(f"{k}: {_raw(v)}" for k, v in counters.items()))
    if not results and "last" in obs:
        lines.append(f"last: {_raw(obs['last'])}")
    text = _unquote("\n".join(lines))
    if results:
        text += "\nYour last turn:\n" + "\n".join(f"- {call} -> {said}" for call, said in results)
    return text


def render_observation(
    env: str,
    brief: str,
    obs: dict[str, Any],
    tools: Sequence[dict[str, Any]] | None = None,
    results: Sequence[tuple[str, str]] | None = None,
) -> list[dict[str, str]]:
    """``[system, user]`` messages from an observation: the generic renderer itself.

    Args:
        env: The environment's name.
        brief: Its ``EnvSpec.brief``.
        obs: ``Episode.observe()``.
        tools: Schemas to list in the system message; ``None`` when they travel natively.
        results: The previous turn's calls and what each returned (see :func:`state_text`).
    """
    return [
        {"role": "system", "content": system_text(env, brief, tools)},
        {"role": "user", "content": state_text(obs, results)},
    ]


def render_messages(
    episode: AgentView,
    *,
    tools_in_prompt: bool = True,
    results: Sequence[tuple[str, str]] | None = None,
) -> list[dict[str, str]]:
    """``[system, user]`` chat messages for the agent now: built from ``observe()`` only.

    ``tools_in_prompt=False`` leaves the schemas out of the system message, for endpoints that
    take them as the request's ``tools``.
    """
    return render_observation(
        episode.env,
        episode.spec.brief,
        episode.observe(),
        episode.tools if tools_in_prompt else None,
        results,
    )


def render_text(episode: AgentView) -> str:
    """The prompt as one string, tools included: the prompt of every world whose
    ``EnvSpec.prompt`` is ``None`` (all of them), which the audit's leak test compares across
    hidden facts.
    """
    return "\n\n".join(m["content"] for m in render_messages(episode))


def result_text(result: StepResult) -> str:
    """What a tool call returns to the model: the report, or why the call was rejected.

    Never the reward: a model is told what its tools said, as an operator would be.
    """
    if result.rejected is not None:
        return json.dumps({"rejected": result.rejected}, separators=(",", ":"))
    return json.dumps(result.report, sort_keys=True, separators=(",", ":"))
