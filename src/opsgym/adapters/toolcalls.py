"""The tool-calling face: what an LLM agent is shown, and how its replies become calls.

Every LLM face (the LLM agent, MCP, TRL, Inspect) meets an episode through this module, and no
function here knows a particular world.

**Rendering.** :func:`render_messages` gives ``[system, user]`` chat messages. The system message
is the world's brief (``EnvSpec.brief``: the job, in the world's words), the reply rules (1 to
:data:`MAX_CALLS` calls a turn, how a batch stops) and, unless the serving stack takes tools
natively, the tool schemas (``Episode.tools``, generated from each tool's pydantic model). The
user message is :func:`state_text` of ``Episode.observe()``: a lossless, compact text form of the
observation and nothing else, so the prompt carries exactly what the agent has been told (the
observation is what the leak audit proves free of the truth and of the family). It is stable:
equal observations give the same bytes (keys are sorted at every level; no clock, no set order).
Compact: no quotes around keys and plain strings, no space after ``:`` and ``,``, and a list of
records with one set of keys is a table (the keys once, then a row per record). Over the oracle's
``mixed`` episodes it is 8-22% shorter than compact JSON of the same observations in characters,
and in :func:`count_tokens` 16% fewer for oversight (its lists of proposals and workers), about
the same for fleet and release (-1.5%, +2%: their values are mostly numbers and logs).

**Parsing.** :func:`parse_reply` reads a model's reply in the formats models emit: OpenAI
``tool_calls`` (message objects or dicts), calls written in the text as
``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` (Qwen and Hermes chat templates; any
number of blocks), or a reply that is one bare JSON call object (or a list of them: Llama's
``{"name": ..., "parameters": ...}``, Mistral's ``[TOOL_CALLS][...]``), optionally in one code
fence. Reasoning in ``<think>...</think>`` is dropped first: a call drafted while
thinking is not a call. Anything else is free text. Nothing is guessed: prose around a JSON
object makes it prose, a call without a name or with arguments that are not a JSON object is a
malformed call.

**Running a turn.** :func:`run_turn` carries a parsed reply out on the episode: the first
:data:`MAX_CALLS` calls in order, through ``Episode.step`` (which validates the name against the
episode's tools, the arguments against the tool's model, and the preconditions); the batch stops
at the first unexpected result (:func:`unexpected`: rejected, a timeout or ambiguous report, a
completion not accepted, the episode over) and the calls after it are recorded as skipped. What
cannot run is still stepped, so that the world's rejection path records it and charges
``invalid``, but always in a form the episode rejects: a reply without a call, or a call without
a name, is the step ``(None, {"error": ..., "text": ...})``; an unknown name (an injected
``delete_cluster``) is stepped under that raw name; arguments that are not a JSON object are
passed as the raw string. Calls past :data:`MAX_CALLS` are rejected together in one such step.
Nothing outside the episode's tools can run.

**Tokens.** A turn's tokens are the model's output (completion tokens, reasoning included): the
provider's ``usage.completion_tokens`` when it reports usage (``token_source="provider"``), else
:func:`count_tokens` of the reply (``"estimate"``). The turn's first step is charged them, the
others 0, so the episode's total is the model's. The episode is built (or, before its first
step, marked) with that source, so the record says where the counts came from.
"""

from __future__ import annotations

import json
import math
import operator
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from opsgym.core.episode import Episode, StepResult

MAX_CALLS = 3
"""Most calls one reply may make; the rest are rejected (and recorded)."""

TEXT_EXCERPT = 500
"""Characters of a reply's text kept in a rejected step's arguments (the transcript keeps all)."""

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


def schemas(episode: Episode) -> list[dict[str, Any]]:
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


def _inline(value: Any) -> str:
    """One value on one line: JSON with keys sorted, no spaces, and no quotes on plain strings
    (``{k:v,...}``, ``[a,b]``): a tokenizer would spend a token on each.
    """
    return _unquote(_raw(value))


def _walk(value: Any) -> str:
    """:func:`_inline` in Python, for what orjson refuses (an int beyond 64 bits, a non-JSON
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
    shown = _inline(name)
    if arguments in (None, {}):
        return str(shown)
    return f"{shown} {_inline(arguments)}"


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
    episode: Episode,
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


def render_text(episode: Episode) -> str:
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


# -- parsing --------------------------------------------------------------------------------


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
        calls: Every call found, in order (possibly more than :data:`MAX_CALLS`).
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
        return raw, None
    if not isinstance(raw, str):
        return raw, f"arguments must be a JSON object, got {type(raw).__name__}"
    if not raw.strip():
        return {}, None  # some servers send "" for a tool without arguments
    try:
        value = json.loads(raw)
    except ValueError as exc:
        return raw, f"arguments are not valid JSON ({exc.msg} at {exc.pos})"
    except RecursionError:  # a reply of nested brackets: rejected, never the run's end
        return raw[:200], "arguments nested too deep to decode"
    if not isinstance(value, dict):
        return raw, f"arguments must be a JSON object, got {type(value).__name__}"
    return value, None


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
    except ValueError as exc:
        return [ParsedCall(None, text, source, error=f"not valid JSON ({exc.msg} at {exc.pos})")]
    except RecursionError:
        return [ParsedCall(None, text[:200], source, error="JSON nested too deep to decode")]
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


# -- tokens ---------------------------------------------------------------------------------

_PRETOKEN = re.compile(
    r"'(?i:[sdmt]|ll|ve|re)"  # English contractions
    r"|(?:[^\r\n\w]|_)?[^\W\d_]+"  # a word, with one leading space or punctuation mark
    r"|\d{1,3}"  # digits, three at most
    r"| ?(?:[^\s\w]|_)+[\r\n]*"  # punctuation
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"  # newlines and other whitespace
)
CHARS_PER_TOKEN = 6
"""A piece counts one token per this many characters begun (whitespace alone counts one)."""


def count_tokens(text: str) -> int:
    """An estimate of the tokens in ``text``, deterministic and without a vocabulary.

    The text is cut as GPT-4's tokenizer (cl100k) cuts it before its byte-pair merges, by the
    same pattern written for Python's ``re`` (contractions, words with their leading space,
    digits in threes, punctuation runs, whitespace); each piece counts one token per
    :data:`CHARS_PER_TOKEN` characters begun, since long rare words split into several. No
    vocabulary is loaded, so nothing is downloaded and the count is the same everywhere; it is
    an estimate, used only when the endpoint reports no usage (the record's token source says
    ``estimate`` then).
    """
    total = 0
    for piece in _PRETOKEN.findall(text):
        core = piece.strip()
        total += max(1, math.ceil(len(core) / CHARS_PER_TOKEN)) if core else 1
    return total


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


# -- running a turn -------------------------------------------------------------------------

_TIMEOUT_STATUSES = frozenset({"timeout", "timed_out"})


def unexpected(result: StepResult) -> str | None:
    """Why a batch must stop after ``result``, or ``None`` to go on.

    Rejected; a report that says it is not ``accepted``, ``ambiguous`` or timed out (``status``
    ``timeout``, or ``timeout: true``); the episode over.
    """
    if result.rejected is not None:
        return "rejected"
    report = result.report
    if report.get("accepted") is False:
        return "not accepted"
    if report.get("ambiguous") is True:
        return "ambiguous"
    if report.get("status") in _TIMEOUT_STATUSES or report.get("timeout") is True:
        return "timed out"
    if result.done:
        return "the episode ended"
    return None


@dataclass
class TurnOutcome:
    """What one reply did to the episode.

    Attributes:
        calls: Per call found: its name and arguments, ``status`` (``ran``, ``rejected``,
            ``skipped`` or ``extra``), the ``step`` that recorded it, and ``reason`` (why it was
            rejected or skipped).
        results: ``[(call, result)]`` for the next prompt (see :func:`state_text`).
        stopped: Why the batch stopped early, or ``None``.
        steps: The episode steps this turn made.
    """

    calls: list[dict[str, Any]] = field(default_factory=list)
    results: list[tuple[str, str]] = field(default_factory=list)
    stopped: str | None = None
    steps: list[int] = field(default_factory=list)


def _excerpt(text: str) -> str:
    return text if len(text) <= TEXT_EXCERPT else text[: TEXT_EXCERPT - 1] + "…"


def run_turn(
    episode: Episode,
    reply: ParsedReply,
    tokens: int | None,
    *,
    max_calls: int = MAX_CALLS,
    on_result: Any = None,
) -> TurnOutcome:
    """Carry ``reply`` out on ``episode`` (see the module docstring for the rules).

    Args:
        episode: A running episode.
        reply: The parsed reply.
        tokens: The turn's tokens, charged to its first step (``None``: the world's fixed cost).
        max_calls: Calls a turn may make.
        on_result: Called with each step's ``StepResult`` (a scripted planner's feedback).
    """
    out = TurnOutcome()
    charge = [tokens]

    def step(name: Any, args: Any) -> StepResult:
        cost, charge[0] = charge[0], (0 if tokens is not None else None)
        result = episode.step(name, args, tokens=cost)
        out.steps.append(episode.steps)
        if on_result is not None:
            on_result(result)
        return result

    if not reply.calls:
        text = reply.text or reply.reasoning
        reason = "the reply made no tool call" + ("" if text else " and was empty")
        step(None, {"error": "no tool call", "text": _excerpt(text)})
        out.calls.append(
            {"name": None, "status": "rejected", "step": episode.steps, "reason": reason}
        )
        out.results.append(("(no call)", json.dumps({"rejected": reason})))
        out.stopped = "no call"
        return out
    batch, extra = reply.calls[:max_calls], reply.calls[max_calls:]
    for i, call in enumerate(batch):
        entry: dict[str, Any] = {"name": call.name, "arguments": call.arguments}
        if out.stopped is not None or episode.done:
            entry.update(status="skipped", step=None, reason=out.stopped or "the episode ended")
            out.calls.append(entry)
            continue
        if call.error is not None and (
            not isinstance(call.name, str) or isinstance(call.arguments, dict)
        ):
            args = {"error": call.error, "text": _excerpt(_inline(call.arguments))}
            result = step(None, args)
            said = json.dumps({"rejected": call.error})
        else:
            # A named call goes to the episode under its raw name: the episode runs only its
            # own tools, and refuses arguments that are not an object (malformed ones are
            # passed as their raw text).
            result = step(call.name, call.arguments)
            said = result_text(result)
        why = unexpected(result)
        entry.update(
            status="rejected" if result.rejected is not None else "ran",
            step=episode.steps,
            reason=call.error or result.rejected,
        )
        out.calls.append(entry)
        out.results.append((call_text(call.name, call.arguments), said))
        if why is not None and i + 1 < len(batch):
            out.stopped = f"call {i + 1} {why}"
    if extra:
        names = [c.name for c in extra]
        for call in extra:
            out.calls.append(
                {
                    "name": call.name,
                    "arguments": call.arguments,
                    "status": "extra",
                    "step": None,
                    "reason": f"more than {max_calls} calls in one reply",
                }
            )
        if not episode.done:
            reason = f"more than {max_calls} calls in one reply; dropped {len(extra)}"
            step(None, {"error": reason, "dropped": [_inline(n) for n in names]})
            for entry in out.calls[-len(extra) :]:
                entry["step"] = episode.steps
            out.results.append(("(extra calls)", json.dumps({"rejected": reason})))
    return out
